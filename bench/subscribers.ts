/**
 * The realtime benchmark's subscribers: a separate process holding many SSE
 * connections to one server over raw TCP (HTTP/1.1, chunked bodies decoded
 * here), noting when each event arrives. Usage:
 * `subscribers.ts <port> <path>` (path: `/api/v1/realtime?topics=…`).
 *
 * Driven by JSON lines on stdin, answering each with one JSON line on
 * stdout:
 * - `{"cmd":"open","n":N}` opens N more connections, each ready once its
 *   `event: ready` arrived → `{"open","failed","ms"}`;
 * - `{"cmd":"count"}` → `{"deliveries","open"}` (events noted so far);
 * - `{"cmd":"stats","from":S,"acks":[…]}` → latencies of the events of
 *   writes S, S+1, … (the record's `seq`): arrival − `acks[seq − S]` (the
 *   writer's time when the create answered) and arrival − the record's
 *   `sent` (the writer's time before it sent the create), in ms; then
 *   forgets those events;
 * - `{"cmd":"close"}` closes every connection and exits.
 *
 * Times are `performance.timeOrigin + performance.now()` (ms), as the
 * writer's: one host, one clock.
 *
 * @module
 */

const [port, path] = [Number(Deno.args[0]), Deno.args[1] ?? ""];
const now = () => performance.timeOrigin + performance.now();

/** Noted deliveries (parallel arrays). */
const seqs: number[] = [], sents: number[] = [], arrivals: number[] = [];
let failedReads = 0;

/** Decodes an HTTP/1.1 chunked body; `push` returns false at its end. */
class Dechunker {
  #left = 0; // bytes of the current chunk still to come
  #line = ""; // the size line read so far
  #crlf = 0; // bytes of the CRLF after a chunk still to skip

  push(b: Uint8Array, out: (data: Uint8Array) => void): boolean {
    let i = 0;
    while (i < b.length) {
      if (this.#crlf > 0) {
        const n = Math.min(this.#crlf, b.length - i);
        this.#crlf -= n;
        i += n;
      } else if (this.#left > 0) {
        const n = Math.min(this.#left, b.length - i);
        out(b.subarray(i, i + n));
        this.#left -= n;
        i += n;
        if (this.#left === 0) this.#crlf = 2;
      } else {
        const nl = b.indexOf(10, i);
        const end = nl < 0 ? b.length : nl;
        this.#line += String.fromCharCode(...b.subarray(i, end));
        i = end + 1;
        if (nl < 0) break;
        const size = parseInt(this.#line.trim().split(";")[0], 16);
        this.#line = "";
        if (!(size > 0)) return false;
        this.#left = size;
      }
    }
    return true;
  }
}

/** One SSE connection. */
class Sse {
  readonly ready: Promise<boolean>;
  open = false;
  #onReady!: (ok: boolean) => void;
  #conn: Deno.TcpConn | undefined;
  #head = "";
  #chunks: Dechunker | undefined;
  #text = "";
  #decoder = new TextDecoder();
  #at = 0;
  #closing = false;

  constructor() {
    this.ready = new Promise((r) => this.#onReady = r);
    this.#run().catch(() => {
      if (!this.#closing) failedReads++;
    }).finally(() => {
      this.open = false;
      this.#onReady(false);
    });
  }

  async #run(): Promise<void> {
    const conn = this.#conn = await Deno.connect({
      hostname: "127.0.0.1",
      port,
    });
    await conn.write(
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n",
      ),
    );
    const buf = new Uint8Array(16 * 1024);
    while (true) {
      const n = await conn.read(buf);
      if (n === null) return;
      this.#at = now();
      if (!this.#bytes(buf.subarray(0, n))) return;
    }
  }

  /** Takes bytes read; false once the response is over. */
  #bytes(b: Uint8Array): boolean {
    if (this.#chunks === undefined) {
      this.#head += String.fromCharCode(...b);
      const end = this.#head.indexOf("\r\n\r\n");
      if (end < 0) return true;
      if (!/^HTTP\/1\.1 200 /.test(this.#head)) return false;
      if (!/\r\ntransfer-encoding:\s*chunked/i.test(this.#head)) return false;
      this.#chunks = new Dechunker();
      // The head was read as Latin-1: one char per byte, back to bytes.
      const rest = Uint8Array.from(
        this.#head.slice(end + 4),
        (ch) => ch.charCodeAt(0),
      );
      this.#head = "";
      return this.#chunks.push(rest, (d) => this.#data(d));
    }
    return this.#chunks.push(b, (d) => this.#data(d));
  }

  #data(d: Uint8Array): void {
    this.#text += this.#decoder.decode(d, { stream: true });
    let end;
    while ((end = this.#text.indexOf("\n\n")) >= 0) {
      this.#message(this.#text.slice(0, end));
      this.#text = this.#text.slice(end + 2);
    }
  }

  #message(m: string): void {
    if (/^event: (create|update|delete)$/m.test(m)) {
      const seq = /"seq":(\d+)/.exec(m), sent = /"sent":([-\d.e+]+)/.exec(m);
      if (seq && sent) {
        seqs.push(Number(seq[1]));
        sents.push(Number(sent[1]));
        arrivals.push(this.#at);
      }
    } else if (/^event: ready$/m.test(m)) {
      this.open = true;
      this.#onReady(true);
    } else if (/^event: error$/m.test(m)) {
      this.open = false;
    }
  }

  close(): void {
    this.#closing = true;
    try {
      this.#conn?.close();
    } catch { /* closed */ }
  }
}

const conns: Sse[] = [];

/** The p-th quantile of sorted numbers. */
function pct(xs: Float64Array, p: number): number {
  return xs.length === 0
    ? NaN
    : xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];
}

function summary(xs: Float64Array): { p50: number; p99: number; max: number } {
  xs.sort();
  return { p50: pct(xs, 0.5), p99: pct(xs, 0.99), max: pct(xs, 1) };
}

async function open(n: number): Promise<Record<string, number>> {
  const t0 = performance.now();
  let failed = 0;
  // A hundred at a time: the server's accept queue is not what is measured.
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from({ length: Math.min(100, n - i) }, () => {
      const c = new Sse();
      conns.push(c);
      return c.ready;
    });
    failed += (await Promise.all(batch)).filter((ok) => !ok).length;
  }
  return {
    open: conns.filter((c) => c.open).length,
    failed,
    ms: performance.now() - t0,
  };
}

function stats(from: number, acks: number[]): Record<string, unknown> {
  const afterAck: number[] = [], afterSent: number[] = [];
  const first = new Map<number, number>(), last = new Map<number, number>();
  for (let i = 0; i < seqs.length; i++) {
    const k = seqs[i] - from;
    if (k < 0 || k >= acks.length) continue;
    afterAck.push(arrivals[i] - acks[k]);
    afterSent.push(arrivals[i] - sents[i]);
    first.set(k, Math.min(first.get(k) ?? Infinity, arrivals[i]));
    last.set(k, Math.max(last.get(k) ?? -Infinity, arrivals[i]));
  }
  const spread = [...first].map(([k, t]) => last.get(k)! - t);
  seqs.length = sents.length = arrivals.length = 0;
  return {
    deliveries: afterAck.length,
    open: conns.filter((c) => c.open).length,
    failedReads,
    afterAck: summary(Float64Array.from(afterAck)),
    afterSent: summary(Float64Array.from(afterSent)),
    spread: summary(Float64Array.from(spread)),
  };
}

const out = new TextEncoder();
const reply = (v: unknown) =>
  Deno.stdout.write(out.encode(JSON.stringify(v) + "\n"));
const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
let pending = "";
for await (const text of lines) {
  pending += text;
  let nl;
  while ((nl = pending.indexOf("\n")) >= 0) {
    const cmd = JSON.parse(pending.slice(0, nl));
    pending = pending.slice(nl + 1);
    if (cmd.cmd === "open") await reply(await open(cmd.n));
    else if (cmd.cmd === "count") {
      await reply({
        deliveries: seqs.length,
        open: conns.filter((c) => c.open).length,
      });
    } else if (cmd.cmd === "stats") await reply(stats(cmd.from, cmd.acks));
    else if (cmd.cmd === "close") {
      for (const c of conns) c.close();
      await reply({ closed: conns.length });
      Deno.exit(0);
    }
  }
}
