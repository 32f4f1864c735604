/**
 * Equality and range filters on indexed fields compile to SQL the database
 * answers with the field's index (checked with EXPLAIN on both databases).
 */
import { assert, assertStatus, forEachDb, startServer } from "./_server.ts";
import { ExpressionRules } from "../lib/records/rule_engine.ts";
import { GUEST } from "../lib/caller.ts";
import { tableOf } from "../lib/schema/ddl.ts";

forEachDb("filters: indexed fields use their index", async (_t, db) => {
  const s = await startServer(db);
  try {
    const token = await s.adminToken();
    const r = await s.request("POST", "/api/v1/schemas", {
      token,
      body: {
        name: "events",
        type: "base",
        fields: [
          { name: "n", type: "int", index: true },
          { name: "kind", type: "string", index: true },
          { name: "note", type: "string" },
        ],
      },
    });
    assertStatus(r, 201);
    const entity = s.app.schemas.get("events")!;
    for (let i = 0; i < 300; i++) {
      await entity.create({ n: i, kind: `k${i % 7}`, note: "x" });
    }
    if (db === "postgres") {
      await s.app.storage.exec(`ANALYZE ${tableOf("events")}`);
    }
    const rules = new ExpressionRules();
    const req = { body: {}, query: {}, method: "GET" };
    for (const filter of ['kind == "k3"', "n >= 10 && n < 20", "n == 5"]) {
      const hooks = await rules.filter(entity, filter, GUEST, req);
      assert(hooks.where, `${filter} compiles to SQL`);
      const explain = db === "sqlite" ? "EXPLAIN QUERY PLAN" : "EXPLAIN";
      const where = hooks.where;
      // On PostgreSQL the planner may prefer a scan of a small table: forbid it in this transaction.
      const plan = await s.app.storage.transaction(async (tx) => {
        if (db === "postgres") await tx.exec("SET LOCAL enable_seqscan = off");
        return await tx.query(
          `${explain} SELECT "id" FROM ${tableOf("events")} WHERE ${where.sql}`,
          where.params,
        );
      });
      const text = JSON.stringify(plan);
      assert(
        /USING INDEX|Index Scan|Bitmap Index Scan|Index Only Scan/i.test(text),
        `${filter}: ${text}`,
      );
    }
  } finally {
    await s.close();
  }
});
