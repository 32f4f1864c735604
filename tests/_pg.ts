/**
 * A throwaway PostgreSQL 15 cluster for the test run: started lazily on a free
 * port in a temp dir owned by `postgres`, stopped when the test process exits.
 *
 * @module
 */

import postgres from "postgres";

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

async function start(durable = false): Promise<PgCluster> {
  const dir = await Deno.makeTempDir({ prefix: "mb_pg_" });
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
  // loses nothing that was acknowledged.
  const opts =
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${
      durable ? "" : " -c synchronous_commit=off"
    } -c full_page_writes=off -c max_connections=200`;
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
  globalThis.addEventListener("unload", atExit);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    async createDatabase() {
      const name = `mb_test_${Deno.pid}_${++counter}`;
      const admin = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      await down();
    },
    async restart() {
      await up();
    },
    async destroy() {
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
 * Starts (once per process) and returns the throwaway cluster.
 *
 * @example
 * ```ts ignore
 * const pg = await startPostgres();
 * const url = await pg.createDatabase();
 * ```
 */
export function startPostgres(): Promise<PgCluster> {
  started ??= start();
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
