/**
 * The CPU cost of one request log row: drives N `log.request` calls through
 * the real `Logger` and `LogStore` (SQLite file, writer thread) the way the
 * HTTP handler makes them (`enabled` first), a few per macrotask, and reports
 * µs of CPU per row on the main thread, on the writer thread and on the
 * process's other threads (V8's GC helpers, the runtime's), each minus the
 * same loop with the logger off. CPU times come from
 * `/proc/self/task/<tid>/schedstat` (nanoseconds); no load generator, so
 * other work on the machine barely matters.
 * Usage: `deno run --allow-all bench/log_cost.ts [--rows N] [--per-tick K]
 * [--rounds R] [--rate ROWS_PER_S] [--garbage OBJECTS] [--no-store]`.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { setImmediate } from "node:timers";
import { SqliteStorage } from "../lib/db/sqlite.ts";
import { Logger } from "../lib/logs/logger.ts";
import { LogStore } from "../lib/logs/store.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const ROWS = arg("rows", 200_000);
const PER_TICK = arg("per-tick", 40);
const ROUNDS = arg("rounds", 3);
const RATE = arg("rate", 20_000);
/** `--no-store`: the logger without a store (the queue alone). */
const STORE = !Deno.args.includes("--no-store");
/**
 * Short-lived objects a request makes besides its log entry (~64 bytes
 * each), so the young generation is collected as often as in a server and
 * what the logger keeps for a while is copied or promoted as it would be.
 */
const GARBAGE = arg("garbage", 40);
let sink: unknown;

/** CPU nanoseconds of the main thread, the log writer and the rest. */
interface Cpu {
  main: number;
  writer: number;
  other: number;
}

function cpu(): Cpu {
  const out: Cpu = { main: 0, writer: 0, other: 0 };
  for (const t of Deno.readDirSync("/proc/self/task")) {
    let ns: number, name: string;
    try {
      const base = `/proc/self/task/${t.name}`;
      ns = Number(Deno.readTextFileSync(`${base}/schedstat`).split(" ")[0]);
      name = Deno.readTextFileSync(`${base}/comm`).trim();
    } catch {
      continue; // the thread ended
    }
    if (Number(t.name) === Deno.pid) out.main += ns;
    else if (name.startsWith("worker-")) out.writer += ns;
    else out.other += ns;
  }
  return out;
}

const urls = Array.from(
  { length: 1000 },
  (_, i) => `http://127.0.0.1:8090/api/v1/items/it${i}x?fields=a`,
);
/** A macrotask turn (`setTimeout(0)` waits milliseconds). */
const turn = () => new Promise((r) => setImmediate(r));
const sleep = () => new Promise((r) => setTimeout(r, 1));

/**
 * One round: N requests' worth of log calls (none when `on` is false), CPU
 * per row. Each request makes its path and request id afresh, as the
 * handler does, so they die young or not as the logger lets them.
 */
async function round(dir: string, on: boolean, r: number): Promise<Cpu> {
  const file = join(dir, `logs_${on ? "on" : "off"}_${r}.db`);
  const store = new LogStore(new SqliteStorage(file), file);
  await store.init();
  let batches = 0;
  // Counts the batches the logger hands over (rows per batch is the point).
  const insert = store.insert.bind(store);
  store.insert = (...a) => (batches++, insert(...a));
  const log = new Logger(
    STORE ? store : undefined,
    on ? "info" : "error",
    "off",
  );
  // Warm the writer thread up so its start-up is not counted.
  log.request("error", "GET", "/warm", 500, 1, "::1", null, null, "warm");
  await log.flush();
  batches = 0;
  const before = cpu(), t0 = performance.now();
  for (let i = 0; i < ROWS; i++) {
    const url = urls[i % 1000];
    const path = url.slice(url.indexOf("/", 8), url.indexOf("?"));
    const requestId = `r${(i * 7919).toString(36)}`;
    for (let g = 0; g < GARBAGE; g++) sink = { a: g, b: path, c: [g, i] };
    if (log.enabled("info")) {
      log.request(
        "info",
        "GET",
        path,
        200,
        0.42,
        "127.0.0.1",
        i % 3 === 0 ? "u1" : null,
        i % 3 === 0 ? "users" : null,
        requestId,
      );
    }
    if (i % PER_TICK === PER_TICK - 1) {
      await turn();
      // Paced like a busy server: RATE requests a second.
      while (performance.now() - t0 < (i * 1000) / RATE) await sleep();
    }
  }
  await log.close();
  if (sink === undefined) throw new Error("Cannot measure: no garbage made");
  const after = cpu();
  store.close();
  await store.storage.close();
  // Every call is either stored or counted as dropped (the queue is bounded).
  const raw = new DatabaseSync(file, { readOnly: true });
  const count = (sql: string) => Number(raw.prepare(sql).get()!.n);
  // Request entries are rows, or blocks of a burst (lib/logs/block.ts).
  const stored = count(
    `SELECT COUNT(*) AS n FROM "mb_logs" WHERE "type" = 'request'`,
  ) + count(`SELECT COALESCE(SUM("n"), 0) AS n FROM "mb_log_blocks"`);
  const dropped = count(
    `SELECT COALESCE(SUM("data" ->> 'dropped'), 0) AS n FROM "mb_logs" WHERE "type" = 'app'`,
  );
  raw.close();
  if (STORE && stored + dropped !== (on ? ROWS + 1 : 1)) {
    throw new Error(
      `Cannot measure: ${stored} rows stored, ${dropped} dropped`,
    );
  }
  if (on) {
    console.log(
      `round ${r}: ${
        (ROWS / batches).toFixed(0)
      } rows a batch, ${dropped} dropped`,
    );
  }
  return {
    main: (after.main - before.main) / ROWS / 1000,
    writer: (after.writer - before.writer) / ROWS / 1000,
    other: (after.other - before.other) / ROWS / 1000,
  };
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
const dir = await Deno.makeTempDir({ prefix: "mb_log_cost_" });
try {
  const on: Cpu[] = [], off: Cpu[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    off.push(await round(dir, false, r));
    on.push(await round(dir, true, r));
  }
  const load = Deno.readTextFileSync("/proc/loadavg").split(" ")[0];
  const f = (x: number) => x.toFixed(2).padStart(6);
  console.log(
    `${ROWS} rows, ${PER_TICK} per macrotask, median of ${ROUNDS} rounds, load ${load}`,
  );
  console.log("µs CPU per row      main  writer   other   total");
  for (const [name, xs] of [["logger off", off], ["logger on", on]] as const) {
    const m = median(xs.map((c) => c.main)),
      w = median(xs.map((c) => c.writer)),
      o = median(xs.map((c) => c.other));
    console.log(`${name.padEnd(16)}${f(m)}  ${f(w)}  ${f(o)}  ${f(m + w + o)}`);
  }
  const d = (k: keyof Cpu) =>
    median(on.map((c) => c[k])) - median(off.map((c) => c[k]));
  console.log(
    `${"row cost".padEnd(16)}${f(d("main"))}  ${f(d("writer"))}  ${
      f(d("other"))
    }  ${f(d("main") + d("writer") + d("other"))}`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
