/**
 * More attacks on text functions and full-text search (after
 * attack_search_test.ts): what runs them outside Moonbase's own sessions.
 */

import assert from "node:assert/strict";
import { DATABASES, startServer } from "./_server.ts";
import { createEntity, createRecord } from "./_scenarios.ts";

Deno.test({
  name:
    "search attack: fold indexes survive a session with only pg_catalog on its search_path [postgres]",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // pg_restore (search_path '') and PostgreSQL 17's maintenance (ANALYZE,
    // REINDEX, autovacuum: pg_catalog, pg_temp) evaluate index expressions
    // without the schema Moonbase's functions live in.
    const s = await startServer("postgres");
    try {
      await createEntity(s, {
        name: "docs",
        fields: [{ name: "title", type: "string", searchable: true }],
        indexes: [{ fields: ["fold(title)"] }],
      });
      await createRecord(s, "docs", { title: "Émile" });
      const [idx] = await s.app.storage.query(
        `SELECT schemaname || '.' || indexname AS name FROM pg_indexes WHERE indexdef LIKE '%mb_fold%'`,
      );
      assert.ok(idx, "the fold index exists");
      const [{ t }] = await s.app.storage.query(
        `SELECT current_schema() || '.docs' AS t`,
      );
      for (
        const stmt of [
          `REINDEX INDEX ${idx.name}`,
          `ANALYZE ${t}`,
          `SELECT ${
            String(t).split(".")[0]
          }.mb_search_vector('Zoé Émile') AS v`,
        ]
      ) {
        await s.app.storage.transaction(async (tx) => {
          await tx.exec(`SET LOCAL search_path = pg_catalog, pg_temp`);
          await tx.exec(stmt);
        });
      }
      const r = await s.request(
        "GET",
        `/api/v1/entities/docs?filter=${
          encodeURIComponent('fold(title) == fold("EMILE")')
        }`,
        { token: await s.adminToken() },
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.items.length, 1);
    } finally {
      await s.close();
    }
  },
});
