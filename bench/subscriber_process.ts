/**
 * The benchmark's handle on a subscriber process (bench/subscribers.ts):
 * it starts one against a server and asks it, one JSON line per command
 * and per answer, to open connections, count what arrived, and summarize
 * latencies.
 *
 * @module
 */

import type { Write } from "./writer.ts";

/** Latency figures in ms (null: no delivery). */
export interface Summary {
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/** What `stats` answers. */
export interface Stats {
  /** Events noted for the writes asked about. */
  deliveries: number;
  /** Connections open now. */
  open: number;
  /** Arrival − the writer's time once the create answered. */
  afterAck: Summary;
  /** Arrival − the writer's time before it sent the create. */
  afterSent: Summary;
  /** Per write: last arrival − first. */
  spread: Summary;
}

/** What `open` answers. */
export interface Opened {
  open: number;
  failed: number;
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A running subscriber process. */
export class Subscribers {
  readonly #child: Deno.ChildProcess;
  readonly #out: ReadableStreamDefaultReader<string>;
  #buf = "";

  /** Starts one for `GET <path>` on `127.0.0.1:<port>`. */
  constructor(port: number, path: string) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "bench/subscribers.ts", String(port), path],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#out = this.#child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
  }

  /** The process id (its CPU time is readable in /proc). */
  get pid(): number {
    return this.#child.pid;
  }

  async #ask<T>(cmd: Record<string, unknown>): Promise<T> {
    const w = this.#child.stdin.getWriter();
    await w.write(new TextEncoder().encode(JSON.stringify(cmd) + "\n"));
    w.releaseLock();
    while (!this.#buf.includes("\n")) {
      const { value, done } = await this.#out.read();
      if (done) throw new Error("The subscriber process ended");
      this.#buf += value;
    }
    const nl = this.#buf.indexOf("\n");
    const line = this.#buf.slice(0, nl);
    this.#buf = this.#buf.slice(nl + 1);
    return JSON.parse(line);
  }

  /** Opens `n` more connections; resolves once each is ready (or failed). */
  open(n: number): Promise<Opened> {
    return this.#ask({ cmd: "open", n });
  }

  /** Waits until `expected` events arrived (or 15 s, or 3 s without one). */
  async settle(expected: number): Promise<void> {
    const end = performance.now() + 15_000;
    let last = -1, since = performance.now();
    while (performance.now() < end) {
      const { deliveries } = await this.#ask<{ deliveries: number }>({
        cmd: "count",
      });
      if (deliveries >= expected) return;
      if (deliveries !== last) [last, since] = [deliveries, performance.now()];
      else if (performance.now() - since > 3000) return;
      await sleep(100);
    }
  }

  /** Latencies of the events of `writes` (numbered from `from`); forgets them. */
  stats(from: number, writes: Write[]): Promise<Stats> {
    return this.#ask({ cmd: "stats", from, acks: writes.map((w) => w.ack) });
  }

  /** Closes every connection and ends the process. */
  async close(): Promise<void> {
    // A child that already ended cannot answer; its exit is awaited below.
    await this.#ask({ cmd: "close" }).catch(() => {});
    await this.#child.status;
  }
}
