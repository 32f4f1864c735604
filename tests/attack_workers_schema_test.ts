/**
 * Attack on `serve --workers N`: schema changes in quick succession. An
 * isolate reloading its schemas while another commits the next change must
 * never settle on the older fields under the newer version.
 *
 * @module
 */

import { assert, DATABASES } from "./_server.ts";
import {
  inLanes,
  OPEN_RULES,
  startCluster,
  type WorkerReply,
} from "./_workers_fixtures.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name:
      `attack workers (${db}): back-to-back schema changes are in force on every isolate`,
    async fn() {
      const c = await startCluster(db);
      try {
        const made = await c.call("POST", "/api/v1/schemas", {
          token: c.admin,
          body: {
            name: "grow",
            type: "base",
            rules: OPEN_RULES,
            fields: [{ name: "f0", type: "string" }],
          },
        });
        assert(made.status === 201, made.text);
        const stale: string[] = [];
        let fields = made.data.fields;
        for (let k = 1; k <= 60; k++) {
          // Changes back to back: the other isolate reloads while the next commits.
          fields = [...fields, { name: `f${k}`, type: "string" }];
          const p = await c.call("PATCH", "/api/v1/schemas/grow", {
            token: c.admin,
            body: { fields },
          });
          assert(p.status === 200, `patch ${k}: ${p.status} ${p.text}`);
          fields = p.data.fields;
          if (k % 3 !== 0) continue;
          // Every isolate must know f{k} now.
          const writes: WorkerReply[] = await inLanes(
            Array.from({ length: 4 }),
            4,
            () =>
              c.call("POST", "/api/v1/entities/grow", {
                body: { [`f${k}`]: "v" },
              }),
          );
          for (const w of writes) {
            if (w.status !== 201 || w.data?.[`f${k}`] !== "v") {
              stale.push(`f${k} on ${w.worker}: ${w.status} ${w.text}`);
            }
          }
        }
        assert(stale.length === 0, `stale schemas:\n${stale.join("\n")}`);
      } finally {
        await c.kill();
      }
    },
  });
}
