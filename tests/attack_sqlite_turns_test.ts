/**
 * Attack on SQLite's read turns (the reads of one turn of the event loop
 * share one read transaction) under `serve --workers 2`: an isolate learns
 * of another's schema change or revocation from a counter in shared memory
 * and reads it from the database before it handles the next request. When
 * that read runs in a read transaction its turn opened before the other
 * isolate committed, it reads the old state and still counts itself caught
 * up: the next request is answered under the replaced schema (or accepts a
 * revoked token) until a poll repairs it. Both isolates are kept busy with
 * reads, so their turns handle many requests each.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import { openSse, type SseClient } from "./_realtime_client.ts";
import {
  type Cluster,
  inLanes,
  OPEN_RULES,
  startCluster,
  type WorkerReply,
} from "./_workers_fixtures.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** Keeps both isolates busy with reads of `entity` until the returned stop. */
function readNoise(c: Cluster, path: string, lanes = 12): () => Promise<void> {
  let stop = false;
  const done = Promise.all(Array.from({ length: lanes }, async () => {
    while (!stop) await c.call("GET", path).catch(() => {});
  }));
  return async () => {
    stop = true;
    await done;
  };
}

// One cluster per database for the three attacks (each on entities of its
// own): a cluster start is a process of three isolates and an admin set-up.
for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `attack read turns (${db}): two isolates under read load`,
    async fn(t) {
      const c = await startCluster(db);
      try {
        await t.step(
          "a schema change answered on one isolate is in force on the other",
          async () => {
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
            const stop = readNoise(c, "/api/v1/entities/grow?limit=5");
            const stale: string[] = [];
            try {
              let fields = made.data.fields;
              for (let k = 1; k <= 40; k++) {
                fields = [...fields, { name: `f${k}`, type: "string" }];
                const p = await c.call("PATCH", "/api/v1/schemas/grow", {
                  token: c.admin,
                  body: { fields },
                });
                if (p.status !== 200) {
                  // Planned against the schema before the other isolate's change.
                  stale.push(
                    `patch f${k} on ${p.worker}: ${p.status} ${p.text}`,
                  );
                  fields = fields.slice(0, -1);
                  continue;
                }
                fields = p.data.fields;
                const writes: WorkerReply[] = await inLanes(
                  Array.from({ length: 6 }),
                  6,
                  () =>
                    c.call("POST", "/api/v1/entities/grow", {
                      body: { [`f${k}`]: "v" },
                    }),
                );
                for (const w of writes) {
                  if (w.status !== 201 || w.data?.[`f${k}`] !== "v") {
                    stale.push(
                      `f${k} (patched on ${p.worker}) on ${w.worker}: ${w.status} ${w.text}`,
                    );
                  }
                }
              }
            } finally {
              await stop();
            }
            assert(stale.length === 0, `stale schemas:\n${stale.join("\n")}`);
          },
        );
        await t.step(
          "a realtime stream gets every write of both isolates",
          async () => {
            const streams: SseClient[] = [];
            try {
              const made = await c.call("POST", "/api/v1/schemas", {
                token: c.admin,
                body: {
                  name: "feed",
                  type: "base",
                  rules: OPEN_RULES,
                  fields: [{ name: "n", type: "int" }],
                },
              });
              assert(made.status === 201, made.text);
              const holders = new Set<string>();
              for (let i = 0; i < 20 && holders.size < 2; i++) {
                const s = await openSse({ url: c.url } as never, "topics=feed");
                assertEquals(s.status, 200);
                holders.add(String(s.headers.get("x-moonbase-worker")));
                streams.push(s);
                assertEquals((await s.next())?.event, "ready");
              }
              assertEquals([...holders].sort(), ["0", "1"]);
              const stop = readNoise(c, "/api/v1/entities/feed?limit=5");
              const total = 300;
              try {
                // One write at a time: each is the only news of its commit.
                await inLanes(
                  Array.from({ length: total }, (_, n) => n),
                  2,
                  async (n) => {
                    const r = await c.call("POST", "/api/v1/entities/feed", {
                      body: { n },
                    });
                    assertEquals(r.status, 201, r.text);
                  },
                );
              } finally {
                await stop();
              }
              for (const s of streams) {
                const seen = new Set<number>();
                while (seen.size < total) {
                  const m = await s.next(3000);
                  if (!m) break;
                  seen.add(m.data?.record?.n ?? m.data?.n);
                }
                const lost = Array.from({ length: total }, (_, n) => n).filter((
                  n,
                ) => !seen.has(n));
                assert(
                  lost.length === 0,
                  `stream on isolate ${
                    s.headers.get("x-moonbase-worker")
                  } lost ${lost.length} events: ${
                    lost.slice(0, 20).join(", ")
                  }`,
                );
              }
            } finally {
              for (const s of streams) s.close();
            }
          },
        );
        // Last: its refreshes spend the cluster's admin token.
        await t.step(
          "a token spent by a refresh on one isolate is refused by the other",
          async () => {
            const made = await c.call("POST", "/api/v1/schemas", {
              token: c.admin,
              body: {
                name: "noise",
                type: "base",
                rules: OPEN_RULES,
                fields: [],
              },
            });
            assert(made.status === 201, made.text);
            const stop = readNoise(c, "/api/v1/entities/noise?limit=5");
            const accepted: string[] = [];
            try {
              let token = c.admin;
              for (let k = 0; k < 40; k++) {
                const r = await c.call("POST", "/api/v1/sys/admins/refresh", {
                  token,
                });
                assert(r.status === 200, `refresh ${k}: ${r.status} ${r.text}`);
                const old = token;
                token = String(r.data.token);
                const uses: WorkerReply[] = await inLanes(
                  Array.from({ length: 6 }),
                  6,
                  () => c.call("GET", "/api/v1/schemas", { token: old }),
                );
                for (const u of uses) {
                  if (u.status !== 401) {
                    accepted.push(
                      `refresh ${k} on ${r.worker}, old token on ${u.worker}: ${u.status}`,
                    );
                  }
                }
              }
            } finally {
              await stop();
            }
            assert(
              accepted.length === 0,
              `spent tokens accepted:\n${accepted.join("\n")}`,
            );
          },
        );
      } finally {
        await c.kill();
      }
    },
  });
}

Deno.test({
  ...opts,
  name:
    "attack read turns (sqlite): two apps of one process on one database file write at once without a stall",
  ignore: !DATABASES.includes("sqlite"),
  async fn() {
    const a = await startServer("sqlite");
    let b: TestServer | undefined;
    try {
      const admin = await a.adminToken();
      const open = { mode: "public", expr: "" };
      const made = await a.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "both",
          type: "base",
          fields: [{ name: "n", type: "int" }],
          rules: { add: open, list: open, get: open },
        },
      });
      assertEquals(made.status, 201, made.text);
      // A second app on the same file is supported (workers share it).
      b = await startServer("sqlite", { dataDir: a.dataDir });
      const second = b;
      // One record write on each app in the same turn: each holds its
      // connection's write lock until its turn ends, in one thread. A stall
      // blocks the thread until the busy timeout, and the write fails.
      const got = await Promise.all(
        [a, second, a, second].map((s, n) =>
          s.request("POST", "/api/v1/entities/both", { body: { n } })
        ),
      );
      assertEquals(got.map((r) => r.status), [201, 201, 201, 201]);
      const list = await a.request("GET", "/api/v1/entities/both?sort=n");
      assertEquals(list.data.items.map((x: { n: number }) => x.n), [
        0,
        1,
        2,
        3,
      ]);
    } finally {
      await b?.close();
      await a.close();
    }
  },
});
