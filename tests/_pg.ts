/**
 * A throwaway PostgreSQL 15 cluster for the test run: started lazily on a free
 * port in a temp dir owned by `postgres`, stopped when the test process exits.
 *
 * `deno test` loads every test file in a worker of its own, and module state
 * is per worker; so the first worker of the process that asks starts the
 * cluster, and the others find its address in a directory named after the
 * process (one cluster per process, not one per test file). A watchdog
 * outside the process stops it and removes its files once the process is
 * gone, however it ends.
 *
 * @module
 */

import postgres from "postgres";
import { pause } from "./_wait.ts";

const BIN = Deno.env.get("MB_PG_BIN") ?? "/usr/lib/postgresql/15/bin";

/** A running cluster. */
export interface PgCluster {
  /** Connection URL of the default `postgres` database. */
  readonly url: string;
  /** Creates a fresh, empty database and returns its connection URL. */
  createDatabase(): Promise<string>;
  /** Stops the server at once (`pg_ctl stop -m immediate`): a database outage. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port. */
  restart(): Promise<void>;
  /** The postmaster's pid and its children's (to freeze it with SIGSTOP). */
  pids(): Promise<number[]>;
  /** Stops the server if it runs and removes its directory (now, not at exit). */
  destroy(): Promise<void>;
}

let started: Promise<PgCluster> | undefined;
let counter = 0;
/** Tells apart the databases that workers of one process create. */
const worker = crypto.randomUUID().slice(0, 8);

/** True when the PostgreSQL server binaries exist on this machine. */
export function hasPostgres(): boolean {
  try {
    return Deno.statSync(`${BIN}/initdb`).isFile;
  } catch {
    return false;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function run(args: string[], asPostgres = true): Promise<string> {
  const cmd = asPostgres && Deno.uid() === 0
    ? new Deno.Command("runuser", { args: ["-u", "postgres", "--", ...args] })
    : new Deno.Command(args[0], { args: args.slice(1) });
  const out = await cmd.output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  if (!out.success) {
    throw new Error(`Cannot run ${args[0]}: ${text.trim()}`);
  }
  return text;
}

/** A fresh database on the cluster at `url` (its `postgres` database). */
async function createDatabaseOn(url: string): Promise<string> {
  const name = `mb_test_${Deno.pid}_${worker}_${++counter}`;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return url.replace(/\/postgres$/, `/${name}`);
}

/**
 * Starts a cluster in `dir` (a new temp dir if not given). A durable cluster
 * keeps synchronous_commit on; a shared one is stopped by a watchdog when the
 * process is gone, any other at this worker's exit (or by `destroy()`).
 */
async function start(
  durable: boolean | "fsync" = false,
  given?: string,
): Promise<PgCluster> {
  const dir = given ?? await Deno.makeTempDir({ prefix: "mb_pg_" });
  await Deno.chmod(dir, 0o777);
  if (Deno.uid() === 0) await run(["chown", "postgres:postgres", dir], false);
  const data = `${dir}/data`;
  const port = freePort();
  await run([
    `${BIN}/initdb`,
    "-D",
    data,
    "-U",
    "postgres",
    "--auth=trust",
    "--no-sync",
    "-E",
    "UTF8",
  ]);
  // A durable cluster keeps synchronous_commit on: an immediate stop then
  // loses nothing that was acknowledged. The shared cluster serves every
  // test file of the process (several at once with --parallel).
  // "fsync": PostgreSQL's defaults (the benchmark measures a real setup).
  const safety = durable === "fsync"
    ? ""
    : ` -c fsync=off -c full_page_writes=off${
      durable ? "" : " -c synchronous_commit=off"
    }`;
  const opts =
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1${safety} -c max_connections=${
      given ? 400 : 200
    }`;
  let running = false;
  const up = async () => {
    await run([
      `${BIN}/pg_ctl`,
      "-D",
      data,
      "-o",
      opts,
      "-l",
      `${dir}/log`,
      "-w",
      "start",
    ]);
    running = true;
  };
  const down = async () => {
    await run([`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "stop"]);
    running = false;
  };
  await up();
  const atExit = () => {
    const args = ["-D", data, "-m", "immediate", "stop"];
    const cmd = Deno.uid() === 0
      ? new Deno.Command("runuser", {
        args: ["-u", "postgres", "--", `${BIN}/pg_ctl`, ...args],
      })
      : new Deno.Command(`${BIN}/pg_ctl`, { args });
    cmd.outputSync();
    Deno.removeSync(dir, { recursive: true });
  };
  if (given) await watchdog(dir, data);
  else globalThis.addEventListener("unload", atExit);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    createDatabase() {
      return createDatabaseOn(url);
    },
    async stop() {
      await down();
    },
    async restart() {
      await up();
    },
    async destroy() {
      if (given) {
        throw new Error("The shared cluster lives as long as the process");
      }
      globalThis.removeEventListener("unload", atExit);
      if (running) await down().catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
    async pids() {
      const head = await Deno.readTextFile(`${data}/postmaster.pid`);
      const main = Number(head.split("\n")[0]);
      const out = [main];
      for await (const e of Deno.readDir("/proc")) {
        if (!/^\d+$/.test(e.name)) continue;
        try {
          const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
          const ppid = Number(
            stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1],
          );
          if (ppid === main) out.push(Number(e.name));
        } catch { /* gone */ }
      }
      return out;
    },
  };
}

/**
 * Stops the cluster in `dir` and removes `dir` once this process is gone: a
 * shell in a session of its own (so Ctrl-C on the tests does not reach it)
 * polls the process id.
 */
async function watchdog(dir: string, data: string): Promise<void> {
  const q = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`;
  const pgCtl = [`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "stop"]
    .map(q).join(" ");
  const stop = Deno.uid() === 0 ? `runuser -u postgres -- ${pgCtl}` : pgCtl;
  const script = `while kill -0 ${Deno.pid} 2>/dev/null; do sleep 1; done; ` +
    `${stop} >/dev/null 2>&1; rm -rf ${q(dir)}`;
  const out = await new Deno.Command("setsid", {
    args: ["-f", "sh", "-c", script],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (!out.success) throw new Error("Cannot start the cluster's watchdog");
}

/** This process's key: its id and start time (ids are reused). */
function processKey(): string {
  try {
    const stat = Deno.readTextFileSync(`/proc/${Deno.pid}/stat`);
    const since = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return `${Deno.pid}_${since}`;
  } catch {
    return String(Deno.pid);
  }
}

/** The shared cluster as the workers see it: they may only add databases. */
function attach(url: string): PgCluster {
  const refuse = () =>
    Promise.reject(
      new Error("The shared cluster cannot be stopped (startOwnPostgres can)"),
    );
  return {
    url,
    createDatabase: () => createDatabaseOn(url),
    stop: refuse,
    restart: refuse,
    pids: refuse,
    destroy: refuse,
  };
}

/**
 * The process's shared cluster: the first worker to create its directory
 * starts it and writes its URL there; the others wait for that URL.
 */
async function shared(): Promise<PgCluster> {
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  const dir = `${tmp}/mb_pg_shared_${processKey()}`;
  let owner = true;
  try {
    await Deno.mkdir(dir);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    owner = false;
  }
  if (owner) {
    try {
      const { url } = await start(false, dir);
      await Deno.writeTextFile(`${dir}/url.tmp`, url);
      await Deno.rename(`${dir}/url.tmp`, `${dir}/url`);
      return attach(url);
    } catch (e) {
      await Deno.writeTextFile(`${dir}/error`, String(e)).catch(() => {});
      throw e;
    }
  }
  const read = (name: string) =>
    Deno.readTextFile(`${dir}/${name}`).catch(() => undefined);
  const deadline = Date.now() + 180_000;
  for (;;) {
    const url = await read("url");
    if (url) return attach(url);
    const error = await read("error");
    if (error) throw new Error(`The shared cluster did not start: ${error}`);
    if (Date.now() > deadline) {
      throw new Error(`The shared cluster did not start in ${dir}`);
    }
    await pause(50);
  }
}

/**
 * Starts (once per process) and returns the throwaway cluster.
 *
 * @example
 * ```ts ignore
 * const pg = await startPostgres();
 * const url = await pg.createDatabase();
 * ```
 */
export function startPostgres(): Promise<PgCluster> {
  started ??= shared();
  return started;
}

/**
 * Starts a cluster of the caller's own (not shared with other tests of the
 * process, synchronous_commit on), for tests that stop, freeze and restart
 * it; stopped at exit, or earlier by its `destroy()`.
 */
export function startOwnPostgres(): Promise<PgCluster> {
  return start(true);
}

/**
 * Starts a cluster of the caller's own with PostgreSQL's default durability
 * (fsync, full-page writes, synchronous commit): for the benchmark.
 */
export function startDurablePostgres(): Promise<PgCluster> {
  return start("fsync");
}

/**
 * Waits until `n` statements of `sql`'s database wait for a lock (or `done`
 * says there is nothing more to wait for), with a deadline of 20 s.
 */
export async function lockWaiters(
  sql: postgres.Sql,
  n: number,
  done: () => boolean = () => false,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!done()) {
    const [{ c }] = await sql.unsafe(
      `SELECT COUNT(*)::int AS "c" FROM pg_stat_activity WHERE "datname" = current_database() AND "wait_event_type" = 'Lock'`,
    );
    if (c >= n) return;
    if (Date.now() > deadline) {
      throw new Error(`Cannot see ${n} waiting statements in time`);
    }
    await pause(20);
  }
}
