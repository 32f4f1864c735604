/**
 * `app.cron(name, schedule, fn)`: seconds schedules tick, a bad schedule
 * stops start-up, overlapping runs are skipped, a throw is logged and the
 * job keeps ticking, closing the app stops it, and with two instances on
 * one database each tick runs once. The runner itself: `start()` again
 * replaces the jobs, `stop()` waits for the run in progress, no timer
 * fires after it, and its timers never keep a process alive.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { type CronJob, CronRunner } from "../lib/extend/cron.ts";
import type { Storage } from "../lib/db/storage.ts";
import type { Logger } from "../lib/logs/logger.ts";
import { FakeTimers, pause, poll, settlesWithin } from "./_wait.ts";

/** Polls `ok` until it holds. */
const until = (ok: () => boolean | Promise<boolean>, deadline?: number) =>
  poll("the cron job", ok, { deadline, every: 50 });

/** What the test scripts record, by a key unique to each case and database. */
interface Tally {
  runs: number;
  active: number;
  most: number;
  done: number;
}
const tallies = ((globalThis as { cronTallies?: Record<string, Tally> })
  .cronTallies ??= {});
const tally = (key: string): Tally =>
  tallies[key] ??= { runs: 0, active: 0, most: 0, done: 0 };

/** Script text that counts its runs in `tally(key)`; `body` runs inside the job. */
function countingScript(
  key: string,
  schedule: string,
  body = "",
  name = "job",
): string {
  return `
const t = (globalThis.cronTallies ??= {})[${JSON.stringify(key)}] ??=
  { runs: 0, active: 0, most: 0, done: 0 };
export default (app) => {
  app.cron(${JSON.stringify(name)}, ${JSON.stringify(schedule)}, async () => {
    t.runs++;
    t.active++;
    t.most = Math.max(t.most, t.active);
    try {
      ${body}
    } finally {
      t.active--;
    }
    t.done++;
  });
};
`;
}

/** A temp scripts dir holding `files` (name → text). */
async function scripts(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mb_cron_" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}

/** The app log entries (newest first) whose message contains `search`. */
async function appLogs(
  s: TestServer,
  search: string,
): Promise<
  { level: string; message: string; data: Record<string, unknown> }[]
> {
  const r = await s.request(
    "GET",
    `/api/v1/sys/logs?type=app&limit=1000&search=${encodeURIComponent(search)}`,
    { token: await s.adminToken() },
  );
  assert.equal(r.status, 200, r.text);
  return r.data.items;
}

/** A gate a job's run waits on until the test opens it. */
interface Gate {
  wait: Promise<void>;
  open: () => void;
}
const gates = ((globalThis as { cronGates?: Record<string, Gate> })
  .cronGates ??= {});
/** Closes the gate `key` (the runs that reach it wait until it opens). */
function closeGate(key: string): Gate {
  let open = () => {};
  const wait = new Promise<void>((ok) => open = ok);
  return gates[key] = { wait, open };
}
/** Script text that waits at the gate `key` (when there is one). */
const atGate = (key: string) =>
  `await (globalThis.cronGates ?? {})[${JSON.stringify(key)}]?.wait;`;

// One server per database runs three jobs at once (each its own case, its
// own tally and name): their seconds tick in parallel instead of one after
// the other.
forEachDb(
  "cron: seconds schedules tick, a run in progress skips ticks, a throw is logged, closing stops them",
  async (t, db) => {
    const ticks = `ticks-${db}`, slow = `slow-${db}`, boom = `boom-${db}`;
    const dir = await scripts({
      "ticks.js": countingScript(ticks, "*/1 * * * * *"),
      "slow.js": countingScript(slow, "* * * * * *", atGate(slow), "slow"),
      "boom.ts": countingScript(
        boom,
        "* * * * * *",
        'throw new Error("boom");',
        "boom",
      ),
    });
    // The slow job's first run waits until its next ticks were skipped.
    let gate = closeGate(slow);
    const s = await startServer(db, { scriptsDir: dir });
    let closing: Promise<void> | undefined;
    try {
      await t.step("a seconds schedule ticks", async () => {
        await until(() => tally(ticks).runs >= 2);
        // Each tick is claimed once, under the job's name and its whole second.
        const claims = await s.app.storage.query(
          `SELECT "tick" FROM "mb_cron_runs" WHERE "job" = ?`,
          ["job"],
        );
        assert.ok(claims.length >= 2);
        for (const c of claims) assert.equal(Number(c.tick) % 1000, 0);
      });

      await t.step(
        "a job that throws is logged and keeps ticking",
        async () => {
          await until(() => tally(boom).runs >= 2);
          await until(async () =>
            (await appLogs(s, "cron job boom failed")).length >= 1
          );
          const [entry] = await appLogs(s, "cron job boom failed");
          assert.equal(entry.level, "error");
          assert.equal(entry.data.script, "boom.ts");
          assert.equal(entry.data.job, "boom");
          assert.equal(entry.data.error, "boom");
          assert.match(
            String(entry.data.tick),
            /^\d{4}-\d\d-\d\dT.*:\d\d\.000Z$/,
          );
        },
      );

      await t.step(
        "a run still in progress makes the next ticks skipped",
        async () => {
          await until(async () =>
            (await appLogs(s, "skipped")).some((e) =>
              e.message ===
                "cron job slow skipped: its previous run is in progress" &&
              e.level === "info" && e.data.script === "slow.js"
            )
          );
          // The first run ends; the next one that starts is held in turn.
          const first = gate;
          gate = closeGate(slow);
          first.open();
          await until(() => tally(slow).done >= 1 && tally(slow).active === 1);
          assert.equal(tally(slow).most, 1, "two runs of the job overlapped");
        },
      );

      await t.step("closing waits for the run in progress", async () => {
        closing = s.close();
        assert.equal(
          await settlesWithin(closing, 300),
          "timeout",
          "the app closed during a run",
        );
        gate.open();
        await closing;
        assert.equal(tally(slow).active, 0);
        assert.equal(tally(slow).done, tally(slow).runs);
        assert.ok(tally(slow).done >= 2);
        assert.equal(tally(slow).most, 1, "two runs of the job overlapped");
      });
    } finally {
      gate.open();
      await (closing ?? s.close());
      delete gates[slow];
      await Deno.remove(dir, { recursive: true });
    }
    const after = [ticks, slow, boom].map((k) => tally(k).runs);
    await pause(1200); // an absence: more than one tick of the schedules
    assert.deepEqual(
      [ticks, slow, boom].map((k) => tally(k).runs),
      after,
      "a job ran after close",
    );
  },
);

const BAD_SCHEDULES: [schedule: string, reason: RegExp][] = [
  ["* * *", /has 3 fields/],
  ["61 * * * *", /minute/],
  ["0 0 30 2 *", /never matches/],
  ["every day", /has 2 fields/],
];

forEachDb(
  "cron: a bad schedule stops start-up with one line",
  async (_t, db) => {
    const connection = db === "postgres"
      ? await (await startPostgres()).createDatabase()
      : undefined;
    // The schedules start at once, each on a scripts and data dir of its own.
    const errors = await Promise.all(BAD_SCHEDULES.map(async ([schedule]) => {
      const dir = await scripts({
        "a_fine.js": countingScript(`fine-${db}`, "0 0 * * *"),
        "bad_cron.js": countingScript(`bad-${db}`, schedule, "", "nightly"),
      });
      const dataDir = await Deno.makeTempDir({ prefix: "mb_cron_data_" });
      try {
        return await startServer(db, {
          scriptsDir: dir,
          dataDir,
          connection,
        })
          .then((s) => s.close(), (e: unknown) => e);
      } finally {
        await Deno.remove(dir, { recursive: true });
        await Deno.remove(dataDir, { recursive: true });
      }
    }));
    for (const [i, [schedule, reason]] of BAD_SCHEDULES.entries()) {
      const err = errors[i];
      assert.ok(err instanceof Error, `${schedule} was accepted`);
      assert.ok(!err.message.includes("\n"), err.message);
      assert.match(
        err.message,
        /^Cannot load script bad_cron\.js: cron nightly schedule /,
      );
      assert.ok(err.message.includes(JSON.stringify(schedule)), err.message);
      assert.match(err.message, reason);
    }
  },
);

/** A script whose job writes a row (its instance, the time) in `cron_hits`. */
const HITS_SCRIPT = `
export default async (app) => {
  const me = crypto.randomUUID();
  await app.db.run('CREATE TABLE IF NOT EXISTS "cron_hits" ("who" TEXT NOT NULL, "at" BIGINT NOT NULL)');
  app.cron("hit", "* * * * * *", async () => {
    await app.db.run('INSERT INTO "cron_hits" ("who", "at") VALUES (?, ?)', [me, Date.now()]);
  });
};
`;

/**
 * A second instance in a process of its own on the SQLite file of
 * `dataDir` (two connections to one file in one process would wait on each
 * other's locks); it stops when its standard input closes.
 */
async function otherProcess(dataDir: string, scriptsDir: string) {
  const code = `
import { createApp } from ${JSON.stringify(import.meta.resolve("../mod.ts"))};
const app = await createApp(${
    JSON.stringify({ dataDir, scriptsDir, quiet: true })
  });
console.log("ready");
for await (const _ of Deno.stdin.readable) { /* until closed */ }
await app.close();
`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    cwd: new URL("..", import.meta.url).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the other instance stopped: ${out}`);
    out += value;
  }
  return {
    async close() {
      await child.stdin.close();
      await reader.cancel();
      assert.equal((await child.status).code, 0);
    },
  };
}

forEachDb(
  "cron: with two instances on one database each tick runs once",
  async (_t, db) => {
    const dir = await scripts({ "hits.js": HITS_SCRIPT });
    const a = await startServer(db, { scriptsDir: dir });
    let b: { close(): Promise<void> } | undefined;
    try {
      // PostgreSQL: a second app on the same database; SQLite: another process.
      b = db === "postgres"
        ? await startServer(db, { scriptsDir: dir, connection: a.connection })
        : await otherProcess(a.dataDir, dir);
      const count = async (sql: string) =>
        Number((await a.app.storage.query(sql))[0].n);
      const hits = () => count(`SELECT COUNT(*) AS "n" FROM "cron_hits"`);
      const from = await hits();
      await until(async () => await hits() >= from + 2, 10_000);
      // Every run follows the claim of its tick, which only one instance gets:
      // were a tick run by both, the runs would outnumber the claims.
      const runs = await hits();
      const claims = await count(
        `SELECT COUNT(*) AS "n" FROM "mb_cron_runs" WHERE "job" = 'hit'`,
      );
      assert.ok(runs <= claims, `${runs} runs for ${claims} ticks`);
    } finally {
      await b?.close();
      await a.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

/** A storage whose claims all take (or none, with `takes` false); counts them. */
function fakeStorage(takes = true): Storage & { claims: number } {
  const storage = {
    claims: 0,
    run: (sql: string) => {
      if (sql.startsWith("INSERT")) storage.claims++;
      return Promise.resolve(takes ? 1 : 0);
    },
  };
  return storage as unknown as Storage & { claims: number };
}

/** A logger that keeps its lines. */
function fakeLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (m: string) => void lines.push(m);
  return {
    lines,
    app: (_l: string, m: string) => add(m),
    info: add,
    warn: add,
    error: add,
  } as unknown as Logger & { lines: string[] };
}

const job = (name: string, fn: () => unknown): CronJob => ({
  name,
  schedule: "* * * * * *",
  fn,
  source: "unit.ts",
});

// The runner's own behaviour, on fake time (FakeTimers start a quarter of a
// second into a second: the first tick falls 750 ms later, then one a second).

Deno.test("cron runner: start() replaces the jobs and stop() waits for the run in progress", async () => {
  const time = new FakeTimers().install();
  try {
    const runner = new CronRunner(fakeStorage(), fakeLog(), time.now);
    let first = 0, second = 0, finished = false;
    runner.start([job("a", () => first++)]);
    await time.tick(1000);
    assert.equal(first, 1, "one tick in the first second");
    let release = () => {};
    const held = new Promise<void>((ok) => release = ok);
    runner.start([job("a", async () => {
      second++;
      await held;
      finished = true;
    })]);
    const firstRuns = first;
    await time.tick(1000);
    assert.equal(second, 1, "the new job ran");
    assert.equal(first, firstRuns, "the replaced job ran again");
    let stopped = false;
    const stopping = runner.stop().then(() => stopped = true);
    await time.tick(0);
    assert.ok(!stopped, "stop() resolved while the run was held");
    release();
    await stopping;
    assert.ok(finished, "stop() resolved before the run ended");
    const seen = second;
    await time.tick(5000);
    assert.equal(second, seen, "a timer fired after stop()");
    assert.equal(time.pending, 0, "a timer is left after stop()");
  } finally {
    time.restore();
  }
});

Deno.test("cron runner: a tick another instance took does not run here", async () => {
  const time = new FakeTimers().install();
  try {
    const storage = fakeStorage(false);
    const runner = new CronRunner(storage, fakeLog(), time.now);
    let runs = 0;
    runner.start([job("a", () => runs++)]);
    await time.tick(3000);
    await runner.stop();
    assert.equal(runs, 0);
    assert.equal(storage.claims, 3, "each tick was claimed");
  } finally {
    time.restore();
  }
});

Deno.test("cron runner: a database failure on the claim is logged", async () => {
  const time = new FakeTimers().install();
  try {
    const failing = {
      run: () => Promise.reject(new Error("connection refused")),
    } as unknown as Storage;
    const log = fakeLog();
    const runner = new CronRunner(failing, log, time.now);
    let runs = 0;
    runner.start([job("a", () => runs++)]);
    await time.tick(1000);
    await runner.stop();
    assert.equal(runs, 0);
    assert.equal(log.lines.length, 1, "one line for one tick");
    assert.match(log.lines[0], /^Cannot run cron job a: .*connection refused$/);
  } finally {
    time.restore();
  }
});

Deno.test("cron runner: its timers do not keep a process alive", async () => {
  const code = `
import { CronRunner } from ${
    JSON.stringify(import.meta.resolve("../lib/extend/cron.ts"))
  };
const runner = new CronRunner({ run: async () => 1 }, { info() {}, error() {} });
runner.start([{ name: "n", schedule: "0 0 1 1 *", fn() {}, source: "x.js" }]);
`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "null",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});
