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

async function start(
  durable = false,
  stopAtUnload = true,
): Promise<PgCluster & { dir: string }> {
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
    } -c full_page_writes=off -c max_connections=300`;
  const up = () =>
    run([
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
  await up();
  if (stopAtUnload) {
    globalThis.addEventListener("unload", () => {
      const args = ["-D", data, "-m", "immediate", "stop"];
      const cmd = Deno.uid() === 0
        ? new Deno.Command("runuser", {
          args: ["-u", "postgres", "--", `${BIN}/pg_ctl`, ...args],
        })
        : new Deno.Command(`${BIN}/pg_ctl`, { args });
      cmd.outputSync();
      Deno.removeSync(dir, { recursive: true });
    });
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    dir,
    createDatabase: () => createDatabase(url),
    async stop() {
      await run([`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "stop"]);
    },
    async restart() {
      await up();
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
  started ??= shared();
  return started;
}

/**
 * The cluster shared by every test file of this `deno test` process: each
 * file runs in an isolate of its own (no shared globals), so the first to
 * get here starts it (an atomic mkdir is the lock) and writes its URL to a
 * file the others wait for. A watchdog process stops it once the test
 * process is gone; no file's exit stops it under another's feet.
 */
async function shared(): Promise<PgCluster> {
  const home = `${Deno.env.get("TMPDIR") ?? "/tmp"}/mb_pg_shared_${Deno.pid}`;
  const urlFile = `${home}/url`;
  let owner = false;
  try {
    await Deno.mkdir(home);
    owner = true;
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
  if (owner) {
    try {
      const cluster = await start(false, false);
      await watchdog(cluster.dir, home);
      await Deno.writeTextFile(`${urlFile}.tmp`, cluster.url);
      await Deno.rename(`${urlFile}.tmp`, urlFile);
      return attach(cluster.url);
    } catch (err) {
      await Deno.writeTextFile(urlFile, `error: ${err}`);
      throw err;
    }
  }
  const deadline = Date.now() + 180_000;
  for (;;) {
    const text = await Deno.readTextFile(urlFile).catch(() => "");
    if (text.startsWith("error: ")) {
      throw new Error(`Cannot share the test cluster: ${text.slice(7)}`);
    }
    if (text) return attach(text);
    if (Date.now() > deadline) {
      throw new Error("Cannot share the test cluster: it did not start");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stops the shared cluster and removes its files when this process exits. */
async function watchdog(dir: string, home: string): Promise<void> {
  const stop = Deno.uid() === 0
    ? `runuser -u postgres -- ${BIN}/pg_ctl -D ${dir}/data -m immediate stop`
    : `${BIN}/pg_ctl -D ${dir}/data -m immediate stop`;
  const script =
    `while kill -0 ${Deno.pid} 2>/dev/null; do sleep 1; done; ${stop}; rm -rf ${dir} ${home}`;
  // setsid + &: the watchdog outlives this process (it waits for its end).
  await new Deno.Command("sh", {
    args: ["-c", `setsid sh -c '${script}' >/dev/null 2>&1 < /dev/null &`],
  }).output();
}

/** A handle on the shared cluster started by another test file. */
function attach(url: string): PgCluster {
  const refuse = () =>
    Promise.reject(
      new Error("Cannot stop the shared cluster: use startOwnPostgres()"),
    );
  return {
    url,
    createDatabase: () => createDatabase(url),
    stop: refuse,
    restart: refuse,
    pids: () => Promise.resolve([]),
  };
}

async function createDatabase(url: string): Promise<string> {
  const name = `mb_test_${Deno.pid}_${
    crypto.randomUUID().replaceAll("-", "").slice(0, 12)
  }_${++counter}`;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return url.replace(/\/postgres$/, `/${name}`);
}

/**
 * Starts a cluster of the caller's own (not shared with other tests of the
 * process, synchronous_commit on), for tests that stop, freeze and restart
 * it; stopped at exit.
 */
export function startOwnPostgres(): Promise<PgCluster> {
  return start(true);
}
