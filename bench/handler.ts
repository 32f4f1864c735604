/**
 * `deno task bench:handler`: time spent in Moonbase's own request handling,
 * in-process (no sockets, no HTTP parsing, no load generator), per scenario.
 * Steadier than req/s on a shared machine; run it under `--cpu-prof` to see
 * where a scenario's time goes. `--pg` runs them on a throwaway PostgreSQL
 * (fsync off: the figures are CPU, not a disk's flush; CPU here counts this
 * process only, not PostgreSQL's).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { cpuUsage } from "node:process";
import { createApp } from "../mod.ts";
import { seed } from "./seed.ts";
import { startOwnPostgres } from "../tests/_pg.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    // `--logLevel error` measures the handler without request logs.
    logLevel: { type: "string", default: "info" },
    // Only the scenarios whose name contains this text.
    only: { type: "string", default: "" },
    // On a throwaway PostgreSQL instead of SQLite.
    pg: { type: "boolean", default: false },
    // Requests in flight at once (1: one after another). On PostgreSQL a
    // request waits for round trips: in flight together, their statements
    // share socket writes and wake-ups, as under load.
    concurrency: { type: "string", default: "1" },
  },
});
const LEVELS = ["trace", "debug", "info", "warn", "error"] as const;
const logLevel = LEVELS.find((l) => l === args.values.logLevel);
if (!logLevel) {
  throw new Error(`Cannot bench: --logLevel must be one of ${LEVELS}`);
}

const SECRET = "bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz";
const dataDir = await Deno.makeTempDir({ prefix: "mb_handler_bench_" });
const pg = args.values.pg ? await startOwnPostgres() : undefined;
const config = pg
  ? {
    dataDir,
    jwtSecret: SECRET,
    database: "PSQL" as const,
    connection: await pg.createDatabase(),
  }
  : { dataDir, jwtSecret: SECRET };
const seeded = await seed(config);
const app = await createApp({
  ...config,
  quiet: true,
  trustProxy: true,
  logLevel,
});
const CONCURRENCY = Math.max(1, Number(args.values.concurrency) || 1);
const info = { remoteAddr: { hostname: "127.0.0.1" } };
const login = await (await app.handler(
  new Request("http://mb/api/v1/auth/users/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ identity: seeded.email, password: seeded.password }),
  }),
  info,
)).json();
const bearer = { authorization: `Bearer ${login.data.token}` };
const json = { "content-type": "application/json" };

const scenarios: [string, () => Request, number][] = [
  ["health", () => new Request("http://mb/api/v1/health"), 50_000],
  [
    "GET by id (public)",
    () => new Request(`http://mb/api/v1/entities/items/${seeded.itemId}`),
    50_000,
  ],
  [
    // The token's cost alone: its check and the user read, no rule.
    "GET by id (public, with a token)",
    () =>
      new Request(`http://mb/api/v1/entities/items/${seeded.itemId}`, {
        headers: bearer,
      }),
    50_000,
  ],
  [
    "GET by id (token + custom rule)",
    () =>
      new Request(`http://mb/api/v1/entities/notes/${seeded.noteId}`, {
        headers: bearer,
      }),
    50_000,
  ],
  [
    "list 50",
    () => new Request("http://mb/api/v1/entities/items?limit=50"),
    5_000,
  ],
  [
    "list 50 posts",
    () => new Request("http://mb/api/v1/entities/posts?limit=50"),
    5_000,
  ],
  [
    "list 50 posts, expand=author",
    () => new Request("http://mb/api/v1/entities/posts?limit=50&expand=author"),
    5_000,
  ],
  [
    "batch: 10 creates",
    () =>
      new Request("http://mb/api/v1/batch", {
        method: "POST",
        headers: json,
        body: JSON.stringify({
          requests: Array.from({ length: 10 }, (_, i) => ({
            method: "POST",
            url: "/api/v1/entities/items",
            body: { title: "bench", n: i, tag: "x" },
          })),
        }),
      }),
    2_000,
  ],
  [
    "create",
    () =>
      new Request("http://mb/api/v1/entities/items", {
        method: "POST",
        headers: json,
        body: '{"title":"bench","n":1,"tag":"x"}',
      }),
    10_000,
  ],
];

for (const [name, make, n] of scenarios) {
  if (!name.includes(args.values.only)) continue;
  for (let i = 0; i < n / 5; i++) {
    await (await app.handler(make(), info)).text();
  }
  let made = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) made += make() ? 1 : 0;
  const requestCost = (performance.now() - t0) / n;
  const t = performance.now(), cpu = cpuUsage();
  let next = 0;
  const one = async () => {
    while (next < n) {
      next++;
      const res = await app.handler(make(), info);
      await res.text();
      if (res.status >= 300) throw new Error(`${name}: status ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, one));
  const us = ((performance.now() - t) / n - requestCost) * 1000;
  // CPU time (all threads) is steadier than wall time on a shared VM.
  const used = cpuUsage(cpu);
  const cpuUs = (used.user + used.system) / n - requestCost * 1000;
  console.log(
    `${name.padEnd(34)} ${us.toFixed(1).padStart(7)} µs/request, CPU ${
      cpuUs.toFixed(1).padStart(7)
    } µs`,
  );
}
await app.close();
await pg?.destroy();
await Deno.remove(dataDir, { recursive: true });
