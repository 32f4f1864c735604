/**
 * Login rate limit: 5 attempts per minute per
 * client IP on every login route (entity-scoped, legacy, admin), counted in
 * the database table `mb_ratelimit`, on every database.
 *
 * @module
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

const USER_PW = "user-password-1";

function nowSec(): number {
  return Date.now() / 1000;
}

/** Checks the X-RateLimit-* headers of a login reply. */
function assertRateHeaders(
  r: Reply,
  remaining: number,
  msg: string,
): number {
  assertEquals(r.headers.get("x-ratelimit-limit"), "5", `${msg}: limit`);
  assertEquals(
    r.headers.get("x-ratelimit-remaining"),
    String(remaining),
    `${msg}: remaining`,
  );
  const reset = r.headers.get("x-ratelimit-reset");
  assert(reset !== null && /^\d+$/.test(reset), `${msg}: reset ${reset}`);
  const n = Number(reset);
  const now = nowSec();
  assert(n > now - 1 && n <= now + 61, `${msg}: reset ${n} vs now ${now}`);
  return n;
}

/** Checks a 429 reply: envelope, headers, Retry-After. */
function assertLimited(r: Reply, msg: string): void {
  assertStatus(r, 429, msg);
  assertEquals(r.body?.status, 429, `${msg}: envelope status`);
  assertEquals(r.body?.data, null, `${msg}: envelope data`);
  assert(typeof r.error === "string" && r.error.length > 0, `${msg}: error`);
  const reset = assertRateHeaders(r, 0, msg);
  const retry = r.headers.get("retry-after");
  assert(retry !== null && /^\d+$/.test(retry), `${msg}: Retry-After ${retry}`);
  const n = Number(retry);
  assert(n >= 1 && n <= 60, `${msg}: Retry-After ${n} in 1..60`);
  assert(
    Math.abs(n - (reset - nowSec())) <= 2,
    `${msg}: Retry-After ${n} matches reset ${reset}`,
  );
  assert(!r.text.includes('token"'), `${msg}: no token in a 429`);
}

function post(
  s: TestServer,
  path: string,
  body: unknown,
  xff?: string,
): Promise<Reply> {
  return s.request("POST", path, {
    body,
    headers: xff === undefined ? {} : { "x-forwarded-for": xff },
  });
}

async function setup(s: TestServer): Promise<string> {
  const admin = await s.adminToken();
  let r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name: "users",
      type: "auth",
      fields: [],
      rules: { add: { mode: "public", expr: "" } },
    },
  });
  assertStatus(r, 201);
  r = await s.request("POST", "/api/v1/entities/users", {
    body: { email: "ada@example.com", password: USER_PW },
  });
  assertStatus(r, 201);
  return admin;
}

async function rateRow(
  s: TestServer,
  ip: string,
): Promise<{ count: number } | undefined> {
  const rows = await s.app.storage.query(
    `SELECT "count" FROM "mb_ratelimit" WHERE "key" = ?`,
    [`login:${ip}`],
  );
  return rows[0] ? { count: Number(rows[0].count) } : undefined;
}

forEachDb(
  "ratelimit: 5 attempts per IP across every login route",
  async (t, db) => {
    // No trustProxy: every request counts for the socket peer 127.0.0.1.
    const s = await startServer(db);
    try {
      const admin = await setup(s);
      const resets: number[] = [];

      await t.step(
        "every login answer carries the headers, counting down",
        async () => {
          const attempts: [string, unknown, number][] = [
            ["/api/v1/auth/users/login", {
              identity: "ada@example.com",
              password: USER_PW,
            }, 200],
            ["/api/v1/auth/users/login", {
              identity: "ada@example.com",
              password: "wrong-password",
            }, 401],
            ["/api/v1/auth/nope/login", {
              identity: "ada@example.com",
              password: USER_PW,
            }, 404],
            ["/api/v1/auth/login", {
              entity: "users",
              identity: "ada@example.com",
            }, 400],
            ["/api/v1/sys/admins/login", {
              identity: "admin@example.com",
              password: s.adminPassword,
            }, 200],
          ];
          let i = 0;
          for (const [path, body, status] of attempts) {
            // A different X-Forwarded-For each time: ignored without trustProxy.
            const r = await post(s, path, body, `192.0.2.${++i}`);
            assertStatus(r, status, `attempt ${i} ${path}`);
            resets.push(assertRateHeaders(r, 5 - i, `attempt ${i} ${path}`));
            if (status === 200) assert(typeof r.data.token === "string");
          }
          assert(
            Math.max(...resets) - Math.min(...resets) <= 1,
            `one window: resets ${resets}`,
          );
        },
      );

      await t.step(
        "the 6th attempt → 429 with Retry-After, on every route",
        async () => {
          const tries: [string, unknown][] = [
            ["/api/v1/auth/users/login", {
              identity: "ada@example.com",
              password: USER_PW,
            }],
            ["/api/v1/auth/login", {
              entity: "users",
              identity: "ada@example.com",
              password: USER_PW,
            }],
            ["/api/v1/sys/admins/login", {
              identity: "admin@example.com",
              password: s.adminPassword,
            }],
            ["/api/v1/auth/nope/login", {}],
            ["/api/v1/auth/users/login", {}],
          ];
          let i = 0;
          for (const [path, body] of tries) {
            const r = await post(s, path, body, `198.51.100.${++i}`);
            assertLimited(r, `limited ${path}`);
            assert(
              Math.abs(
                Number(r.headers.get("x-ratelimit-reset")) - resets[0],
              ) <= 1,
              "same window reset",
            );
          }
          // Correct credentials do not get through while limited.
          const r = await post(s, "/api/v1/auth/users/login", {
            identity: "ada@example.com",
            password: USER_PW,
          });
          assertLimited(r, "no header at all");
          assertEquals(r.data, null);
        },
      );

      await t.step(
        "counters live in mb_ratelimit, keyed by the socket peer",
        async () => {
          const row = await rateRow(s, "127.0.0.1");
          assert(row, "a row for 127.0.0.1");
          assert(row.count >= 11, `count ${row.count}`);
          for (let i = 1; i <= 5; i++) {
            assertEquals(
              await rateRow(s, `192.0.2.${i}`),
              undefined,
              "XFF unused",
            );
          }
        },
      );

      await t.step(
        "other routes are not limited; tokens still work",
        async () => {
          let r = await s.request("GET", "/api/v1/health");
          assertStatus(r, 200);
          assertEquals(r.headers.get("x-ratelimit-limit"), null);
          r = await s.request("GET", "/api/v1/schemas", { token: admin });
          assertStatus(r, 200);
          assertEquals(r.headers.get("x-ratelimit-limit"), null);
        },
      );

      await t.step("rate-limit hits are logged", async () => {
        const r = await s.request(
          "GET",
          `/api/v1/sys/logs?limit=1000&search=${
            encodeURIComponent("rate limit")
          }`,
          { token: admin },
        );
        assertStatus(r, 200);
        const hits = r.data.items.filter((e: { type: string; level: string }) =>
          e.type === "app"
        );
        assert(hits.length >= 1, `app log entries for the limit: ${r.text}`);
        assertEquals(hits[0].level, "warn");
        const limited = await s.request(
          "GET",
          "/api/v1/sys/logs?limit=1000&type=request",
          { token: admin },
        );
        const statuses = limited.data.items.map((e: { status: number }) =>
          e.status
        );
        assertEquals(statuses.filter((x: number) => x === 429).length, 6);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "ratelimit: per IP with trustProxy (last X-Forwarded-For hop)",
  async (t, db) => {
    const s = await startServer(db, { trustProxy: true });
    try {
      await setup(s);
      const good = { identity: "ada@example.com", password: USER_PW };

      await t.step(
        "one IP is limited across routes, another is not",
        async () => {
          const ip = "203.0.113.7";
          const paths = [
            "/api/v1/auth/users/login",
            "/api/v1/auth/login",
            "/api/v1/sys/admins/login",
            "/api/v1/auth/nope/login",
            "/api/v1/auth/users/login",
          ];
          for (let i = 0; i < 5; i++) {
            const r = await post(s, paths[i], {}, ip);
            assert(
              r.status === 400 || r.status === 404,
              `${paths[i]}: ${r.text}`,
            );
            assertRateHeaders(r, 4 - i, `${ip} attempt ${i + 1}`);
          }
          assertLimited(
            await post(s, "/api/v1/auth/users/login", good, ip),
            ip,
          );
          assertLimited(await post(s, "/api/v1/sys/admins/login", {}, ip), ip);
          // Another client is not affected.
          const other = await post(
            s,
            "/api/v1/auth/users/login",
            good,
            "203.0.113.8",
          );
          assertStatus(other, 200, "another IP");
          assertRateHeaders(other, 4, "another IP");
          assert(typeof other.data.token === "string");
          // Without the header (trustProxy): the socket peer, counted apart.
          const peer = await post(s, "/api/v1/auth/nope/login", {});
          assertStatus(peer, 404);
          assertRateHeaders(peer, 4, "socket peer");
          assertEquals((await rateRow(s, ip))?.count, 7);
          assertEquals((await rateRow(s, "203.0.113.8"))?.count, 1);
          assertEquals((await rateRow(s, "127.0.0.1"))?.count, 1);
        },
      );

      await t.step(
        "the last hop of X-Forwarded-For is the client",
        async () => {
          for (let i = 0; i < 5; i++) {
            // A client may prepend anything; the proxy appends the real peer.
            const r = await post(
              s,
              "/api/v1/auth/nope/login",
              {},
              `9.9.9.${i}, 1.2.3.4`,
            );
            assertStatus(r, 404);
            assertRateHeaders(r, 4 - i, `last hop attempt ${i + 1}`);
          }
          assertLimited(
            await post(s, "/api/v1/auth/users/login", good, "1.2.3.4"),
            "1.2.3.4 alone",
          );
          assertLimited(
            await post(s, "/api/v1/auth/users/login", good, "8.8.8.8,1.2.3.4"),
            "1.2.3.4 as the last hop (no space)",
          );
          // The forged first hops were not counted.
          const r = await post(s, "/api/v1/auth/nope/login", {}, "9.9.9.0");
          assertRateHeaders(r, 4, "9.9.9.0 was never the client");
          assertEquals(await rateRow(s, "9.9.9.1"), undefined);
          // A different last hop is a different client, whatever comes first.
          const x = await post(
            s,
            "/api/v1/auth/nope/login",
            {},
            "1.2.3.4, 5.6.7.8",
          );
          assertRateHeaders(x, 4, "5.6.7.8");
        },
      );

      await t.step(
        "2000 distinct IPs: counted in the database, server answers",
        async () => {
          const N = 2000, CONCURRENCY = 20;
          const before = Number(
            (await s.app.storage.query(
              `SELECT COUNT(*) AS n FROM "mb_ratelimit"`,
            ))[0].n,
          );
          // An expired window of some long-gone client: pruning must drop it.
          await s.app.storage.run(
            `INSERT INTO "mb_ratelimit" ("key", "window_start", "count") VALUES (?, ?, ?)`,
            ["login:stale", Date.now() - 10 * 60_000, 3],
          );
          const ipOf = (i: number) => `100.64.${i >> 8}.${i & 255}`;
          let next = 0;
          const bad: string[] = [];
          const worker = async () => {
            while (next < N) {
              const i = next++;
              const r = await post(s, "/api/v1/auth/nope/login", {}, ipOf(i));
              if (
                r.status !== 404 ||
                r.headers.get("x-ratelimit-remaining") !== "4"
              ) bad.push(`${ipOf(i)}: ${r.status} ${r.text.slice(0, 80)}`);
            }
          };
          await Promise.all(Array.from({ length: CONCURRENCY }, worker));
          assertEquals(bad.slice(0, 5), [], "every first attempt allowed");
          const after = Number(
            (await s.app.storage.query(
              `SELECT COUNT(*) AS n FROM "mb_ratelimit"`,
            ))[0].n,
          );
          // Pruning of expired windows may run, but these are all fresh.
          assert(after - before >= N - 1, `rows ${before} → ${after}`);
          assertEquals(
            await rateRow(s, "stale"),
            undefined,
            "expired windows are pruned (the table stays bounded)",
          );
          // Each IP keeps its own count.
          const again = await post(
            s,
            "/api/v1/auth/nope/login",
            {},
            ipOf(1234),
          );
          assertRateHeaders(again, 3, "second attempt of one of them");
          const h = await s.request("GET", "/api/v1/health");
          assertStatus(h, 200);
          assertEquals(h.data.status, "ok");
          const ok = await post(
            s,
            "/api/v1/auth/users/login",
            good,
            "100.65.0.1",
          );
          assertStatus(ok, 200, "a login still works");
        },
      );
    } finally {
      await s.close();
    }
  },
);
