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

async function start(): Promise<PgCluster> {
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
  const opts =
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
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
