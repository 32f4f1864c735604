/**
 * One database's run of the insert benchmark (bench/inserts.ts): seeds the
 * chat (bench/inserts_seed.ts), starts `moonbase serve` with its defaults
 * (request log and realtime on), and has a separate writer process
 * (bench/inserts_load.ts) insert `n` messages through `@moonbase/client` at
 * `concurrency`; then the same from the same writer with plain `fetch`
 * against the bare handler (bench/inserts_bare.ts) on the same database, the
 * table emptied between the two. After each run the messages are counted in
 * the database.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { startDurablePostgres } from "../tests/_pg.ts";
import { openStorage } from "../lib/core.ts";
import { type AppConfig, resolveConfig } from "../lib/config.ts";
import { SQLITE_FILE } from "../lib/files/data_dir.ts";
import { join } from "node:path";
import { cpuUs, SECRET, start, stop } from "./procs.ts";
import { type Chat, MESSAGES, seedChat, WARM_UP } from "./inserts_seed.ts";
import type { LoadFigures } from "./inserts_load.ts";

/** One server's figures: the writer's, the server's CPU, the rows stored. */
export interface ServerFigures extends LoadFigures {
  /** CPU time of the server process over the run (all threads), µs. */
  serverCpu: number;
  /** Messages in the table afterwards, the warm-up one left out. */
  stored: number;
}

/** Both servers on one database. */
export interface InsertsResult {
  db: "sqlite" | "postgres";
  moonbase: ServerFigures;
  bare: ServerFigures;
}

/** What to run. */
export interface InsertsOptions {
  db: "sqlite" | "postgres";
  n: number;
  concurrency: number;
  /** Progress lines (default stderr). */
  log?: (line: string) => void;
  /**
   * Starts Moonbase under `deno run --cpu-prof` writing into this directory
   * (`server.cpuprofile`, and one per worker); the figures then carry the
   * profiler's cost.
   */
  profileDir?: string;
}

const path = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const MAIN = path("../main.ts");
const LOAD = path("./inserts_load.ts");
const BARE = path("./inserts_bare.ts");

/** The main thread's profile in `profileDir`. */
export const PROFILE = "server.cpuprofile";

/** Runs the writer process against `url` and reads its figures. */
async function writer(
  url: string,
  args: string[],
  o: InsertsOptions,
): Promise<LoadFigures> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      LOAD,
      "--url",
      url,
      "--n",
      String(o.n),
      "--concurrency",
      String(o.concurrency),
      ...args,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`Cannot run the writer: it exited with ${out.code}`);
  }
  return JSON.parse(text.slice(text.lastIndexOf("\n") + 1));
}

/** The user's token, from Moonbase's login route. */
async function login(url: string, chat: Chat): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/users/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ identity: chat.email, password: chat.password }),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`Cannot log in: ${body.error}`);
  return body.data.token;
}

/** Counts the stored messages (the warm-up one left out); `empty` then deletes them all. */
async function stored(config: AppConfig, empty = false): Promise<number> {
  const store = await openStorage(resolveConfig(config));
  try {
    const rows = await store.query(
      `SELECT COUNT(*) AS n FROM "${MESSAGES}" WHERE "text" <> ?`,
      [WARM_UP],
    );
    if (empty) await store.run(`DELETE FROM "${MESSAGES}"`);
    return Number(rows[0].n);
  } finally {
    await store.close();
  }
}

/** Runs the benchmark on one database. */
export async function benchInserts(o: InsertsOptions): Promise<InsertsResult> {
  const log = o.log ?? ((l: string) => console.error(l));
  const dataDir = await Deno.makeTempDir({ prefix: "mb_inserts_" });
  try {
    const connection = o.db === "postgres"
      ? await (await startDurablePostgres()).createDatabase()
      : undefined;
    const config: AppConfig = connection
      ? { dataDir, database: "PSQL", connection, jwtSecret: SECRET }
      : { dataDir, jwtSecret: SECRET };
    const chat = await seedChat(config);
    const dbArgs = connection
      ? ["--database", "PSQL", "--connection", connection]
      : [];

    log(`[${o.db}] Moonbase: ${o.n} inserts through @moonbase/client…`);
    const profiling = o.profileDir
      ? [
        "--cpu-prof",
        "--cpu-prof-dir",
        o.profileDir,
        "--cpu-prof-name",
        PROFILE,
      ]
      : [];
    const server = await start([
      "run",
      ...profiling,
      "-A",
      MAIN,
      "--dataDir",
      dataDir,
      ...dbArgs,
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
    ]);
    const url = `http://127.0.0.1:${server.port}`;
    let token: string, viaClient: LoadFigures, moonbaseCpu: number;
    try {
      token = await login(url, chat);
      const cpu0 = cpuUs(server.child.pid);
      viaClient = await writer(url, [
        "--mode",
        "client",
        "--room",
        chat.roomId,
        "--email",
        chat.email,
        "--password",
        chat.password,
      ], o);
      moonbaseCpu = cpuUs(server.child.pid) - cpu0;
    } finally {
      await stop(server);
    }
    const moonbase = {
      ...viaClient,
      serverCpu: moonbaseCpu,
      stored: await stored(config, true),
    };

    log(`[${o.db}] bare handler: ${o.n} inserts with fetch…`);
    const bareServer = await start([
      "run",
      "-A",
      BARE,
      o.db,
      connection ?? join(dataDir, SQLITE_FILE),
    ]);
    let viaFetch: LoadFigures, bareCpu: number;
    try {
      const cpu0 = cpuUs(bareServer.child.pid);
      viaFetch = await writer(`http://127.0.0.1:${bareServer.port}`, [
        "--mode",
        "fetch",
        "--room",
        chat.roomId,
        "--token",
        token,
      ], o);
      bareCpu = cpuUs(bareServer.child.pid) - cpu0;
    } finally {
      await stop(bareServer);
    }
    const bare = {
      ...viaFetch,
      serverCpu: bareCpu,
      stored: await stored(config),
    };
    return { db: o.db, moonbase, bare };
  } finally {
    // A scratch directory left in the temp dir harms nothing.
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}
