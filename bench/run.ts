/**
 * `deno task bench`: Moonbase against a bare `Deno.serve` baseline in the
 * same run, scenario by scenario (wrk when installed, else a Deno load
 * generator), then realtime with 1 000 SSE subscribers (bench/realtime.ts),
 * on SQLite and with `--pg` also on a throwaway PostgreSQL. Prints a table
 * and writes bench/results.md. `--only realtime` runs just the realtime
 * part and replaces just that section of the report.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { runLoad, type Target } from "./load.ts";
import { seed, type Seeded } from "./seed.ts";
import { startPostgres } from "../tests/_pg.ts";
import {
  combine,
  loadWithCpu,
  rssBytes,
  SECRET,
  start,
  stop,
} from "./procs.ts";
import { benchRealtime } from "./realtime.ts";
import type { RealtimeRow } from "./realtime_report.ts";
import {
  LOGGING_PAIR,
  type Row,
  scenarios,
  SUSTAINED,
  targetsMet,
  writeResults,
} from "./report.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    pg: { type: "boolean" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    out: { type: "string", default: "bench/results.md" },
    label: { type: "string", default: "" },
    only: { type: "string" },
  },
});
if (args.values.only !== undefined && args.values.only !== "realtime") {
  throw new Error(`--only ${args.values.only}: only "realtime" is known`);
}
const ONLY_REALTIME = args.values.only === "realtime";
const SECONDS = Number(args.values.seconds);
const ROUNDS = Math.max(1, Number(args.values.rounds));
const rssMb = (pid: number) => rssBytes(pid) / 2 ** 20;

async function json(
  url: string,
  init?: RequestInit,
): Promise<{ data: Record<string, unknown> }> {
  const res = await fetch(url, init);
  return await res.json();
}

/** The scenarios against a bare baseline, on one seeded database. */
async function benchScenarios(
  db: "sqlite" | "postgres",
  serverArgs: string[],
  dataDir: string,
  seeded: Seeded,
): Promise<Row[]> {
  const mb = await start(serverArgs);
  const base = await start(["run", "-A", "bench/baseline.ts"]);
  const mbUrl = `http://127.0.0.1:${mb.port}`,
    baseUrl = `http://127.0.0.1:${base.port}`;
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rssMb(mb.child.pid);
  const login = await json(`${mbUrl}/api/v1/auth/users/login`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": "192.0.2.1",
    },
    body: JSON.stringify({ identity: seeded.email, password: seeded.password }),
  });
  const token = String(login.data.token);
  let cursor = "";
  for (let page = 1; page < 200; page++) {
    const r = await json(
      `${mbUrl}/api/v1/entities/items?limit=50${
        cursor ? `&after=${cursor}` : ""
      }`,
    );
    cursor = encodeURIComponent(String(r.data.cursor));
  }
  // Warm both servers up (the JIT keeps improving Moonbase for ~10 s).
  await runLoad(mbUrl, {
    method: "GET",
    path: `/api/v1/entities/items/${seeded.itemId}`,
  }, 8);
  await runLoad(baseUrl, { method: "GET", path: "/" }, 3);
  const rows: Row[] = [];
  const measure = async (
    name: string,
    t: Target,
    server = mb,
  ): Promise<void> => {
    await runLoad(`http://127.0.0.1:${server.port}`, t, 2); // warm-up
    const bs = [], ms = [];
    // Alternate short runs so drift on a shared machine hits both sides alike.
    for (let i = 0; i < ROUNDS; i++) {
      bs.push(await loadWithCpu(base, { method: "GET", path: "/" }, SECONDS));
      ms.push(await loadWithCpu(server, t, SECONDS));
    }
    const b = combine(bs), m = combine(ms);
    rows.push({ db, name, moonbase: m, baseline: b, ratio: m.rps / b.rps });
    console.error(
      `[${db}] ${name}: ${m.rps.toFixed(0)} req/s vs ${
        b.rps.toFixed(0)
      } (ratio ${(m.rps / b.rps).toFixed(2)}), CPU ${
        m.cpuPerRequest?.toFixed(1)
      } vs ${b.cpuPerRequest?.toFixed(1)} µs/req, p99 ${
        m.p99.toFixed(1)
      } ms, errors ${m.errors}, non-2xx ${m.non2xx}`,
    );
  };
  for (const s of scenarios(seeded, token, cursor)) {
    await measure(s.name, s.target);
  }
  if (db === "sqlite") {
    // The ceiling: the same SQLite work in a bare handler (see bench/floor.ts).
    const floor = await start([
      "run",
      "-A",
      "bench/floor.ts",
      `${dataDir}/moonbase.db`,
    ]);
    const f = floor;
    await measure("bare handler: GET by id", {
      method: "GET",
      path: `/items/${seeded.itemId}`,
    }, f);
    await measure("bare handler: GET with token + owner check", {
      method: "GET",
      path: `/notes/${seeded.noteId}`,
      headers: { authorization: `Bearer ${token}` },
    }, f);
    await measure("bare handler: list 50", { method: "GET", path: "/list" }, f);
    await measure("bare handler: create", {
      method: "POST",
      path: "/create",
      headers: { "content-type": "application/json" },
      body: '{"title":"bench","n":1,"tag":"x"}',
    }, f);
    await stop(floor);
  }
  rows.push({ db, name: "idle RSS (MB)", value: idleRss });
  const get = {
    method: "GET",
    path: `/api/v1/entities/items/${seeded.itemId}`,
  };
  // Sustained load: a cost that grows with the number of requests served
  // (postgres.js's pool once doubled its CPU per request within a minute)
  // shows as the last window falling behind the first.
  const windows = [];
  for (let i = 0; i < 6; i++) windows.push(await loadWithCpu(mb, get, 5));
  const first = combine(windows.slice(0, 1)),
    last = combine(windows.slice(-1));
  rows.push({
    db,
    name: SUSTAINED,
    moonbase: last,
    baseline: first,
    ratio: last.rps / first.rps,
  });
  console.error(
    `[${db}] ${SUSTAINED}: ${
      windows.map((w) => (w.requests / 5).toFixed(0)).join(", ")
    } req/s`,
  );
  // Logging off, for the "logging costs < 10%" check: a second server with
  // request logs off, warmed up alike, measured in alternation with this one.
  const off = await start([
    ...serverArgs.slice(0, 3),
    "--logLevel",
    "error",
    ...serverArgs.slice(3),
  ]);
  await runLoad(`http://127.0.0.1:${off.port}`, get, 8);
  await measure("GET by id (logging off)", get, off);
  await runLoad(mbUrl, get, 2);
  const ons = [], offs = [];
  for (let i = 0; i < ROUNDS; i++) {
    ons.push(await loadWithCpu(mb, get, SECONDS));
    offs.push(await loadWithCpu(off, get, SECONDS));
  }
  const on = combine(ons), offR = combine(offs);
  rows.push({
    db,
    name: LOGGING_PAIR,
    moonbase: on,
    baseline: offR,
    ratio: on.rps / offR.rps,
  });
  console.error(
    `[${db}] ${LOGGING_PAIR}: ${on.rps.toFixed(0)} vs ${
      offR.rps.toFixed(0)
    } req/s (ratio ${(on.rps / offR.rps).toFixed(2)}), CPU ${
      on.cpuPerRequest?.toFixed(1)
    } vs ${offR.cpuPerRequest?.toFixed(1)} µs/req`,
  );
  await stop(off);
  await stop(mb);
  await stop(base);
  return rows;
}

/** Seeds a database, then the scenarios (unless `--only realtime`) and realtime. */
async function benchDb(
  db: "sqlite" | "postgres",
): Promise<{ rows: Row[]; realtime: RealtimeRow[] }> {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_bench_" });
  const dbArgs = db === "postgres"
    ? [
      "--database",
      "PSQL",
      "--connection",
      await (await startPostgres()).createDatabase(),
    ]
    : [];
  const cfg = db === "postgres"
    ? { dataDir, database: "PSQL", connection: dbArgs[3], jwtSecret: SECRET }
    : { dataDir, jwtSecret: SECRET };
  console.error(`[${db}] seeding 10000 records…`);
  const seeded = await seed(cfg);
  const serverArgs = [
    "run",
    "-A",
    "main.ts",
    "--dataDir",
    dataDir,
    ...dbArgs,
    "--trustProxy",
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
  ];
  const rows = ONLY_REALTIME
    ? []
    : await benchScenarios(db, serverArgs, dataDir, seeded);
  const realtime = await benchRealtime({
    db,
    serverArgs,
    itemId: seeded.itemId,
    rounds: ROUNDS,
    seconds: SECONDS,
    baseline: db === "sqlite",
  });
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  return { rows, realtime };
}

const rows: Row[] = [], realtime: RealtimeRow[] = [];
for (
  const db of args.values.pg
    ? ["sqlite", "postgres"] as const
    : ["sqlite"] as const
) {
  const r = await benchDb(db);
  rows.push(...r.rows);
  realtime.push(...r.realtime);
}
const report = await writeResults(
  rows,
  args.values.out,
  `${ROUNDS} alternating rounds of ${SECONDS} s`,
  args.values.label,
  realtime,
);
console.log(report);
if (!ONLY_REALTIME) {
  console.log(
    targetsMet(rows) ? "All targets met." : "Some targets missed (see above).",
  );
}
Deno.exit(0);
