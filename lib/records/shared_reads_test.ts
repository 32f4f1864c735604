/**
 * Shared reads by id (PostgreSQL): reads called while one is out share the
 * next statement, and each still sees every change committed before it was
 * called; on SQLite each read is the entity's own.
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "../../tests/_server.ts";
import { startPostgres } from "../../tests/_pg.ts";
import { createApp } from "../../mod.ts";
import { internalApp } from "../internal_app.ts";
import type { Row, SqlValue, Storage } from "../db/storage.ts";
import { SharedReads } from "./shared_reads.ts";

/**
 * `base` with the statements of `query` counted, and their answers (got
 * from the database at once) handed back only once `release` is called.
 */
function watched(base: Storage): {
  store: Storage;
  sent: string[];
  hold(): void;
  release(): void;
} {
  const sent: string[] = [];
  let held: PromiseWithResolvers<void> | undefined;
  const query = async (sql: string, params?: readonly SqlValue[]) => {
    sent.push(sql);
    const gate = held?.promise;
    const rows: Row[] = await base.query(sql, params);
    await gate;
    return rows;
  };
  const store = new Proxy(base, {
    get(target, prop) {
      if (prop === "query") return query;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    store,
    sent,
    hold: () => held = Promise.withResolvers<void>(),
    release: () => held?.resolve(),
  };
}

for (const db of DATABASES) {
  Deno.test({
    name:
      `shared reads: concurrent reads share statements, none misses an earlier change [${db}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      const dataDir = await Deno.makeTempDir({ prefix: "mb_shared_reads_" });
      const app = await createApp({
        dataDir,
        quiet: true,
        jwtSecret: "shared-reads-secret-0123456789-abcdefghijklmnop",
        ...(db === "postgres"
          ? {
            database: "PSQL",
            connection: await (await startPostgres()).createDatabase(),
          }
          : {}),
      });
      try {
        const things = await app.entities.create({
          name: "things",
          type: "base",
          fields: [{ name: "title", type: "string" }],
        });
        const a = await things.create({ title: "a" });
        const b = await things.create({ title: "b" });
        const w = watched(internalApp(app).storage);
        const reads = new SharedReads(w.store);
        const missing = "01a20000-0000-7000-8000-000000000000";

        await t.step("each caller gets its own record, or none", async () => {
          w.hold();
          const ids = [a.id, b.id, missing];
          const got = Array.from(
            { length: 30 },
            (_, i) => reads.read(things, String(ids[i % 3])),
          );
          w.release();
          const out = await Promise.all(got);
          out.forEach((r, i) =>
            assertEquals(r?.title, ["a", "b", undefined][i % 3])
          );
          // Two statements on PostgreSQL (the first read, sent at once; then
          // the 29 asked meanwhile); on SQLite each read is the entity's own.
          assertEquals(w.sent.length, db === "postgres" ? 2 : 0);
          w.sent.length = 0;
        });

        await t.step(
          "a read called after a delete misses the record, though a read sent before it is out",
          async () => {
            w.hold();
            const before = reads.read(things, String(a.id));
            await things.remove(String(a.id));
            const after = reads.read(things, String(a.id));
            w.release();
            await before; // sent before the delete: either answer is right
            assertEquals(await after, undefined);
            assert(
              (await reads.read(things, String(b.id)))?.title === "b",
              "the other record is still read",
            );
          },
        );
      } finally {
        await app.close();
        await Deno.remove(dataDir, { recursive: true });
      }
    },
  });
}
