/**
 * Soak: a Moonbase server (child process) under a steady mixed load —
 * creates, gets, lists (varied sorts and filters), patches, deletes, logins
 * and token-checked reads — for `--minutes`, with the server's RSS
 * (`/proc/<pid>/status` VmRSS) sampled every `--interval` seconds and printed
 * as a table. Memory levels off when the last 3 minutes' mean and peak stay
 * near those of the 3 minutes before (bench/soak_report.ts).
 *
 *   deno task bench:soak [--minutes 10] [--connections 12] [--pg]
 *     [--interval 10] [--out bench/results.md] [--v8=--max-old-space-size=64]
 *
 * With `--pg` (or `--database PSQL`) it runs on a throwaway PostgreSQL
 * cluster. The samples and the "levels off" verdict land in `--out` as the
 * section `soak:<db>` (bench/soak_report.ts); `--out ""` writes nothing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { startDurablePostgres } from "../tests/_pg.ts";
import { rssBytes } from "./procs.ts";
import { PASSWORD, prepare } from "./soak_seed.ts";
import {
  type Sample,
  signed,
  soakSection,
  verdict,
  writeSoak,
} from "./soak_report.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    minutes: { type: "string", default: "10" },
    connections: { type: "string", default: "12" },
    interval: { type: "string", default: "10" },
    database: { type: "string", default: "" },
    pg: { type: "boolean" },
    out: { type: "string", default: "bench/results.md" },
    v8: { type: "string", default: "" },
  },
});
const MINUTES = Number(args.values.minutes);
const CONNECTIONS = Math.max(1, Number(args.values.connections));
const INTERVAL = Math.max(1, Number(args.values.interval)) * 1000;
const PG = args.values.pg || args.values.database.toUpperCase() === "PSQL";
const SECRET = "soak-secret-0123456789-abcdefghijklmnopqrstuvwxyz";

async function startServer(
  argv: string[],
): Promise<{ child: Deno.ChildProcess; url: string }> {
  const v8 = args.values.v8 ? [`--v8-flags=${args.values.v8}`] : [];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...v8, "main.ts", ...argv],
    stdout: "piped",
    stderr: "inherit",
    env: { MB_JWT_SECRET: SECRET, NO_COLOR: "1" },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) throw new Error("Cannot start the server");
    buf += value;
    const m = /listening on (http:\/\/[^ ]+)/.exec(buf);
    if (m) {
      (async () => {
        while (!(await reader.read()).done) { /* drain request logs */ }
      })();
      return { child, url: m[1].replace(/\/$/, "") };
    }
  }
}

const rssMiB = (pid: number) => rssBytes(pid) / 2 ** 20;

const pick = <T>(xs: readonly T[]): T =>
  xs[Math.floor(Math.random() * xs.length)];
const SORTS = ["", "-created", "n", "-n,title", "tag,-created"];
const FILTERS = [
  "",
  "n > 100",
  'tag == "t3"',
  'title.startsWith("item 1")',
  "n % 7 == 0 && n < 5000",
  'meta.k == "v"',
];

/** Counters of the running load. */
const stats = { requests: 0, non2xx: 0, s5xx: 0, errors: 0 };

const dataDir = await Deno.makeTempDir({ prefix: "mb_soak_" });
const cfg: Record<string, string> = { dataDir, jwtSecret: SECRET };
if (PG) {
  cfg.database = "PSQL";
  cfg.connection = await (await startDurablePostgres()).createDatabase();
}
console.error(`soak: preparing ${PG ? "PostgreSQL" : "SQLite"} data…`);
const { ids, email } = await prepare(cfg);
const { child, url } = await startServer([
  "--dataDir",
  dataDir,
  ...(PG ? ["--database", "PSQL", "--connection", cfg.connection] : []),
  "--trustProxy",
  "serve",
  "--port",
  "0",
  "--host",
  "127.0.0.1",
]);

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; data: Record<string, unknown> | null }> {
  stats.requests++;
  try {
    const res = await fetch(url + path, {
      method,
      headers: body === undefined
        ? headers
        : { ...headers, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) stats.non2xx++;
    if (res.status >= 500) stats.s5xx++;
    return { status: res.status, data: text ? JSON.parse(text).data : null };
  } catch {
    stats.errors++;
    return { status: 0, data: null };
  }
}

let token = "";
let ip = 0;
async function login(): Promise<void> {
  // A new client address per login: the limiter allows 5 per minute per IP.
  const r = await call("POST", "/api/v1/auth/users/login", {
    identity: email,
    password: PASSWORD,
  }, {
    "x-forwarded-for": `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${
      ip++ & 255
    }`,
  });
  if (r.status === 200 && r.data) token = String(r.data.token);
}

async function step(): Promise<void> {
  const roll = Math.random();
  if (roll < 0.3) {
    await call("GET", `/api/v1/entities/items/${pick(ids)}`);
  } else if (roll < 0.5) {
    const q = new URLSearchParams({ limit: String(pick([10, 20, 50])) });
    const sort = pick(SORTS), filter = pick(FILTERS);
    if (sort) q.set("sort", sort);
    if (filter) {
      q.set(
        "filter",
        filter.replace("100", String(Math.floor(Math.random() * 2000))),
      );
    }
    if (Math.random() < 0.1) q.set("count", "true");
    const r = await call("GET", `/api/v1/entities/items?${q}`);
    const cursor = r.data?.cursor;
    if (typeof cursor === "string" && cursor && Math.random() < 0.5) {
      q.set("after", cursor);
      await call("GET", `/api/v1/entities/items?${q}`);
    }
  } else if (roll < 0.65) {
    const n = Math.floor(Math.random() * 100_000);
    const r = await call("POST", "/api/v1/entities/items", {
      title: `soak ${n} ${"x".repeat(n % 200)}`,
      n,
      tag: `t${n % 10}`,
      meta: { k: n % 2 ? "v" : "w", n },
    });
    if (r.status === 201 && r.data) ids.push(String(r.data.id));
  } else if (roll < 0.8) {
    await call("PATCH", `/api/v1/entities/items/${pick(ids)}`, {
      title: `patched ${Math.random()}`,
    });
  } else if (roll < 0.95) {
    if (ids.length > 500) {
      const i = Math.floor(Math.random() * ids.length);
      const id = ids[i];
      ids[i] = ids[ids.length - 1];
      ids.pop();
      await call("DELETE", `/api/v1/entities/items/${id}`);
    }
  } else if (token) {
    const auth = { authorization: `Bearer ${token}` };
    if (Math.random() < 0.3) {
      await call("POST", "/api/v1/entities/notes", { body: "note" }, auth);
    } else {
      await call("GET", "/api/v1/entities/notes?limit=10", undefined, auth);
    }
  }
}

const started = Date.now();
const until = started + MINUTES * 60_000;
let running = true;
const workers = Array.from({ length: CONNECTIONS }, async () => {
  while (running && Date.now() < until) await step();
});
// Logins are costly (scrypt): one client logs in about once a second.
const logins = (async () => {
  while (running && Date.now() < until) {
    await login();
    await new Promise((r) => setTimeout(r, 1000));
  }
})();

const idle = rssMiB(child.pid);
console.log(
  `soak on ${
    PG ? "PostgreSQL" : "SQLite"
  }, ${CONNECTIONS} connections, ${MINUTES} min; idle RSS ${
    idle.toFixed(1)
  } MiB`,
);
console.log(
  "| elapsed | requests | req/s | non-2xx | 5xx | errors | RSS MiB |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|");
let last = { t: started, n: 0 };
const samples: Sample[] = [];
while (Date.now() < until) {
  await new Promise((r) =>
    setTimeout(r, Math.min(INTERVAL, until - Date.now()))
  );
  const now = Date.now(), rss = rssMiB(child.pid);
  const rps = (stats.requests - last.n) / ((now - last.t) / 1000);
  last = { t: now, n: stats.requests };
  const x = { s: Math.round((now - started) / 1000), ...stats, rps, rss };
  samples.push(x);
  console.log(
    `| ${x.s} s | ${x.requests} | ${
      rps.toFixed(0)
    } | ${x.non2xx} | ${x.s5xx} | ${x.errors} | ${rss.toFixed(1)} |`,
  );
}
running = false;
await Promise.all([...workers, logins]);
const v = verdict(samples);
console.log(
  `RSS: idle ${idle.toFixed(1)}, peak ${
    Math.max(...samples.map((x) => x.rss)).toFixed(1)
  } MiB; last ${Math.round(v.window)} s against the window before: mean ${
    signed(v.rise)
  }, peak ${signed(v.peakRise)} MiB: levels off ${
    v.levelsOff ? "yes" : "NO"
  }; ${stats.requests} requests, ${stats.s5xx} 5xx, ${stats.errors} errors`,
);
if (args.values.out) {
  const db = PG ? "postgres" : "sqlite";
  await writeSoak(
    args.values.out,
    db,
    soakSection({
      db,
      minutes: MINUTES,
      connections: CONNECTIONS,
      interval: INTERVAL / 1000,
      idle,
      date: new Date().toISOString(),
    }, samples),
  );
  console.log(`Written to ${args.values.out} (section soak:${db}).`);
}
child.kill("SIGTERM");
await child.status;
// A scratch directory left in the temp dir harms nothing.
await Deno.remove(dataDir, { recursive: true }).catch(() => {});
Deno.exit(0);
