/**
 * PostgreSQL's text functions (lib/db/pg_text.ts) are measured against the
 * server once and the measurement kept in `mb_meta` (`text_functions`): a
 * later start on the same runtime and server builds them from it without
 * measuring again; another runtime or server, or a damaged entry, measures
 * again.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DATABASES } from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { PostgresStorage } from "../lib/db/postgres.ts";
import { ensureSystemTables } from "../lib/schema/system.ts";
import { forgetTextFunctions } from "../lib/db/pg_text.ts";
import { textVersion } from "../lib/rules/text_fold.ts";

Deno.test({
  name: "text functions: measured once, then built from the stored measurement",
  ignore: !DATABASES.includes("postgres"),
  fn: async (t) => {
    const s = new PostgresStorage(
      await (await startPostgres()).createDatabase(),
      1,
    );
    await s.connect();
    const stored = async () => {
      const [row] = await s.query(
        `SELECT "value" FROM "mb_meta" WHERE "key" = 'text_functions'`,
      );
      return row ? JSON.parse(String(row.value)) : undefined;
    };
    const store = (value: unknown) =>
      s.run(
        `UPDATE "mb_meta" SET "value" = ? WHERE "key" = 'text_functions'`,
        [typeof value === "string" ? value : JSON.stringify(value)],
      );
    const upper = async (c: string) =>
      String((await s.query(`SELECT mb_upper(?) AS u`, [c]))[0].u);
    // Each start below is another process's: nothing kept in this isolate.
    const start = async () => {
      forgetTextFunctions();
      await ensureSystemTables(s);
    };
    try {
      await t.step("a first start measures and stores", async () => {
        await start();
        const m = await stored();
        assert.ok(m, "no text_functions in mb_meta");
        assert.ok(m.key.startsWith(`${textVersion()}|`), m.key);
        assert.ok(m.marks.length > 100 && m.words.length > 100);
        assert.equal(await upper("a"), "A");
      });

      await t.step(
        "a later start builds them from what is stored",
        async () => {
          // A stored fix no measurement would find ("1" upper-cased to "Q",
          // applied after the mapping): only the stored path uses it.
          const m = await stored();
          await store({ ...m, upper: [...m.upper, ["1", "Q"]] });
          await start();
          assert.equal(await upper("1"), "Q");
          assert.equal(await upper("b"), "B");
        },
      );

      await t.step(
        "another runtime's measurement is measured again",
        async () => {
          // Still holding the made-up fix of the step before.
          const m = await stored();
          assert.equal(await upper("1"), "Q");
          await store({ ...m, key: `unicode 1.0|${m.key.split("|")[1]}|0` });
          await start();
          assert.equal(await upper("1"), "1");
          const again = await stored();
          assert.equal(again.key, m.key);
          assert.deepEqual(
            again.upper.filter(([c]: string[]) => c === "1"),
            [],
          );
        },
      );

      await t.step("a damaged entry is measured again", async () => {
        const m = await stored();
        await store({ ...m, upper: [...m.upper, ["1", "Q"]] });
        await start();
        assert.equal(await upper("1"), "Q");
        await store("{not json");
        await start();
        assert.equal(await upper("1"), "1");
        assert.equal((await stored()).key, m.key);
      });
    } finally {
      await s.close();
    }
  },
});
