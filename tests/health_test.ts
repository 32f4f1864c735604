/**
 * Health check: the envelope and its values on
 * both databases, HEAD, and on PostgreSQL a 503 `status: "down"`,
 * `database: "unavailable"` within about two seconds of the database's last
 * answer when it goes away (each check answered within two seconds), then
 * recovery once it is
 * back (on a separate throwaway cluster, so other suites are not disturbed).
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
import { hasPostgres, startOwnPostgres } from "./_pg.ts";
import { pause, poll, within } from "./_wait.ts";

const HEALTH = "/api/v1/health";

/** Checks a healthy reply: 200 and the full envelope. */
function healthy(r: Reply, where: string): number {
  assertStatus(r, 200, where);
  assert(
    (r.headers.get("content-type") ?? "").startsWith("application/json"),
    `${where}: JSON`,
  );
  assert(r.body, `${where}: a JSON body`);
  assertEquals(
    Object.keys(r.body).sort(),
    ["data", "error", "status"],
    `${where}: envelope keys`,
  );
  assertEquals(r.body.status, 200, `${where}: envelope status`);
  assertEquals(r.body.error, "", `${where}: no error`);
  const d = r.data as Record<string, unknown>;
  assertEquals(
    Object.keys(d).sort(),
    [
      "backups",
      "backups_kind",
      "database",
      "database_kind",
      "files",
      "files_kind",
      "status",
      "uptime",
      "version",
    ],
    `${where}: data keys`,
  );
  assertEquals(d.status, "ok", `${where}: status`);
  assertEquals(d.database, "ok", `${where}: database`);
  assertEquals([d.files, d.files_kind], ["ok", "local"], `${where}: files`);
  assertEquals(
    [d.backups, d.backups_kind],
    ["ok", "local"],
    `${where}: backups`,
  );
  assertEquals(d.version, "0.3.7", `${where}: version`);
  assert(
    typeof d.uptime === "number" && Number.isInteger(d.uptime) &&
      d.uptime >= 0,
    `${where}: uptime is an integer >= 0: ${d.uptime}`,
  );
  return d.uptime as number;
}

forEachDb("health: envelope, uptime, HEAD", async (t, db) => {
  const started = Date.now();
  const s = await startServer(db);
  try {
    await t.step("GET as a guest: 200 with status ok", async () => {
      const r = await s.request("GET", HEALTH);
      const uptime = healthy(r, "GET health");
      assert(
        uptime <= Math.ceil((Date.now() - started) / 1000) + 1,
        `uptime ${uptime} is at most the time since start`,
      );
      assert(r.headers.get("x-request-id"), "X-Request-Id");
    });

    await t.step("GET with a token and a query string: still ok", async () => {
      const token = await s.adminToken();
      healthy(await s.request("GET", HEALTH, { token }), "as admin");
      healthy(
        await s.request("GET", HEALTH, { token: "not-a-valid-token" }),
        "with a bad token (no auth needed)",
      );
    });

    await t.step("uptime counts seconds", async () => {
      const before = healthy(await s.request("GET", HEALTH), "before");
      // The next whole second comes within one (no fixed pause).
      const after = await poll("uptime to grow", async () => {
        const now = healthy(await s.request("GET", HEALTH), "after");
        return now >= before + 1 && now;
      }, { deadline: 5000, every: 50 });
      assert(after >= before + 1, `uptime grows: ${before} -> ${after}`);
      assert(
        after <= before + 2,
        `uptime is in seconds: ${before} -> ${after}`,
      );
    });

    await t.step("HEAD: 200, headers, no body", async () => {
      const res = await fetch(s.url + HEALTH, { method: "HEAD" });
      const text = await res.text();
      assertEquals(res.status, 200, "HEAD status");
      assertEquals(text, "", "HEAD has no body");
      assert(res.headers.get("x-request-id"), "HEAD X-Request-Id");
      assert(
        (res.headers.get("content-type") ?? "").startsWith("application/json"),
        "HEAD keeps the GET content type",
      );
    });

    await t.step("other methods: 405 with Allow", async () => {
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const r = await s.request(method, HEALTH);
        assertStatus(r, 405, `${method} health`);
        const allow = r.headers.get("allow") ?? "";
        assert(allow.includes("GET"), `${method}: Allow lists GET: ${allow}`);
        assert(r.error !== "", `${method}: error message`);
      }
    });

    await t.step("concurrent checks all answer", async () => {
      const replies = await Promise.all(
        Array.from({ length: 20 }, () => s.request("GET", HEALTH)),
      );
      replies.forEach((r, i) => healthy(r, `concurrent ${i}`));
    });
  } finally {
    await s.close();
  }
});

// ---- PostgreSQL going away: a separate throwaway cluster --------------------
// (startOwnPostgres: not the shared cluster, so stopping it disturbs no other
// suite; synchronous_commit stays on, so an immediate stop loses no admin row)

/**
 * A health check, failing instead of hanging. That it answers while the
 * database is frozen or stopped is the proof it does not wait for the
 * database (nothing else can make a frozen cluster answer); the deadline is
 * no claim about speed (timings belong to `deno task bench`).
 */
function health(s: TestServer): Promise<Reply> {
  return within("a health check", 20_000, s.request("GET", HEALTH));
}

Deno.test({
  name: "health: PostgreSQL down -> 503 status down, then recovers",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const cluster = await startOwnPostgres();
    let s: TestServer | undefined;
    try {
      s = await startServer("postgres", { connection: cluster.url });
      const server = s;
      healthy(await server.request("GET", HEALTH), "cluster up");
      const token = await server.adminToken();

      await t.step(
        "database hangs: 503 down once its last answer is old",
        async () => {
          // Freeze (SIGSTOP) this cluster's own processes: connections stay
          // open but nothing answers, so only the health timeout can help.
          const pids = await cluster.pids();
          assert(pids.length >= 2, `postmaster and backends: ${pids}`);
          for (const pid of pids) Deno.kill(pid, "SIGSTOP");
          try {
            // An answer vouches for the database for a second
            // (ANSWER_FRESH_MS), then a ping with a deadline of a second: a
            // 503 while every process of the cluster is stopped can only come
            // from that deadline (a check that waited for the ping would
            // never answer; the deadlines here only turn a hang into a
            // failure).
            await poll(
              "health 503 while frozen",
              async () => (await health(server)).status === 503,
              { deadline: 20_000, every: 100 },
            );
            for (let i = 0; i < 2; i++) {
              const r = await health(server);
              assertStatus(r, 503, `check ${i} while frozen`);
              assertEquals(r.data?.status, "down", "data.status");
              assertEquals(r.data?.database, "unavailable", "data.database");
            }
          } finally {
            for (const pid of pids) Deno.kill(pid, "SIGCONT");
          }
          let last: Reply | undefined;
          await poll("health after thawing", async () => {
            last = await server.request("GET", HEALTH);
            return last.status === 200;
          }).catch(() => {/* asserted below */});
          assert(last, "a reply");
          healthy(last, "after thawing");
          assertStatus(
            await server.request("GET", "/api/v1/schemas", { token }),
            200,
            "schemas after thawing",
          );
        },
      );

      await t.step("database stopped: 503 down, no hang", async () => {
        await cluster.stop();
        await poll(
          "health 503 once stopped",
          async () => (await health(server)).status === 503,
          { deadline: 20_000, every: 100 },
        );
        for (let i = 0; i < 3; i++) {
          const r = await health(server);
          assertStatus(r, 503, `check ${i} while down`);
          assert(r.body, "a JSON envelope");
          assertEquals(r.body.status, 503, "envelope status");
          assert(r.error !== "", "an error message");
          assertEquals(r.data?.status, "down", "data.status");
          assertEquals(r.data?.database, "unavailable", "data.database");
          assertEquals(r.data?.version, "0.3.7", "version while down");
          assert(
            Number.isInteger(r.data?.uptime) && r.data.uptime >= 0,
            "uptime while down",
          );
          assert(
            !/ECONNREFUSED|postgres|at .*\.ts:\d+/i.test(r.error),
            `no internals in the error: ${r.error}`,
          );
        }
        // HEAD too.
        const res = await fetch(server.url + HEALTH, { method: "HEAD" });
        assertEquals([res.status, await res.text()], [503, ""], "HEAD down");
        // Other routes fail cleanly, the server keeps answering.
        const r = await server.request("GET", "/api/v1/schemas", { token });
        assert(r.status >= 500, `a route needing the database: ${r.status}`);
        assert(
          !/at .*\.ts:\d+|ECONNREFUSED|SELECT/i.test(r.text),
          `no internals: ${r.text.slice(0, 300)}`,
        );
      });

      await t.step("database back: health answers ok again", async () => {
        await cluster.restart();
        const deadline = Date.now() + 15_000;
        let last: Reply | undefined;
        while (Date.now() < deadline) {
          last = await server.request("GET", HEALTH);
          if (last.status === 200) break;
          await pause(200);
        }
        assert(last, "a reply");
        healthy(last, "after the restart (postgres.js reconnects)");
        // Healthy again: an answer "ok" did not wait out the ping deadline
        // (that would say "unavailable").
        healthy(await health(server), "again");
        // The app works again beyond the health check.
        const schemas = await server.request("GET", "/api/v1/schemas", {
          token,
        });
        assertStatus(schemas, 200, "schemas after recovery");
      });
    } finally {
      await s?.close().catch(() => {});
      await cluster.destroy();
    }
  },
});
