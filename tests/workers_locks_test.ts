/**
 * `moonbase serve --workers 2` on SQLite: a write transaction held longer
 * than the busy timeout (5 s) by one isolate (here a record hook that waits
 * 6 s) makes a write of the other isolate that waited all that time answer
 * 503 with Retry-After — never a 500, never "database is locked" — and the
 * writes after it succeed once the lock is free. SQLite only: PostgreSQL
 * has row locks, no database write lock.
 *
 * @module
 */

import { assert, assertEquals } from "./_server.ts";
import { inLanes, OPEN_RULES, startCluster } from "./_workers_fixtures.ts";
import { pause } from "./_wait.ts";

const HOOK = `
export default (app) => {
  app.onRecord("beforeCreate", "slow", async () => {
    await new Promise((r) => setTimeout(r, 6000));
  });
};
`;

Deno.test({
  name: "workers (sqlite): a write lock held past the busy timeout → 503",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const c = await startCluster("sqlite", { scripts: { "slow.js": HOOK } });
    try {
      for (const name of ["slow", "fast"]) {
        const r = await c.call("POST", "/api/v1/schemas", {
          token: c.admin,
          body: {
            name,
            type: "base",
            fields: [{ name: "n", type: "int" }],
            rules: OPEN_RULES,
          },
        });
        assertEquals(r.status, 201, r.text);
      }
      const slow = c.call("POST", "/api/v1/entities/slow", { body: { n: 1 } });
      await pause(300);
      const fast = await inLanes(
        Array.from({ length: 6 }),
        6,
        () => c.call("POST", "/api/v1/entities/fast", { body: { n: 2 } }),
      );
      assertEquals((await slow).status, 201, "the slow write");
      for (const r of fast) {
        assert(r.status === 201 || r.status === 503, `${r.status} ${r.text}`);
        assert(!/locked/i.test(r.text), r.text);
      }
      assert(fast.some((r) => r.status === 201), "writes after the lock");
      const busy = fast.filter((r) => r.status === 503);
      for (const r of busy) {
        assertEquals(
          r.error,
          "Cannot save now: another write holds the database; try again",
        );
      }
    } finally {
      await c.kill();
    }
  },
});
