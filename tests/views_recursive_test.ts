/**
 * SQLite cannot interrupt a running statement, so a view whose recursive CTE
 * never ends would block the whole server on its first read: SQLite views may
 * not recurse (400 when saved). PostgreSQL allows them: its statement timeout
 * ends a runaway read (see statement_timeout_test.ts).
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { allRules } from "./_scenarios.ts";

const ENDLESS =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id FROM c";
const BOUNDED =
  "WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x AS id FROM c";

forEachDb("views: recursive CTEs", async (t, db) => {
  const s = await startServer(db, { statementTimeout: 2 });
  try {
    const token = await s.adminToken();
    const create = (name: string, view_query: string) =>
      s.request("POST", "/api/v1/schemas", {
        token,
        body: { name, type: "view", view_query, rules: allRules("public") },
      });
    await t.step("an endless recursion", async () => {
      const r = await create("endless", ENDLESS);
      if (db === "sqlite") {
        assert.equal(r.status, 400, r.text);
        assert.match(r.error, /recursive CTE/);
      } else {
        assert.equal(r.status, 201, r.text);
        const read = await s.request("GET", "/api/v1/entities/endless?limit=1");
        assert.equal(read.status, 503, read.text);
      }
      const health = await s.request("GET", "/api/v1/health");
      assert.equal(health.status, 200);
    });
    await t.step("a bounded one (SQLite: RECURSIVE left out)", async () => {
      const r = await create(
        "bounded",
        db === "sqlite" ? BOUNDED : BOUNDED.replace("WITH", "WITH RECURSIVE"),
      );
      assert.equal(r.status, db === "sqlite" ? 400 : 201, r.text);
    });
  } finally {
    await s.close();
  }
});
