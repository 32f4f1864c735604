/**
 * The scenarios of `deno task bench` on one seeded database: each against
 * the bare `Deno.serve` baseline in alternating rounds, the bare handler
 * doing the same database work (bench/floor.ts for SQLite, bench/floor_pg.ts
 * for PostgreSQL), idle memory, sustained load,
 * and the paired rows (request logs on ÷ off, `--websocket` on ÷ off,
 * `--workers N` ÷ 1, a file from S3 ÷ from disk).
 *
 * @module
 */

import { runLoad, type Target } from "./load.ts";
import { PHOTOS, type Seeded, THUMB } from "./seed.ts";
import { Images } from "../tests/_images.ts";
import { benchTotpLogin, TOTP_LOGIN } from "./totp.ts";
import { type S3Files, startS3Files } from "./s3_files.ts";
import { hasS3 } from "../tests/_s3.ts";
import { profileScenario } from "./profile.ts";
import {
  combine,
  type CpuLoad,
  loadWithCpu,
  type Proc,
  rssBytes,
  start,
  stop,
} from "./procs.ts";
import {
  AGGREGATE,
  bareEventName,
  bareLogName,
  bareName,
  FILE,
  IDLE_RSS,
  LOGGED_BARE,
  LOGGING_PAIR,
  PG_BARE,
  type Row,
  S3_FILE,
  S3_PAIR,
  scenarios,
  SEARCH_SCENARIO,
  SUSTAINED,
  WEBSOCKET_PAIR,
  workersPair,
} from "./rows.ts";

/** One database's benchmark setup. */
export interface Bench {
  db: "sqlite" | "postgres";
  /** `deno` arguments of a Moonbase server, ending with `serve …`. */
  serverArgs: string[];
  dataDir: string;
  seeded: Seeded;
  rounds: number;
  seconds: number;
  /** The `--scenario` filter: true for the rows to measure. */
  wants: (name: string) => boolean;
  /** `serve --workers` of the scenarios' server (1: the flag is not given). */
  workers: number;
  /** PostgreSQL: the database's connection URL (for bench/floor_pg.ts). */
  connection?: string;
  /**
   * `--profile`: profile the S3 row here, while its gateway runs (the
   * others are profiled after, bench/run.ts), for `profileSeconds`.
   */
  profile?: boolean;
  profileSeconds?: number;
}

/** A scenario as the profiler needs it. */
export interface Scenario {
  name: string;
  target: Target;
}

/** `serverArgs` with options before the command (the global ones). */
export const withOptions = (serverArgs: string[], opts: string[]): string[] => [
  ...serverArgs.slice(0, 3),
  ...opts,
  ...serverArgs.slice(3),
];

/**
 * `serverArgs` with `serve --workers n` (unchanged for 1), and Deno's
 * `--unstable-net` (SO_REUSEPORT) in case the configuration lacks it. Apply
 * it last: it moves the positions `withOptions` relies on.
 */
export const withWorkers = (serverArgs: string[], n: number): string[] =>
  n > 1
    ? ["run", "--unstable-net", ...serverArgs.slice(1), "--workers", String(n)]
    : serverArgs;

/** The bare handler's request for each scenario it has a route for. */
function bareTargets(s: Seeded, token: string): Record<string, Target> {
  const json = { "content-type": "application/json" };
  return {
    "health": { method: "GET", path: "/health" },
    "GET by id (public)": { method: "GET", path: `/items/${s.itemId}` },
    "GET by id (token + custom rule)": {
      method: "GET",
      path: `/notes/${s.noteId}`,
      headers: { authorization: `Bearer ${token}` },
    },
    "list 50": { method: "GET", path: "/list" },
    "list filter + sort": { method: "GET", path: "/filtered" },
    [AGGREGATE]: { method: "GET", path: "/aggregate" },
    [SEARCH_SCENARIO]: { method: "GET", path: "/search" },
    "create": {
      method: "POST",
      path: "/create",
      headers: json,
      body: '{"title":"bench","n":1,"tag":"x"}',
    },
    "PATCH": {
      method: "PATCH",
      path: `/items/${s.itemId}`,
      headers: json,
      body: '{"n":5000}',
    },
  };
}

async function json(
  url: string,
  init?: RequestInit,
): Promise<{ data: Record<string, unknown> }> {
  const res = await fetch(url, init);
  return await res.json();
}

/**
 * Runs the wanted scenarios; returns their rows and the scenarios (with the
 * token and cursor of this run) for the profiler.
 */
export async function benchScenarios(
  b: Bench,
): Promise<{ rows: Row[]; scenarios: Scenario[]; profiled: string[] }> {
  const { db, seeded, wants } = b;
  const mb = await start(withWorkers(b.serverArgs, b.workers));
  const base = await start(["run", "-A", "bench/baseline.ts"]);
  const mbUrl = `http://127.0.0.1:${mb.port}`,
    baseUrl = `http://127.0.0.1:${base.port}`;
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rssBytes(mb.child.pid) / 2 ** 20;
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
  const all = scenarios(seeded, token, cursor, {
    photo: await uploadPhoto(mbUrl),
  });
  const get: Target = {
    method: "GET",
    path: `/api/v1/entities/items/${seeded.itemId}`,
  };
  // Warm both servers up (the JIT keeps improving Moonbase for ~10 s).
  await runLoad(mbUrl, get, 8);
  await runLoad(baseUrl, { method: "GET", path: "/" }, 3);
  const rows: Row[] = [];
  const bareGet: Target = { method: "GET", path: "/" };
  const pair = async (name: string, a: Proc, t: Target, other = base) =>
    rows.push(
      await alternate(b, name, a, t, other, other === base ? bareGet : t),
    );
  for (const s of all) if (wants(s.name)) await pair(s.name, mb, s.target);
  const profiled: string[] = [];
  if (wants(S3_PAIR) || wants(bareName(S3_FILE))) {
    const disk = all.find((s) => s.name === FILE)!.target;
    profiled.push(...await s3Rows(b, mb, base, disk, rows));
  }
  if (wants(TOTP_LOGIN)) {
    const r = await benchTotpLogin(mb, mbUrl, b.rounds, b.seconds);
    console.error(
      `[${db}] ${TOTP_LOGIN}: ${r.moonbase.rps.toFixed(1)} vs ${
        r.baseline.rps.toFixed(1)
      } logins/s (ratio ${
        r.ratio.toFixed(2)
      }), errors ${r.moonbase.errors} vs ${r.baseline.errors}`,
    );
    rows.push({ db, name: TOTP_LOGIN, ...r });
  }
  if (db === "sqlite") await sqliteFloors(b, seeded, token, pair);
  else await pgFloor(b, seeded, token, pair);
  rows.push({ db, name: IDLE_RSS, value: idleRss });
  if (wants(SUSTAINED)) {
    // A cost that grows with the number of requests served (postgres.js's
    // pool once doubled its CPU per request within a minute) shows as the
    // last window falling behind the first.
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
  }
  if (wants(LOGGING_PAIR)) {
    // A second server with request logs off, warmed up alike.
    const off = await start(
      withWorkers(
        withOptions(b.serverArgs, ["--logLevel", "error"]),
        b.workers,
      ),
    );
    await runLoad(`http://127.0.0.1:${off.port}`, get, 8);
    await pair(LOGGING_PAIR, mb, get, off);
    await stop(off);
  }
  if (wants(WEBSOCKET_PAIR)) {
    // A second server serving WebSocket upgrades, warmed up alike, against
    // the first (without): what upgrades cost ordinary requests.
    const on = await start(
      withWorkers(withOptions(b.serverArgs, ["--websocket"]), b.workers),
    );
    await runLoad(`http://127.0.0.1:${on.port}`, get, 8);
    await pair(WEBSOCKET_PAIR, on, get, mb);
    await stop(on);
  }
  await stop(mb);
  const n = Math.max(2, b.workers);
  if (wants(workersPair(n))) rows.push(await workers(b, n, get));
  await stop(base);
  return { rows, scenarios: all, profiled };
}

/**
 * The S3 rows (bench/s3_files.ts): the photo from S3 ÷ the same photo from
 * disk (`mb`), and the bare handler's signed GET of it against the baseline;
 * with `--profile` the S3 row's profile. Returns the rows profiled. Without
 * Ceph installed, or when the gateway does not start, the rows say so (the
 * rest of the run goes on).
 */
async function s3Rows(
  b: Bench,
  mb: Proc,
  base: Proc,
  disk: Target,
  rows: Row[],
): Promise<string[]> {
  const notMeasured = (why: string) => {
    console.error(`[${b.db}] S3 rows not measured: ${why}`);
    for (const name of [S3_PAIR, bareName(S3_FILE)].filter(b.wants)) {
      rows.push({ db: b.db, name, text: `not measured: ${why}` });
    }
    return [];
  };
  if (!hasS3()) {
    return notMeasured(
      "Ceph's radosgw, ceph-mon and ceph-osd are not installed",
    );
  }
  console.error(`[${b.db}] starting the S3 gateway…`);
  let s3: S3Files;
  try {
    s3 = await startS3Files({
      serverArgs: (url) =>
        withWorkers(withOptions(b.serverArgs, ["--files", url]), b.workers),
      diskUrl: `http://127.0.0.1:${mb.port}`,
      diskPath: disk.path,
      bare: b.wants(bareName(S3_FILE)),
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return notMeasured(why.split("\n")[0].slice(0, 200));
  }
  const profiled: string[] = [];
  try {
    if (b.wants(S3_PAIR)) {
      await runLoad(`http://127.0.0.1:${s3.moonbase.port}`, s3.target, 5);
      rows.push(await alternate(b, S3_PAIR, s3.moonbase, s3.target, mb, disk));
      if (b.profile) {
        console.error(`[${b.db}] profiling ${S3_PAIR}…`);
        const path = await profileScenario({
          db: b.db,
          name: S3_PAIR,
          serverArgs: s3.serverArgs,
          env: s3.env,
          target: s3.target,
          seconds: b.profileSeconds ?? 6,
          note: "`--files s3://…` on a local RADOS Gateway",
        });
        console.error(`[${b.db}] profile: ${path}`);
        profiled.push(`${b.db}/${S3_PAIR}`);
      }
    }
    if (s3.bare) {
      const root: Target = { method: "GET", path: "/" };
      rows.push(
        await alternate(b, bareName(S3_FILE), s3.bare, root, base, root),
      );
    }
  } finally {
    await s3.close();
  }
  return profiled;
}

/**
 * Uploads the file scenarios' image (a 1600 × 1200 JPEG) and asks for its
 * thumbnail once (made then, served from its file after); its stored name.
 */
async function uploadPhoto(url: string): Promise<string> {
  const images = new Images();
  try {
    const form = new FormData();
    const jpeg = await images.make("jpeg", 1600, 1200);
    form.set("img", new File([jpeg.slice()], "photo.jpg"));
    const res = await fetch(`${url}/api/v1/entities/${PHOTOS}`, {
      method: "POST",
      body: form,
    });
    const body = await res.json();
    if (res.status !== 201) {
      throw new Error(`Cannot upload the photo: ${JSON.stringify(body)}`);
    }
    const name = String(body.data.img);
    const thumb = await fetch(
      `${url}/api/files/${PHOTOS}/${name}?thumb=${THUMB}`,
    );
    await thumb.body?.cancel();
    if (thumb.status !== 200) {
      throw new Error(`Cannot make the thumbnail: ${thumb.status}`);
    }
    return name;
  } finally {
    images.close();
  }
}

/** Measures a bare handler's row against the baseline. */
type Pair = (name: string, a: Proc, t: Target) => Promise<unknown>;

/**
 * The SQLite ceilings (bench/floor.ts): the same SQLite work in a bare
 * handler, and the same with Moonbase's request log row (logs on).
 */
async function sqliteFloors(
  b: Bench,
  seeded: Seeded,
  token: string,
  pair: Pair,
): Promise<void> {
  const bare = Object.entries(bareTargets(seeded, token))
    .filter(([name]) => b.wants(bareName(name)));
  if (bare.length) {
    const floor = await start([
      "run",
      "-A",
      "bench/floor.ts",
      `${b.dataDir}/moonbase.db`,
    ]);
    for (const [name, t] of bare) await pair(bareName(name), floor, t);
    if (b.wants(bareEventName("PATCH"))) {
      // PATCH with realtime on, as Moonbase does it by hand: BEGIN
      // IMMEDIATE, the previous record, UPDATE … RETURNING, the event, COMMIT.
      await pair(bareEventName("PATCH"), floor, {
        method: "PATCH",
        path: `/items-rt/${seeded.itemId}`,
        headers: { "content-type": "application/json" },
        body: '{"n":5000}',
      });
    }
    await stop(floor);
  }
  const logged = Object.entries(bareTargets(seeded, token))
    .filter(([name]) => LOGGED_BARE.includes(name))
    .filter(([name]) => b.wants(bareLogName(name)));
  if (logged.length) {
    const logs = await Deno.makeTempDir({ prefix: "mb_floor_logs_" });
    const floor = await start([
      "run",
      "-A",
      "bench/floor.ts",
      `${b.dataDir}/moonbase.db`,
      `${logs}/logs.db`,
    ]);
    for (const [name, t] of logged) await pair(bareLogName(name), floor, t);
    await stop(floor);
    // A scratch directory left in the temp dir harms nothing.
    await Deno.remove(logs, { recursive: true }).catch(() => {});
  }
}

/**
 * The PostgreSQL ceiling (bench/floor_pg.ts): the same statements on the
 * same database with postgres.js, Moonbase's pool size, no framework.
 */
async function pgFloor(
  b: Bench,
  seeded: Seeded,
  token: string,
  pair: Pair,
): Promise<void> {
  const bare = Object.entries(bareTargets(seeded, token))
    .filter(([name]) => PG_BARE.includes(name))
    .filter(([name]) => b.wants(bareName(name)));
  if ((!bare.length && !b.wants(bareEventName("PATCH"))) || !b.connection) {
    return;
  }
  const floor = await start(["run", "-A", "bench/floor_pg.ts", b.connection]);
  for (const [name, t] of bare) await pair(bareName(name), floor, t);
  if (b.wants(bareEventName("PATCH"))) {
    // PATCH with realtime on, as Moonbase fuses it: one statement.
    await pair(bareEventName("PATCH"), floor, {
      method: "PATCH",
      path: `/items-rt/${seeded.itemId}`,
      headers: { "content-type": "application/json" },
      body: '{"n":5000}',
    });
  }
  await stop(floor);
}

/**
 * `a` serving `t` in rounds alternating with `other` serving `otherT`, after
 * a warm-up of `a`; the row's baseline is `other`.
 */
async function alternate(
  b: Bench,
  name: string,
  a: Proc,
  t: Target,
  other: Proc,
  otherT: Target,
): Promise<Row> {
  await runLoad(`http://127.0.0.1:${a.port}`, t, 2); // warm-up
  const as: CpuLoad[] = [], os: CpuLoad[] = [];
  // Alternate short runs so drift on a shared machine hits both sides alike.
  for (let i = 0; i < b.rounds; i++) {
    os.push(await loadWithCpu(other, otherT, b.seconds));
    as.push(await loadWithCpu(a, t, b.seconds));
  }
  const m = combine(as), o = combine(os);
  console.error(
    `[${b.db}] ${name}: ${m.rps.toFixed(0)} vs ${
      o.rps.toFixed(0)
    } req/s (ratio ${(m.rps / o.rps).toFixed(2)}), CPU ${
      m.cpuPerRequest?.toFixed(1)
    } vs ${o.cpuPerRequest?.toFixed(1)} µs/req, p99 ${
      m.p99.toFixed(1)
    } ms, errors ${m.errors}, non-2xx ${m.non2xx}`,
  );
  return { db: b.db, name, moonbase: m, baseline: o, ratio: m.rps / o.rps };
}

/**
 * GET by id on `serve --workers n` against `--workers 1`, alternating; a
 * note instead when the server refuses the flag (it ends before listening).
 */
async function workers(b: Bench, n: number, get: Target): Promise<Row> {
  const name = workersPair(n);
  let many: Proc;
  try {
    many = await start(withWorkers(b.serverArgs, n));
  } catch {
    console.error(`[${b.db}] ${name}: the server refused --workers`);
    return {
      db: b.db,
      name,
      text: "not measured: the server refused `serve --workers`",
    };
  }
  const one = await start(b.serverArgs);
  try {
    await runLoad(`http://127.0.0.1:${many.port}`, get, 5);
    await runLoad(`http://127.0.0.1:${one.port}`, get, 5);
    return await alternate(b, name, many, get, one, get);
  } finally {
    await stop(many);
    await stop(one);
  }
}
