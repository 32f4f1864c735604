/**
 * Fixtures of the `serve --workers N` tests: the real CLI as a subprocess
 * (tests/_cli_fixtures.ts), its first admin claimed through the setup link,
 * and requests that each open a connection of their own, so the kernel's
 * SO_REUSEPORT spreading sends them to either isolate; each reply names the
 * isolate that answered (`X-Moonbase-Worker`).
 *
 * @module
 */

import { assert } from "./_server.ts";
import { childEnv, HOST, type Served, startCli } from "./_cli_fixtures.ts";
import { startPostgres } from "./_pg.ts";

/** A reply, with the isolate that answered. */
export interface WorkerReply {
  status: number;
  // deno-lint-ignore no-explicit-any
  data: any;
  error: string;
  text: string;
  worker: string | null;
}

/** A `serve --workers N` process and its admin. */
export interface Cluster {
  served: Served;
  url: string;
  admin: string;
  dataDir: string;
  scriptsDir: string;
  /** A request on a new connection. */
  call(
    method: string,
    path: string,
    o?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<WorkerReply>;
  /** Stops the process (SIGKILL) and removes its directories. */
  kill(): Promise<void>;
}

/** Options of `startCluster`. */
export interface ClusterOptions {
  workers?: number;
  /** Script files (name → source) for the scripts directory. */
  scripts?: Record<string, string>;
  args?: string[];
  /** Leave the first admin unclaimed (`admin` is then ""). */
  unclaimed?: boolean;
}

const ADMIN = { email: "root@example.com", password: "root-password-1" };

/** Starts `moonbase serve --workers N` on `db` and claims its first admin. */
export async function startCluster(
  db: "sqlite" | "postgres",
  o: ClusterOptions = {},
): Promise<Cluster> {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_workers_" });
  const scriptsDir = await Deno.makeTempDir({ prefix: "mb_workers_ext_" });
  for (const [name, src] of Object.entries(o.scripts ?? {})) {
    await Deno.writeTextFile(`${scriptsDir}/${name}`, src);
  }
  const pg = db === "postgres"
    ? ["--database", "PSQL", "--connection", await newDatabase()]
    : [];
  const served = await startCli([
    "serve",
    "--port",
    "0",
    "--host",
    HOST,
    "--workers",
    String(o.workers ?? 2),
    "--dataDir",
    dataDir,
    "--scriptsDir",
    scriptsDir,
    "--logLevel",
    "warn",
    ...pg,
    ...(o.args ?? []),
  ], childEnv());
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  const call: Cluster["call"] = async (method, path, c = {}) => {
    const headers: Record<string, string> = { ...c.headers };
    if (c.token) headers.authorization = `Bearer ${c.token}`;
    if (c.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(served.url + path, {
      method,
      headers,
      body: c.body === undefined ? undefined : JSON.stringify(c.body),
      client,
    });
    const text = await res.text();
    let parsed: { data?: unknown; error?: string } | null = null;
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON */ }
    return {
      status: res.status,
      data: parsed?.data,
      error: parsed?.error ?? "",
      text,
      worker: res.headers.get("x-moonbase-worker"),
    };
  };
  const kill = async () => {
    client.close();
    await served.kill();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    await Deno.remove(scriptsDir, { recursive: true }).catch(() => {});
  };
  try {
    const token = /setup\?token=(\S+)/.exec(served.stdout())?.[1];
    assert(token, `no setup link:\n${served.stdout()}`);
    const cluster = {
      served,
      url: served.url,
      dataDir,
      scriptsDir,
      call,
      kill,
    };
    if (o.unclaimed) return { ...cluster, admin: "" };
    const r = await call("POST", "/api/v1/sys/admins/setup", {
      token,
      body: ADMIN,
    });
    assert(r.status === 201, `setup: ${r.status} ${r.text}`);
    return { ...cluster, admin: r.data.token };
  } catch (err) {
    await kill();
    throw err;
  }
}

async function newDatabase(): Promise<string> {
  return await (await startPostgres()).createDatabase();
}

/** Runs `fn` on `count` items, `lanes` at a time. */
export async function inLanes<T, R>(
  items: readonly T[],
  lanes: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

/** The isolates that answered `replies`. */
export function workersOf(replies: readonly WorkerReply[]): string[] {
  return [...new Set(replies.map((r) => String(r.worker)))].sort();
}

const OPEN = { mode: "public", expr: "" };
/** Every rule public. */
export const OPEN_RULES = {
  list: OPEN,
  get: OPEN,
  add: OPEN,
  update: OPEN,
  delete: OPEN,
};
