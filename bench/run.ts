/**
 * `deno task bench`: Moonbase against a bare `Deno.serve` baseline in the
 * same run, scenario by scenario (wrk when installed, else a Deno load
 * generator; bench/measure.ts), then realtime with 1 000 SSE subscribers
 * (bench/realtime.ts), on SQLite and with `--pg` also on a throwaway
 * PostgreSQL. Prints a table and writes bench/results.md with the targets
 * (bench/targets.ts).
 *
 * - `--only realtime` runs just the realtime part and replaces just that
 *   section of the report.
 * - `--scenario <text>` runs only the rows whose name contains the text
 *   (any case; `a|b`: either); such a partial run writes the report only
 *   with `--out`.
 * - `--profile` then profiles each missed target (with `--scenario`: each
 *   target measured) into bench/profiles/ (bench/profile.ts).
 * - `--db postgres` runs PostgreSQL alone (with `--scenario`: one database's
 *   figures without waiting for the other's).
 * - `--async-commit` (PostgreSQL): the bench database commits without
 *   waiting for its WAL flush (`synchronous_commit = off`; fsync stays
 *   on): writes then cost CPU rather than a disk's flush, for a machine
 *   whose disk is shared and busy.
 * - `--workers N` serves the scenarios with `serve --workers N`; the paired
 *   row "GET by id: --workers N ÷ 1" (N at least 2) runs either way.
 *
 * @module
 */

import { parseArgs } from "node:util";
import postgres from "postgres";
import { seed } from "./seed.ts";
import { startDurablePostgres } from "../tests/_pg.ts";
import { SECRET } from "./procs.ts";
import {
  benchScenarios,
  type Scenario,
  withOptions,
  withWorkers,
} from "./measure.ts";
import { benchRealtime } from "./realtime.ts";
import {
  REALTIME_ON,
  realtimeArgs,
  SUBSCRIBE_PATH,
  SUBSCRIBERS,
} from "./realtime_args.ts";
import type { RealtimeRow } from "./realtime_report.ts";
import {
  LOGGING_PAIR,
  REALTIME_PAIR,
  type Row,
  S3_PAIR,
  SEARCH_SCENARIO,
  WEBSOCKET_PAIR,
} from "./rows.ts";
import { checks, missed, targetsMet } from "./targets.ts";
import { writeResults } from "./report.ts";
import { type ProfileJob, profileScenario } from "./profile.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    pg: { type: "boolean" },
    db: { type: "string" },
    "async-commit": { type: "boolean" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    out: { type: "string" },
    label: { type: "string", default: "" },
    only: { type: "string" },
    scenario: { type: "string" },
    profile: { type: "boolean" },
    workers: { type: "string", default: "1" },
  },
});
if (args.values.only !== undefined && args.values.only !== "realtime") {
  throw new Error(`--only ${args.values.only}: only "realtime" is known`);
}
const ONLY_REALTIME = args.values.only === "realtime";
const SECONDS = Number(args.values.seconds);
const ROUNDS = Math.max(1, Number(args.values.rounds));
const WORKERS = Math.max(1, Number(args.values.workers) || 1);
const FILTER = args.values.scenario?.toLowerCase();
const wants = (name: string) =>
  FILTER === undefined ||
  FILTER.split("|").some((f) => name.toLowerCase().includes(f));
/** Seconds of load per profile. */
const PROFILE_SECONDS = Math.max(5, SECONDS * 2);
const OUT = args.values.out ??
  (FILTER === undefined ? "bench/results.md" : undefined);

/** What to profile on one database: the rows' scenarios and servers. */
function profileJobs(
  db: string,
  rows: Row[],
  serverArgs: string[],
  scenarios: Scenario[],
): ProfileJob[] {
  const names = [
    ...new Set(
      FILTER === undefined
        ? missed(rows).filter((c) => c.db === db).map((c) =>
          c.scenario ?? c.name
        )
        : checks(rows).filter((c) =>
          c.db === db && (c.ratioGoal || c.scenario) &&
          c.got !== "not measured"
        ).map((c) => c.scenario ?? c.name),
    ),
  ].filter((name) => FILTER === undefined || wants(name))
    // Profiled while its S3 gateway runs (bench/measure.ts).
    .filter((name) => name !== S3_PAIR);
  const get = scenarios.find((s) => s.name === "GET by id (public)")!.target;
  const seconds = PROFILE_SECONDS;
  const args = withWorkers(serverArgs, WORKERS);
  const note = WORKERS > 1 ? `--workers ${WORKERS}: isolate 0 only` : "";
  return names.map((name): ProfileJob => {
    if (name === REALTIME_PAIR) {
      return {
        db,
        name,
        serverArgs: realtimeArgs(serverArgs, REALTIME_ON),
        target: get,
        subscribers: { count: SUBSCRIBERS, path: SUBSCRIBE_PATH },
        seconds,
        note: `realtime on, ${SUBSCRIBERS} idle SSE subscribers`,
      };
    }
    if (name === LOGGING_PAIR) {
      return { db, name, serverArgs: args, target: get, seconds, note };
    }
    if (name === WEBSOCKET_PAIR) {
      const on = withWorkers(
        withOptions(serverArgs, ["--websocket"]),
        WORKERS,
      );
      return { db, name, serverArgs: on, target: get, seconds, note };
    }
    const s = scenarios.find((s) => s.name === name)!;
    return { db, name, serverArgs: args, target: s.target, seconds, note };
  });
}

/** A fresh PostgreSQL database (fsync on; `--async-commit`: see above). */
async function benchDatabase(): Promise<string> {
  const url = await (await startDurablePostgres()).createDatabase();
  if (args.values["async-commit"]) {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const name = new URL(url).pathname.slice(1);
    await sql.unsafe(
      `ALTER DATABASE "${name}" SET synchronous_commit = off`,
    );
    await sql.end();
  }
  return url;
}

/** Seeds a database, then the scenarios, realtime and profiles. */
async function benchDb(
  db: "sqlite" | "postgres",
): Promise<{ rows: Row[]; realtime: RealtimeRow[]; profiled: string[] }> {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_bench_" });
  const dbArgs = db === "postgres"
    ? ["--database", "PSQL", "--connection", await benchDatabase()]
    : [];
  const cfg = db === "postgres"
    ? { dataDir, database: "PSQL", connection: dbArgs[3], jwtSecret: SECRET }
    : { dataDir, jwtSecret: SECRET };
  // The search scenario's 100 000 records only when it runs.
  const search = wants(SEARCH_SCENARIO);
  console.error(
    `[${db}] seeding 10000 records${search ? " and 100000 searchable" : ""}…`,
  );
  const seeded = await seed(cfg, 10_000, search);
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
  const bench = {
    db,
    serverArgs,
    dataDir,
    seeded,
    rounds: ROUNDS,
    seconds: SECONDS,
    wants,
    workers: WORKERS,
    connection: db === "postgres" ? dbArgs[3] : undefined,
    profile: args.values.profile,
    profileSeconds: PROFILE_SECONDS,
  };
  const { rows, scenarios, profiled } = ONLY_REALTIME
    ? { rows: [], scenarios: [], profiled: [] }
    : await benchScenarios(bench);
  let realtime: RealtimeRow[] = [];
  if (ONLY_REALTIME || wants(REALTIME_PAIR)) {
    const rt = await benchRealtime({
      db,
      serverArgs,
      itemId: seeded.itemId,
      rounds: ROUNDS,
      seconds: SECONDS,
      baseline: db === "sqlite",
    });
    realtime = rt.rows;
    if (rt.pair && !ONLY_REALTIME) rows.push(rt.pair);
  }
  if (args.values.profile && !ONLY_REALTIME) {
    for (const job of profileJobs(db, rows, serverArgs, scenarios)) {
      console.error(`[${db}] profiling ${job.name}…`);
      const path = await profileScenario(job);
      console.error(`[${db}] profile: ${path}`);
      profiled.push(`${db}/${job.name}`);
    }
  }
  // A scratch directory left in the temp dir harms nothing.
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  return { rows, realtime, profiled };
}

const rows: Row[] = [], realtime: RealtimeRow[] = [], profiled: string[] = [];
for (
  const db of args.values.db === "postgres"
    ? ["postgres"] as const
    : args.values.pg
    ? ["sqlite", "postgres"] as const
    : ["sqlite"] as const
) {
  const r = await benchDb(db);
  rows.push(...r.rows);
  realtime.push(...r.realtime);
  profiled.push(...r.profiled);
}
const report = await writeResults({
  rows,
  realtime,
  profiles: new Set(profiled),
  runs: `${ROUNDS} alternating rounds of ${SECONDS} s`,
  label: args.values.label,
  path: OUT,
});
console.log(report);
if (OUT === undefined) {
  console.log("(a --scenario run: no report written; --out <file> writes it)");
}
if (!ONLY_REALTIME) {
  console.log(
    targetsMet(rows) ? "All targets met." : "Some targets missed (see above).",
  );
}
Deno.exit(0);
