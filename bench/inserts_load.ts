/**
 * The writer of the insert benchmark, run as a process of its own
 * (bench/inserts.ts starts it): sends one warm-up message, then `n` chat
 * messages at `concurrency` requests in flight, recording each request's
 * latency, and prints one JSON line of `LoadFigures`.
 *
 * - `--mode client`: through `@moonbase/client` (client/mod.ts), as an app
 *   would: `mb.auth("users").login(email, password)`, then
 *   `mb.entity("messages").create({ room, text })`.
 * - `--mode fetch`: plain `fetch` POSTs of the same JSON with
 *   `Authorization: Bearer <token>` (the bare handler, bench/inserts_bare.ts).
 *
 * Usage: `inserts_load.ts --url <base> --mode client|fetch --n <n>
 * --concurrency <c> --room <id> (--email <e> --password <p> | --token <t>)`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { Moonbase } from "../client/mod.ts";
import { cpuUs } from "./procs.ts";
import { WARM_UP } from "./inserts_seed.ts";

/** What one run measured (times in ms, CPU in µs). */
export interface LoadFigures {
  n: number;
  concurrency: number;
  /** From the first timed request sent to the last answer. */
  ms: number;
  /** Latency percentiles of the timed requests. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Requests that failed (a refusal, a network error, no answer in 60 s). */
  errors: number;
  firstError: string;
  /** CPU time of this process over the timed requests. */
  cpu: number;
}

/** A message as both modes send it. */
interface Message {
  room: string;
  text: string;
}
type Schema = {
  users: {
    record: { id: string; email: string };
    create: { email: string; password: string };
    update: { email?: string };
  };
  messages: {
    record: { id: string; created: string; room: string; text: string };
    create: Message;
    update: Partial<Message>;
  };
};

/** The latency at quantile `q` of sorted `xs`. */
export function quantile(xs: Float64Array, q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];
}

/** Sends `n` messages with at most `concurrency` in flight. */
async function run(
  n: number,
  concurrency: number,
  send: (i: number) => Promise<unknown>,
): Promise<LoadFigures> {
  const latencies = new Float64Array(n);
  let next = 0, errors = 0, firstError = "";
  const cpu0 = cpuUs(Deno.pid), t0 = performance.now();
  const lane = async () => {
    while (next < n) {
      const i = next++;
      const t = performance.now();
      try {
        await send(i);
      } catch (err) {
        errors++;
        firstError ||= err instanceof Error ? err.message : String(err);
      }
      latencies[i] = performance.now() - t;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
  const ms = performance.now() - t0, cpu = cpuUs(Deno.pid) - cpu0;
  latencies.sort();
  return {
    n,
    concurrency,
    ms,
    p50: quantile(latencies, 0.5),
    p90: quantile(latencies, 0.9),
    p99: quantile(latencies, 0.99),
    max: latencies[n - 1] ?? 0,
    errors,
    firstError,
    cpu,
  };
}

/** Through the client: log in, then `create`. */
async function viaClient(
  url: string,
  email: string,
  password: string,
  room: string,
): Promise<(text: string) => Promise<unknown>> {
  const mb = new Moonbase<Schema>(url);
  await mb.auth("users").login(email, password);
  const messages = mb.entity("messages");
  return (text) =>
    messages.create({ room, text }, {}, {
      signal: AbortSignal.timeout(60_000),
    });
}

/** Plain fetch with a bearer token; anything but a 2xx is an error. */
function viaFetch(
  url: string,
  token: string,
  room: string,
): (text: string) => Promise<unknown> {
  const headers = {
    "content-type": "application/json",
    authorization: `Bearer ${token}`,
  };
  return async (text) => {
    const res = await fetch(`${url}/api/v1/entities/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ room, text }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = await res.text();
    if (!res.ok) throw new Error(`${res.status} ${body.slice(0, 200)}`);
  };
}

if (import.meta.main) {
  const { values: a } = parseArgs({
    args: Deno.args,
    options: {
      url: { type: "string" },
      mode: { type: "string" },
      n: { type: "string" },
      concurrency: { type: "string" },
      room: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      token: { type: "string" },
    },
  });
  const url = a.url ?? "", room = a.room ?? "";
  const create = a.mode === "client"
    ? await viaClient(url, a.email ?? "", a.password ?? "", room)
    : viaFetch(url, a.token ?? "", room);
  // One message first, as TrailBase's benchmark does: a failing setup
  // fails here, once, not n times.
  await create(WARM_UP);
  const figures = await run(
    Number(a.n),
    Number(a.concurrency),
    (i) => create(`a message ${i}`),
  );
  console.log(JSON.stringify(figures));
  // Keep-alive connections of fetch's pool would hold the process open.
  Deno.exit(0);
}
