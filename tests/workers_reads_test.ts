/**
 * `serve --workers 2`: a client reads its own writes whichever isolate
 * answers, while both isolates are kept busy with reads (on SQLite the
 * reads of a turn share one read transaction: it must never hide a write
 * that was answered before the read was sent).
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "./_server.ts";
import {
  inLanes,
  OPEN_RULES,
  startCluster,
  workersOf,
} from "./_workers_fixtures.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `workers reads (${db}): each write is seen by the next read`,
    async fn() {
      const c = await startCluster(db);
      try {
        const made = await c.call("POST", "/api/v1/schemas", {
          token: c.admin,
          body: {
            name: "counters",
            type: "base",
            fields: [{ name: "n", type: "int" }],
            rules: OPEN_RULES,
          },
        });
        assertEquals(made.status, 201, made.text);
        const ids = await inLanes(Array.from({ length: 6 }), 6, async () => {
          const r = await c.call("POST", "/api/v1/entities/counters", {
            body: { n: 0 },
          });
          assertEquals(r.status, 201, r.text);
          return String(r.data.id);
        });
        let stop = false;
        // Background readers: every turn of both isolates has reads open.
        const noise = Promise.all(Array.from({ length: 4 }, async () => {
          while (!stop) {
            await c.call("GET", `/api/v1/entities/counters?limit=10`);
          }
        }));
        const seen: string[] = [];
        try {
          await Promise.all(ids.map(async (id) => {
            for (let n = 1; n <= 40; n++) {
              const w = await c.call(
                "PATCH",
                `/api/v1/entities/counters/${id}`,
                {
                  body: { n },
                },
              );
              assertEquals(w.status, 200, w.text);
              const r = await c.call("GET", `/api/v1/entities/counters/${id}`);
              assertEquals(r.status, 200, r.text);
              assert(
                r.data.n === n,
                `wrote ${n} via isolate ${w.worker}, read ${r.data.n} via ${r.worker}`,
              );
              seen.push(`${w.worker}>${r.worker}`);
            }
          }));
        } finally {
          stop = true;
          await noise;
        }
        // Both directions across isolates were exercised.
        assertEquals(
          workersOf(
            seen.map((s) => ({ worker: s.split(">")[0] })) as never,
          ),
          ["0", "1"],
        );
        assert(seen.includes("0>1") && seen.includes("1>0"), "cross reads");
      } finally {
        await c.kill();
      }
    },
  });
}
