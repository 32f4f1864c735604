/**
 * The realtime part of `deno task bench`: with 1 000 SSE subscribers on one
 * instance (held by bench/subscribers.ts, a separate process), the event
 * fan-out latency from commit to delivery (paced writes, then a burst), the
 * server's memory per idle subscriber, and GET-by-id throughput with
 * realtime on and 1 000 idle subscribers against a `--realtime off` server,
 * in alternating rounds. Optionally first the same memory and paced
 * measures on a bare `Deno.serve` SSE server (bench/sse_baseline.ts). About
 * a minute; loopback only.
 *
 * The subscribers stay open from the memory measure to the end: an
 * instance whose last subscriber left stops its feed, and the writes with
 * no subscriber run before any subscribes.
 *
 * @module
 */

import { runLoad, type Target } from "./load.ts";
import {
  combine,
  type CpuLoad,
  cpuUs,
  loadWithCpu,
  type Proc,
  rssBytes,
  start,
  stop,
} from "./procs.ts";
import type { RealtimeRow } from "./realtime_report.ts";
import { REALTIME_PAIR, type Row } from "./rows.ts";
import {
  REALTIME_ON,
  realtimeArgs,
  SUBSCRIBE_PATH,
  SUBSCRIBERS,
} from "./realtime_args.ts";
import { type Stats, Subscribers } from "./subscriber_process.ts";
import { burst, paced, rate, type Write } from "./writer.ts";

/** What the realtime part runs against. */
export interface RealtimeSetup {
  db: string;
  /** `deno` arguments of a Moonbase server (options may go after index 3). */
  serverArgs: string[];
  /** A public record for GET by id. */
  itemId: string;
  rounds: number;
  seconds: number;
  /** Also measure the bare `Deno.serve` SSE baseline. */
  baseline: boolean;
}

const PACED = 200, PER_S = 20;
const WRITERS = 8, BURST_S = 3;
const PATH = SUBSCRIBE_PATH;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const num = (x: number | null) => x ?? NaN;
const ms = (x: number | null) => x === null ? "n/a" : `${x.toFixed(1)} ms`;
const ok = (ws: Write[]) => ws.filter((w) => w.ok).length;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** Median of a few RSS reads after a pause to settle (bytes). */
async function settledRss(pid: number): Promise<number> {
  await sleep(2000);
  const xs: number[] = [];
  for (let i = 0; i < 5; i++, await sleep(200)) xs.push(rssBytes(pid));
  return xs.sort((a, b) => a - b)[2];
}

/** Server RSS with no subscriber, then with `SUBSCRIBERS` idle ones. */
async function idleMemory(server: Proc, subs: Subscribers) {
  const rss0 = await settledRss(server.child.pid);
  const opened = await subs.open(SUBSCRIBERS);
  const rss1 = await settledRss(server.child.pid);
  const perSub = (rss1 - rss0) / Math.max(1, opened.open) / 1024;
  return { rss0, rss1, opened, n: opened.open, perSub };
}

/** `count` paced creates; their latencies and server CPU per delivery. */
async function pacedRun(
  server: Proc,
  subs: Subscribers,
  seq: number,
  n: number,
  count = PACED,
): Promise<{ writes: Write[]; st: Stats; cpu: string; perDelivery: number }> {
  const base = `http://127.0.0.1:${server.port}`;
  const [c0, k0] = [cpuUs(server.child.pid), cpuUs(subs.pid)];
  const writes = await paced(base, seq, count, PER_S);
  await subs.settle(ok(writes) * n);
  const [c1, k1] = [cpuUs(server.child.pid), cpuUs(subs.pid)];
  const st = await subs.stats(seq, writes);
  const per = (us: number) => us / Math.max(1, st.deliveries);
  return {
    writes,
    st,
    perDelivery: per(c1 - c0),
    cpu:
      `server CPU over the paced creates ÷ deliveries (the subscriber process: ${
        per(k1 - k0).toFixed(1)
      } µs per delivery)`,
  };
}

/** The bare `Deno.serve` baseline: memory and paced fan-out. */
async function bare(): Promise<RealtimeRow[]> {
  const server = await start(["run", "-A", "bench/sse_baseline.ts"]);
  const subs = new Subscribers(server.port, PATH);
  try {
    const m = await idleMemory(server, subs);
    const p = await pacedRun(server, subs, 0, m.n, PACED / 2);
    const db = "bare";
    return [
      {
        db,
        key: "kb_per_sub",
        name: "memory per idle SSE connection",
        value: m.perSub,
        unit: "KB",
        detail: `RSS ${mb(m.rss0)} with none, ${mb(m.rss1)} with ${m.n}`,
      },
      {
        db,
        key: "",
        name: `paced ${PER_S}/s: commit → delivery p50`,
        value: num(p.st.afterAck.p50),
        unit: "ms",
        detail: `p99 ${ms(p.st.afterAck.p99)}; ${
          PACED / 2
        } creates, ${p.st.deliveries} delivered`,
      },
      {
        db,
        key: "us_per_delivery",
        name: "server CPU per delivery (paced)",
        value: p.perDelivery,
        unit: "µs",
        detail: p.cpu,
      },
    ];
  } finally {
    await subs.close();
    await stop(server);
  }
}

/**
 * Runs the realtime measures on one database; returns their rows and the
 * paired GET row (realtime on with idle subscribers ÷ `--realtime off`) for
 * the main table.
 */
export async function benchRealtime(
  s: RealtimeSetup,
): Promise<{ rows: RealtimeRow[]; pair?: Row }> {
  const { db } = s;
  const log = (m: string) => console.error(`[${db}] realtime: ${m}`);
  const rows: RealtimeRow[] = s.baseline ? await bare() : [];
  const row = (r: Omit<RealtimeRow, "db">) => rows.push({ db, ...r });
  const withOpts = (opts: string[]) => realtimeArgs(s.serverArgs, opts);
  let pair: Row | undefined;
  const on = await start(withOpts(REALTIME_ON));
  const off = await start(withOpts(["--realtime", "off"]));
  const base = `http://127.0.0.1:${on.port}`, pid = on.child.pid;
  const get: Target = {
    method: "GET",
    path: `/api/v1/entities/items/${s.itemId}`,
  };
  const subs = new Subscribers(on.port, PATH);
  try {
    await runLoad(base, get, 2);
    await runLoad(`http://127.0.0.1:${off.port}`, get, 2);
    // Creates with no subscriber (warm-up, then measured).
    await burst(base, 0, WRITERS, 1);
    let seq = 1_000_000;
    let c0 = cpuUs(pid);
    const alone = await burst(base, seq, WRITERS, BURST_S);
    const cpuAlone = (cpuUs(pid) - c0) / Math.max(1, ok(alone));
    seq += alone.length;
    const m = await idleMemory(on, subs);
    const n = m.n;
    log(`${n} subscribers open in ${m.opened.ms.toFixed(0)} ms`);
    row({
      key: "",
      name: "SSE subscribers open",
      value: n,
      unit: "count",
      detail: `of ${SUBSCRIBERS}, opened in ${
        m.opened.ms.toFixed(0)
      } ms (${m.opened.failed} failed)`,
    });
    row({
      key: "kb_per_sub",
      name: "memory per idle subscriber",
      value: m.perSub,
      unit: "KB",
      detail: `server RSS ${mb(m.rss0)} with none, ${mb(m.rss1)} with ${n}`,
    });
    // GET by id, realtime on + idle subscribers vs off, alternating rounds.
    const ons: CpuLoad[] = [], offs: CpuLoad[] = [];
    for (let i = 0; i < s.rounds; i++) {
      ons.push(await loadWithCpu(on, get, s.seconds));
      offs.push(await loadWithCpu(off, get, s.seconds));
    }
    const a = combine(ons), b = combine(offs);
    pair = {
      db,
      name: REALTIME_PAIR,
      moonbase: a,
      baseline: b,
      ratio: a.rps / b.rps,
    };
    row({
      key: "get_on_off",
      name: `GET by id: realtime on + ${n} idle ÷ --realtime off (paired)`,
      value: a.rps / b.rps,
      unit: "ratio",
      detail: `${a.rps.toFixed(0)} vs ${b.rps.toFixed(0)} req/s, CPU ${
        a.cpuPerRequest?.toFixed(1)
      } vs ${b.cpuPerRequest?.toFixed(1)} µs/req, non-2xx ${
        a.non2xx + b.non2xx
      }`,
    });
    // Paced creates: commit → delivery.
    const p = await pacedRun(on, subs, seq, n);
    const ps = p.st;
    seq += p.writes.length;
    const rtt = p.writes.map((w) => w.ack - w.sent).sort((x, y) => x - y);
    row({
      key: "p50",
      name: `paced ${PER_S}/s: commit → delivery p50`,
      value: num(ps.afterAck.p50),
      unit: "ms",
      detail: `sent → delivery p50 ${
        ms(ps.afterSent.p50)
      }; create round trip p50 ${ms(rtt[rtt.length >> 1])}`,
    });
    row({
      key: "p99",
      name: `paced ${PER_S}/s: commit → delivery p99`,
      value: num(ps.afterAck.p99),
      unit: "ms",
      detail: `max ${ms(ps.afterAck.max)}; sent → delivery p99 ${
        ms(ps.afterSent.p99)
      }; spread p50 ${ms(ps.spread.p50)}, p99 ${
        ms(ps.spread.p99)
      }; ${ps.deliveries} of ${ok(p.writes) * n} delivered`,
    });
    row({
      key: "us_per_delivery",
      name: "server CPU per delivery (paced)",
      value: p.perDelivery,
      unit: "µs",
      detail: p.cpu,
    });
    log(`paced p50 ${ms(ps.afterAck.p50)}, p99 ${ms(ps.afterAck.p99)}`);
    // A burst: creates as fast as they go, and how far delivery lags.
    c0 = cpuUs(pid);
    const w = await burst(base, seq, WRITERS, BURST_S);
    const cpuBurst = (cpuUs(pid) - c0) / Math.max(1, ok(w));
    await subs.settle(ok(w) * n);
    const bs = await subs.stats(seq, w);
    const [r1, r0] = [rate(w, BURST_S), rate(alone, BURST_S)];
    row({
      key: "burst_writes",
      name: `burst: creates/s with ${n} subscribers ÷ with none`,
      value: r1 / r0,
      unit: "ratio",
      detail: `${r1.toFixed(0)} vs ${
        r0.toFixed(0)
      } creates/s (${WRITERS} writers); server CPU ${cpuBurst.toFixed(0)} vs ${
        cpuAlone.toFixed(0)
      } µs per create`,
    });
    row({
      key: "burst_p99",
      name: "burst: commit → delivery p99",
      value: num(bs.afterAck.p99),
      unit: "ms",
      detail: `p50 ${ms(bs.afterAck.p50)}, max ${
        ms(bs.afterAck.max)
      }; ${bs.deliveries} of ${
        ok(w) * n
      } delivered; ${bs.open} subscribers still open`,
    });
    log(
      `burst ${r1.toFixed(0)} vs ${r0.toFixed(0)} creates/s, p99 ${
        ms(bs.afterAck.p99)
      } (${bs.deliveries}/${ok(w) * n}, ${bs.open} open)`,
    );
  } finally {
    await subs.close();
    await stop(on);
    await stop(off);
  }
  return { rows, pair };
}
