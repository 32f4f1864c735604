/**
 * `moonbase serve --workers 2`, the process as a whole (on SQLite and
 * PostgreSQL): a cron job runs once per tick whichever isolate claims it;
 * the one-time setup link works once, on either isolate; SIGTERM lets the
 * requests in flight on both isolates finish, then exits 0; a worker that
 * dies stops the whole process with exit code 1 (for a supervisor to
 * restart it); `--workers` refuses what is not a count.
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "./_server.ts";
import { inLanes, startCluster, workersOf } from "./_workers_fixtures.ts";
import { resolveConfig } from "../lib/config.ts";
import { assertErrorExit, childEnv, HOST, runCli } from "./_cli_fixtures.ts";
import { cliSession } from "./_cli_session.ts";
import { pause, poll } from "./_wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** Cron hits, a slow route and a route that kills worker 1 (isolate names its thread). */
const SCRIPT = `
export default async (app) => {
  await app.db.run('CREATE TABLE IF NOT EXISTS "cron_hits" ("who" TEXT NOT NULL, "at" BIGINT NOT NULL)');
  const me = globalThis.name || "main";
  app.cron("hit", "* * * * * *", async () => {
    await app.db.run('INSERT INTO "cron_hits" ("who", "at") VALUES (?, ?)', [me, Date.now()]);
  });
  app.route("GET", "/api/hits", async () => ({
    hits: await app.db.query('SELECT "who", "at" FROM "cron_hits" ORDER BY "at"'),
    claims: await app.db.query('SELECT "tick", "instance" FROM "mb_cron_runs" WHERE "job" = ?', ["hit"]),
  }));
  app.route("GET", "/api/slow", async () => {
    await new Promise((r) => setTimeout(r, 1200));
    return { slow: true };
  });
  app.route("GET", "/api/boom", () => {
    if (me === "moonbase-worker-1") setTimeout(() => { throw new Error("boom"); }, 50);
    return { me };
  });
};
`;

for (const db of DATABASES) {
  // One process per database for the cases that leave it running (each a
  // step); the SIGTERM drain ends it.
  Deno.test({
    ...opts,
    name:
      `workers (${db}): setups race, setup once, cron once per tick, drain on SIGTERM`,
    async fn(t) {
      const c = await startCluster(db, {
        scripts: { "jobs.js": SCRIPT },
        unclaimed: true,
      });
      try {
        const token = /setup\?token=(\S+)/.exec(c.served.stdout())![1];

        await t.step(
          "concurrent setups on both isolates make one admin",
          async () => {
            const tries = await Promise.all(
              Array.from(
                { length: 8 },
                (_, i) =>
                  c.call("POST", "/api/v1/sys/admins/setup", {
                    token,
                    body: {
                      email: `a${i}@example.com`,
                      password: "root-password-1",
                    },
                  }),
              ),
            );
            const made = tries.filter((r) => r.status === 201).length;
            assertEquals(made, 1, tries.map((r) => r.status).join(" "));
            assert(tries.every((r) => r.status === 201 || r.status === 403));
          },
        );

        await t.step(
          "the setup link works once, on either isolate",
          async () => {
            const replies = await inLanes(
              Array.from({ length: 12 }),
              4,
              () =>
                c.call("POST", "/api/v1/sys/admins/setup", {
                  token,
                  body: {
                    email: "late@example.com",
                    password: "late-password-1",
                  },
                }),
            );
            assert(
              replies.every((r) => r.status === 403),
              "no second admin",
            );
            const asked = await inLanes(
              Array.from({ length: 12 }),
              4,
              () => c.call("GET", "/api/v1/sys/admins/setup"),
            );
            assert(
              asked.every((r) => r.data?.required === false),
              "not required",
            );
            assertEquals(workersOf([...replies, ...asked]), ["0", "1"]);
          },
        );

        await t.step("a cron tick runs once, on one isolate", async () => {
          type Hits = {
            hits: { who: string; at: number }[];
            claims: { tick: number; instance: string }[];
          };
          // Ticks every second from the start: at least two by now, or soon.
          const { hits, claims } = await poll("two cron hits", async () => {
            const r = await c.call("GET", "/api/hits");
            assertEquals(r.status, 200, r.text);
            return (r.data as Hits).hits.length >= 2 && r.data as Hits;
          }, { every: 200 });
          assert(hits.length >= 2, `hits: ${JSON.stringify(hits)}`);
          // Each claimed tick ran once; two isolates without claims would double it.
          assert(
            hits.length === claims.length ||
              hits.length === claims.length - 1, // a run in progress
            `hits ${hits.length}, claims ${claims.length}`,
          );
          const ticks = claims.map((x) => Number(x.tick));
          const seconds = (Math.max(...ticks) - Math.min(...ticks)) / 1000 + 1;
          assert(hits.length <= seconds, `${hits.length} hits in ${seconds} s`);
          assertEquals(
            new Set(ticks).size,
            ticks.length,
            "a tick claimed once",
          );
        });

        if (db === "sqlite") {
          await t.step(
            "a port in use is refused, even by another --workers process",
            async () => {
              const dir = await Deno.makeTempDir({
                prefix: "mb_workers_other_",
              });
              try {
                const o = await runCli([
                  "serve",
                  "--port",
                  String(c.served.port),
                  "--host",
                  HOST,
                  "--workers",
                  "2",
                  "--dataDir",
                  dir,
                ], { timeoutMs: 20_000 });
                assertErrorExit(o, /in use/i);
                assertEquals(
                  (await c.call("GET", "/api/v1/health")).status,
                  200,
                );
              } finally {
                await Deno.remove(dir, { recursive: true });
              }
            },
          );
        }

        await t.step("SIGTERM lets the requests in flight finish", async () => {
          // Each on a connection of its own, spread by the kernel: all 16 on
          // one isolate has a chance of 2^-15 (with 8 it was 1 in 128).
          const slow = Array.from(
            { length: 16 },
            () => c.call("GET", "/api/slow"),
          );
          await pause(300);
          const stopped = c.served.stop("SIGTERM", 20_000);
          const replies = await Promise.all(slow);
          assert(
            replies.every((r) => r.status === 200 && r.data?.slow === true),
            replies.map((r) => `${r.status} ${r.text}`).join(" | "),
          );
          assertEquals(workersOf(replies), ["0", "1"]);
          const { code, timedOut } = await stopped;
          assertEquals([code, timedOut], [0, false], c.served.stderr());
        });
      } finally {
        await c.kill();
      }
    },
  });

  Deno.test({
    ...opts,
    name: `workers (${db}): a worker that dies stops the process, exit 1`,
    async fn() {
      // No admin needed: the setup link stays unused.
      const c = await startCluster(db, {
        scripts: { "jobs.js": SCRIPT },
        unclaimed: true,
      });
      try {
        let hit = false;
        for (let i = 0; i < 100 && !hit; i++) {
          const r = await c.call("GET", "/api/boom");
          assertEquals(r.status, 200, r.text);
          hit = r.worker === "1";
        }
        assert(hit, "a request reached worker 1");
        const deadline = Date.now() + 20_000;
        let answered = true;
        while (answered && Date.now() < deadline) {
          await pause(200);
          answered = await c.call("GET", "/api/v1/health").then(
            () => true,
            () => false,
          );
        }
        assert(!answered, "the process no longer answers");
        const { code, timedOut } = await c.served.stop("SIGTERM", 15_000);
        assertEquals([code, timedOut], [1, false]);
        assert(
          /worker 1 died/.test(c.served.stderr()),
          c.served.stderr().slice(0, 2000),
        );
      } finally {
        await c.kill();
      }
    },
  });
}

Deno.test({
  ...opts,
  name: "workers: without --unstable-net, one line and exit 2",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mb_workers_flag_" });
    try {
      const args = ["serve", "--port", "0", "--workers", "2", "--dataDir", dir];
      // --no-config: deno.json's "unstable": ["net"] does not apply.
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-config", "main.ts", ...args],
        cwd: new URL("..", import.meta.url).pathname,
        env: childEnv(),
        clearEnv: true,
        stdin: "null",
      }).output();
      const dec = new TextDecoder();
      assertErrorExit({
        code: out.code,
        stdout: dec.decode(out.stdout),
        stderr: dec.decode(out.stderr),
        args,
      }, /--unstable-net/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...opts,
  name: "workers: --workers takes a count or auto",
  async fn() {
    // The commands run one after another in one process.
    const cli = cliSession();
    try {
      for (const bad of ["-1", "two", "257", "1.5"]) {
        const o = await cli.run(["serve", "--workers", bad]);
        assertErrorExit(o, /--workers/);
      }
    } finally {
      await cli.close();
    }
  },
});

Deno.test("workers: the connection cap is the process's, the pool is shared out", () => {
  // The isolates count their connections into one total (lib/workers/serve.ts).
  const two = resolveConfig({ workers: 2, maxConnections: 5, poolSize: 7 });
  assertEquals([two.workers, two.maxConnections, two.poolSize], [2, 5, 7]);
  const one = resolveConfig({ maxConnections: 5 });
  assertEquals([one.workers, one.maxConnections], [1, 5]);
  const many = resolveConfig({ workers: 64 });
  assert(many.poolSize === 2, "at least 2 connections an isolate");
});
