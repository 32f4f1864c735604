/**
 * The list benchmark's filter + sort (`n >= 2000 && n < 4000 && tag == "t3"`,
 * `sort=-n`, 10 000 items) with the list's own SQL (its column list,
 * compiled filter and ORDER BY). Without a composite index SQLite takes
 * tag's index and sorts all 1 000 t3 rows ("USE TEMP B-TREE FOR ORDER BY");
 * with (tag, n) it walks that index backwards and sorts only ties of `n`
 * for the `id` tiebreak ("… FOR LAST TERM OF ORDER BY"). PostgreSQL prefers
 * `n`'s own index with an incremental sort; it can use (tag, n) the same way.
 */

import assert from "node:assert/strict";
import { forEachDb, insertSeries, padded, startServer } from "./_server.ts";
import { asAdmin, createEntity } from "./_scenarios.ts";
import { ExpressionRules } from "../lib/records/rule_engine.ts";
import { GUEST } from "../lib/caller.ts";
import { selectList } from "../lib/records/crud.ts";
import { orderBy, orderKeys } from "../lib/records/list_query.ts";
import { tableOf } from "../lib/schema/ddl.ts";
import type { TestServer } from "./_server.ts";

const FILTER = 'n >= 2000 && n < 4000 && tag == "t3"';

/** The list's statement for FILTER sorted by -n, one page of 50 (+1). */
async function listSql(
  s: TestServer,
): Promise<{ sql: string; params: unknown[] }> {
  const entity = s.app.schemas.get("items")!;
  const req = { body: {}, query: {}, method: "GET" };
  const where =
    (await new ExpressionRules().filter(entity, FILTER, GUEST, req)).where;
  assert.ok(where, "the filter compiles to SQL");
  const keys = orderKeys([{ field: "n", desc: true }]);
  return {
    sql: `SELECT ${selectList(entity.schema)} FROM ${
      tableOf("items")
    } WHERE (${where.sql}) ORDER BY ${orderBy(keys).sql} LIMIT 51`,
    params: where.params,
  };
}

function fieldNamed(s: TestServer, name: string): { id: string } {
  return s.app.schemas.get("items")!.schema.fields.find((f) =>
    f.name === name
  )!;
}

/** Thrown to roll a look-only transaction back. */
class Rollback extends Error {}

async function plan(s: TestServer): Promise<string> {
  const { sql, params } = await listSql(s);
  if (s.db === "sqlite") {
    const rows = await s.app.storage.query(
      `EXPLAIN QUERY PLAN ${sql}`,
      params as string[],
    );
    return rows.map((r) => String(r.detail)).join("\n");
  }
  const rows = await s.app.storage.query(
    `EXPLAIN ${sql}`,
    params as string[],
  );
  return rows.map((r) => String(r["QUERY PLAN"])).join("\n");
}

forEachDb("indexes: the bench's filter + sort uses (tag, n)", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await createEntity(s, {
      name: "items",
      fields: [
        { name: "title", type: "string", required: true },
        { name: "n", type: "int", index: true },
        { name: "tag", type: "string", index: true },
      ],
    });
    await insertSeries(
      s,
      "items",
      10_000,
      {
        id: padded("r", 8),
        title: "'item ' || i",
        n: "i",
        tag: "'t' || (i % 10)",
      },
      [],
      0,
    );
    if (db === "postgres") await s.app.storage.exec("ANALYZE items");
    const url = `entities/items?filter=${encodeURIComponent(FILTER)}&sort=-n`;
    const before = await a.get(url);
    assert.equal(before.status, 200, before.text);
    await t.step("without it: the single-field index and a sort", async () => {
      const text = await plan(s);
      if (db === "sqlite") {
        assert.match(text, /USE TEMP B-TREE FOR ORDER BY/, text);
      }
    });
    // The schema the bench should declare: tag's own index is the
    // composite's prefix, so it goes.
    const tag = fieldNamed(s, "tag");
    const r = await a.patch("schemas/items", {
      fields: [{ id: tag.id, index: false }],
      indexes: [{ fields: ["tag", "n"] }],
    });
    assert.equal(r.status, 200, r.text);
    const idx = `mbx_${r.data.indexes[0].id}`;
    await t.step(
      "with it: the composite index, no sort of the range",
      async () => {
        if (db === "sqlite") {
          // `n >= 2000` excludes NULL, so the compiled upper bound is a plain
          // `"n" < ?`: SQLite seeks (tag, 2000 < n < 4000) on both sides;
          // the only sort left orders ties of n by id.
          const lines = (await plan(s)).split("\n");
          assert.equal(lines.length, 2, lines.join("\n"));
          assert.match(
            lines[0],
            new RegExp(
              `^SEARCH items USING INDEX ${idx} \\(tag=\\? AND n>\\? AND n<\\?\\)`,
            ),
          );
          assert.match(
            lines[1],
            /^USE TEMP B-TREE FOR (LAST TERM|RIGHT PART) OF ORDER BY$/,
          );
          return;
        }
        // PostgreSQL prefers n's own index here (its rows are in heap order, so
        // the planner costs it cheaper); without that index it takes ours.
        await s.app.storage.transaction(async (tx) => {
          const n = fieldNamed(s, "n");
          await tx.exec(`DROP INDEX "mbr_${n.id}"`);
          const { sql, params } = await listSql(s);
          const rows = await tx.query(`EXPLAIN ${sql}`, params as string[]);
          const text = rows.map((r) => String(r["QUERY PLAN"])).join("\n");
          assert.match(
            text,
            new RegExp(`Index Scan Backward using ${idx}`),
            text,
          );
          assert.match(
            text,
            /Index Cond: .*\(tag = 't3'::text\) AND .*\(n >= '2000'::bigint\)/,
            text,
          );
          assert.match(text, /Presorted Key: n\n/, text);
          throw new Rollback();
        }).catch((err) => {
          if (!(err instanceof Rollback)) throw err;
        });
      },
    );
    await t.step(
      "PostgreSQL: the filtered list is planned for its values",
      async () => {
        if (db !== "postgres") return;
        // A prepared statement's generic plan (PostgreSQL's choice from its
        // sixth call) guesses the two-sided range at 0.5% of the rows: it
        // reads the whole range of n's own index (200 t3 rows out of 2 000)
        // and sorts them. Planned for the values, it stops after the page.
        const { sql, params } = await listSql(s);
        let n = 0;
        const numbered = sql.replace(/\?/g, () => `$${++n}`);
        const values = params.map((v) =>
          typeof v === "string" ? `'${v}'` : String(v)
        ).join(", ");
        const scanned = async (mode: string) =>
          await s.app.storage.transaction(async (tx) => {
            await tx.exec(`SET LOCAL plan_cache_mode = ${mode}`);
            await tx.exec(`PREPARE mb_plan_test AS ${numbered}`);
            const rows = await tx.query(
              `EXPLAIN (ANALYZE, TIMING OFF) EXECUTE mb_plan_test(${values})`,
            );
            await tx.exec("DEALLOCATE mb_plan_test");
            const text = rows.map((r) => String(r["QUERY PLAN"])).join("\n");
            const scan = /Index Scan[^\n]*actual rows=(\d+)/.exec(text);
            assert.ok(scan, text);
            return { rows: Number(scan[1]), text };
          });
        const generic = await scanned("force_generic_plan");
        const custom = await scanned("force_custom_plan");
        assert.equal(generic.rows, 200, generic.text);
        assert.ok(custom.rows <= 60, custom.text);
        // The list's own statement goes to the pool's custom-plan
        // connections; a list without a filter does not.
        const store = s.app.storage;
        const original = store.queryCustomPlan!;
        const planned: string[] = [];
        store.queryCustomPlan = (text, args) => {
          planned.push(text);
          return original.call(store, text, args);
        };
        try {
          assert.equal((await a.get(url)).status, 200);
          assert.equal((await a.get("entities/items?sort=-n")).status, 200);
        } finally {
          store.queryCustomPlan = original;
        }
        assert.equal(planned.length, 1, planned.join("\n"));
        assert.match(planned[0], /ORDER BY "n" DESC NULLS LAST/);
      },
    );
    await t.step("the page is the same", async () => {
      const after = await a.get(url);
      assert.equal(after.status, 200, after.text);
      assert.deepEqual(after.data.items, before.data.items);
      const ns = after.data.items.map((i: { n: number }) => i.n);
      assert.equal(ns[0], 3993);
      assert.equal(ns.length, 50);
    });
  } finally {
    await s.close();
  }
});
