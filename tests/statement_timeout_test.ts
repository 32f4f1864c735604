/**
 * PostgreSQL: a runaway query (here a view over a four-way cross join) is
 * cancelled by the statement timeout and answered with a clear 503, the
 * connection is free again, and schema changes are exempt.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DATABASES, insertSeries, padded, startServer } from "./_server.ts";
import { allRules, createEntity } from "./_scenarios.ts";
import { within } from "./_wait.ts";

Deno.test({
  name: "statement timeout: a runaway view read answers 503 [postgres]",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const s = await startServer("postgres", { statementTimeout: 1 });
    try {
      await createEntity(s, {
        name: "cells",
        fields: [{ name: "n", type: "int" }],
      });
      await insertSeries(s, "cells", 300, { id: padded("c", 6), n: "i" });
      await createEntity(s, {
        name: "huge",
        type: "view",
        view_query:
          `SELECT a.id || b.id || c.id || d.id AS id FROM cells a, cells b, cells c, cells d`,
        rules: allRules("public"),
      });

      await t.step("the read is cancelled: 503, quickly", async () => {
        // 300^4 rows: only the statement timeout can answer this; the
        // deadline only turns a hang into a failure.
        const r = await within(
          "the cancelled read",
          60_000,
          s.request("GET", "/api/v1/entities/huge?limit=1"),
        );
        assert.equal(r.status, 503, r.text);
        assert.match(r.error, /^Cannot answer in time: /);
        assert.ok(r.headers.get("retry-after"));
      });

      await t.step("the pool keeps serving", async () => {
        const rs = await Promise.all(
          Array.from({ length: 6 }, () => s.request("GET", "/api/v1/health")),
        );
        assert.deepEqual(rs.map((r) => r.status), [
          200,
          200,
          200,
          200,
          200,
          200,
        ]);
      });

      await t.step("a schema change is not subject to it", async () => {
        const r = await s.request("PATCH", "/api/v1/schemas/cells", {
          token: await s.adminToken(),
          body: { fields: [{ name: "m", type: "int", default: 7 }] },
        });
        assert.equal(r.status, 200, r.text);
      });
    } finally {
      await s.close();
    }
  },
});
