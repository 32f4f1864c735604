/**
 * Sustained writes and concurrency:
 * the SQLite WAL stays small under sustained writes (no statement is left
 * un-reset, so the checkpointer can run), concurrent writes all succeed
 * without 500s or deadlocks, and the health check answers during the load.
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { pause, within } from "./_wait.ts";

const WAL_BOUND = 8 * 1024 * 1024;

const PUBLIC = { mode: "public", expr: "" } as const;

async function createEntity(
  s: TestServer,
  token: string,
  name: string,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name,
      type: "base",
      fields: [
        { name: "title", type: "string", required: true },
        { name: "n", type: "int" },
        { name: "body", type: "text" },
        { name: "code", type: "string", unique: true },
      ],
      rules: {
        list: PUBLIC,
        get: PUBLIC,
        add: PUBLIC,
        update: PUBLIC,
        delete: PUBLIC,
      },
    },
  });
  assertStatus(r, 201, "create entity");
}

async function walSize(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * Runs `creates` create → update → get cycles over `clients` concurrent
 * clients, with a list every 5th cycle and a delete every 2nd; returns the
 * largest WAL size seen and the number of deletes.
 */
async function sustainedLoad(
  s: TestServer,
  clients: number,
  creates: number,
): Promise<{ maxWal: number; deleted: number; elapsed: number }> {
  const wal = `${s.dataDir}/moonbase.db-wal`;
  let maxWal = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      maxWal = Math.max(maxWal, await walSize(wal));
      await pause(25);
    }
  })();
  const bad: string[] = [];
  const check = (r: Reply, status: number, what: string) => {
    if (r.status !== status && bad.length < 20) {
      bad.push(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
    }
  };
  let deleted = 0;
  const started = Date.now();
  try {
    await within(
      "sustained load",
      240_000,
      Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          const mine: string[] = [];
          for (let i = 0; i < creates / clients; i++) {
            const r = await s.request("POST", "/api/v1/entities/items", {
              body: {
                title: `c${c} i${i}`,
                n: i,
                body: "x".repeat(200 + (i % 7) * 100),
                code: `c${c}-${i}`,
              },
            });
            check(r, 201, "create");
            if (r.status !== 201) continue;
            const id = r.data.id as string;
            mine.push(id);
            check(
              await s.request("PATCH", `/api/v1/entities/items/${id}`, {
                body: { n: i + 1, title: `c${c} i${i} updated` },
              }),
              200,
              "update",
            );
            const got = await s.request("GET", `/api/v1/entities/items/${id}`);
            check(got, 200, "get");
            if (got.status === 200 && got.data.n !== i + 1) {
              bad.push(`get after update: n=${got.data.n}`);
            }
            if (i % 5 === 0) {
              check(
                await s.request(
                  "GET",
                  "/api/v1/entities/items?limit=20&sort=-created",
                ),
                200,
                "list",
              );
            }
            if (i % 2 === 1) {
              const victim = mine.shift()!;
              check(
                await s.request("DELETE", `/api/v1/entities/items/${victim}`),
                204,
                "delete",
              );
              deleted++;
            }
          }
        }),
      ),
    );
  } finally {
    sampling = false;
    await sampler;
  }
  assertEquals(bad, [], "every request answered as expected");
  maxWal = Math.max(maxWal, await walSize(wal));
  return { maxWal, deleted, elapsed: Date.now() - started };
}

const notSqlite = (Deno.env.get("MB_TEST_DB") ?? "sqlite") !== "sqlite";

Deno.test({
  name: "wal: the SQLite WAL stays small under sustained writes",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: notSqlite,
  async fn() {
    const s = await startServer("sqlite");
    try {
      const token = await s.adminToken();
      await createEntity(s, token, "items");
      // Each create leaves ~20 KB of WAL frames: 1200 of them write some
      // 25 MB, three times the bound were the checkpoints kept from
      // resetting the WAL (the control below); kept small, it peaks at the
      // checkpoint threshold (~4 MB).
      const CREATES = 1200;
      const { maxWal, deleted, elapsed } = await sustainedLoad(s, 8, CREATES);
      const r = await s.request("GET", "/api/v1/entities/items?count=true");
      assertStatus(r, 200);
      assertEquals(r.data.total, CREATES - deleted, "records left");
      assert(maxWal > 0, "the WAL file was observed (WAL mode is on)");
      assert(
        maxWal < WAL_BOUND,
        `WAL grew to ${(maxWal / 1048576).toFixed(1)} MB (bound ${
          WAL_BOUND / 1048576
        } MB) during ${CREATES} creates in ${elapsed} ms`,
      );
      // The checkpointer really ran: the main database file holds the data.
      const db = await Deno.stat(`${s.dataDir}/moonbase.db`);
      assert(db.size > 512 * 1024, `moonbase.db is ${db.size} bytes`);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "wal: control — a reader left open makes the same load exceed the bound",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: notSqlite,
  async fn() {
    // What the pitfall looks like: a second connection holds a read
    // transaction (as an un-reset statement would), so checkpoints cannot
    // reset the WAL. This proves the measurement above can fail.
    const s = await startServer("sqlite");
    const { DatabaseSync } = await import("node:sqlite");
    const pin = new DatabaseSync(`${s.dataDir}/moonbase.db`);
    try {
      const token = await s.adminToken();
      await createEntity(s, token, "items");
      pin.exec("BEGIN");
      pin.prepare(`SELECT count(*) AS n FROM "mb_admins"`).all();
      // Writes commit in groups (fewer WAL frames per write): enough of them
      // to pass the bound (twice over) while nothing can be checkpointed.
      const { maxWal } = await sustainedLoad(s, 8, 1000);
      assert(
        maxWal > WAL_BOUND,
        `with a pinned reader the WAL only reached ${maxWal} bytes`,
      );
    } finally {
      if (pin.isTransaction) pin.exec("ROLLBACK");
      pin.close();
      await s.close();
    }
  },
});

// One server per database for the three cases (each a step, on an entity
// of its own).
forEachDb(
  "concurrency: creates, updates, deletes, unique races, health under load",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const token = await s.adminToken();
      await t.step("4 and 16 concurrent creates all succeed", async () => {
        await createEntity(s, token, "burst");
        for (const n of [4, 16, 64]) {
          const replies = await within(
            `${n} concurrent creates`,
            30_000,
            Promise.all(
              Array.from(
                { length: n },
                (_, i) =>
                  s.request("POST", "/api/v1/entities/burst", {
                    body: { title: `t${i}`, n: i, code: `${n}-${i}` },
                  }),
              ),
            ),
          );
          const statuses = replies.map((r) => r.status);
          assertEquals(statuses, Array(n).fill(201), `${n} concurrent creates`);
          const ids = new Set(replies.map((r) => r.data.id));
          assertEquals(ids.size, n, "distinct ids");
        }
        const r = await s.request("GET", "/api/v1/entities/burst?count=true");
        assertStatus(r, 200);
        assertEquals(r.data.total, 4 + 16 + 64);
      });
      await t.step(
        "updates, deletes and unique conflicts in parallel",
        async () => {
          await createEntity(s, token, "race");
          let r = await s.request("POST", "/api/v1/entities/race", {
            body: { title: "shared", n: 0 },
          });
          assertStatus(r, 201);
          const id = r.data.id;
          // 16 concurrent PATCHes of one record: all 200, the last write wins.
          const patches = await within(
            "16 concurrent updates",
            30_000,
            Promise.all(
              Array.from(
                { length: 16 },
                (_, i) =>
                  s.request("PATCH", `/api/v1/entities/race/${id}`, {
                    body: { n: i + 1 },
                  }),
              ),
            ),
          );
          assertEquals(
            patches.map((p) => p.status),
            Array(16).fill(200),
          );
          r = await s.request("GET", `/api/v1/entities/race/${id}`);
          assertStatus(r, 200);
          assert(r.data.n >= 1 && r.data.n <= 16, `n=${r.data.n}`);
          // 16 concurrent creates of one unique value: one 201, the rest 409.
          const dupes = await within(
            "16 conflicting creates",
            30_000,
            Promise.all(
              Array.from(
                { length: 16 },
                (_, i) =>
                  s.request("POST", "/api/v1/entities/race", {
                    body: { title: `dup ${i}`, code: "same-code" },
                  }),
              ),
            ),
          );
          const statuses = dupes.map((d) => d.status).sort();
          assertEquals(statuses, [201, ...Array(15).fill(409)], "unique race");
          // 16 concurrent DELETEs of one record: one 204, the rest 404.
          const dels = await within(
            "16 concurrent deletes",
            30_000,
            Promise.all(
              Array.from(
                { length: 16 },
                () => s.request("DELETE", `/api/v1/entities/race/${id}`),
              ),
            ),
          );
          assertEquals(
            dels.map((d) => d.status).sort(),
            [204, ...Array(15).fill(404)],
            "delete race",
          );
        },
      );
      await t.step("the health check answers during write load", async () => {
        await createEntity(s, token, "load");
        let loading = true;
        const health: { status: number; db: string }[] = [];
        const prober = (async () => {
          while (loading) {
            // An "ok" answer did not wait out the health check's own
            // deadline (that says "unavailable"); how fast it is under load
            // belongs to `deno task bench`.
            const r = await s.request("GET", "/api/v1/health");
            health.push({ status: r.status, db: r.data?.database });
            await pause(20);
          }
        })();
        const errors: string[] = [];
        await within(
          "write load",
          120_000,
          Promise.all(Array.from({ length: 16 }, async (_, c) => {
            for (let i = 0; i < 40; i++) {
              const r = await s.request("POST", "/api/v1/entities/load", {
                body: { title: `c${c}`, n: i, body: "y".repeat(2000) },
              });
              if (r.status !== 201) {
                errors.push(`${r.status} ${r.text.slice(0, 200)}`);
              } else if (i % 4 === 0) {
                const l = await s.request(
                  "GET",
                  "/api/v1/entities/load?limit=50&sort=-n",
                );
                if (l.status !== 200) errors.push(`list ${l.status}`);
              }
            }
          })),
        ).finally(() => loading = false);
        await prober;
        assertEquals(errors, [], "load requests");
        assert(
          health.length >= 3,
          `only ${health.length} health probes answered`,
        );
        const bad = health.filter((h) => h.status !== 200 || h.db !== "ok");
        assertEquals(bad, [], "health during load");
      });
    } finally {
      await s.close();
    }
  },
);
