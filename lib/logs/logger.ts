/**
 * The logger: entries are queued and written in batches off the request
 * path (to the log store and to the console). Values that look like
 * secrets are never written.
 *
 * @module
 */

import type { LogStore } from "./store.ts";
import { type Level, levelRank, type LogEntry } from "./types.ts";
import {
  entryRow,
  isoOf,
  logId,
  nextSeq,
  PACKED_FIELDS,
  type PackedRequests,
  rowEntry,
  unpackRequests,
} from "./rows.ts";

export { logId, logIdFloor } from "./rows.ts";

/**
 * Queued entries are handed on within this time: short enough that they die
 * young (entries kept for 200 ms survived into the old generation and cost
 * ~8 µs of garbage collection per request under load), long enough to batch.
 */
const FLUSH_MS = 20;
const MAX_QUEUE = 20_000;
const BATCH = 1000;
const SECRET_KEY = /pass|secret|token|authorization|hash|cookie/i;

/** Console formats. */
export type ConsoleMode = "json" | "pretty" | "off";

const COLORS: Record<Level, string> = {
  trace: "\x1b[90m",
  debug: "\x1b[36m",
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
};

/** Removes secret-looking keys (recursively) from log data. */
export function scrub(
  data: Record<string, unknown> | undefined,
): Record<string, unknown> | null {
  if (!data) return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    if (SECRET_KEY.test(k)) continue;
    out[k] = v && typeof v === "object" && !Array.isArray(v)
      ? scrub(v as Record<string, unknown>)
      : v;
  }
  return out;
}

/** Writes log entries. */
export class Logger {
  #store: LogStore | undefined;
  #min: number;
  #console: ConsoleMode;
  #queue: LogEntry[] = [];
  #packed: PackedRequests = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #flushing: Promise<void> | undefined;
  #dropped = 0;
  #encoder = new TextEncoder();
  /** Pretty lines are coloured only on a terminal, and never with NO_COLOR. */
  #color = !Deno.noColor && Deno.stdout.isTerminal();

  /** `level` is the least severe level kept (store and console). */
  constructor(
    store: LogStore | undefined,
    level: Level,
    consoleMode: ConsoleMode,
  ) {
    this.#store = store;
    this.#min = levelRank(level);
    this.#console = consoleMode;
  }

  /** True when entries of `level` are kept. */
  enabled(level: Level): boolean {
    return levelRank(level) >= this.#min;
  }

  /** Queues an entry (cheap: no I/O here). */
  write(entry: Omit<LogEntry, "id" | "time"> & { time?: string }): void {
    if (!this.enabled(entry.level)) return;
    if (this.#full()) return;
    const e = entry as LogEntry;
    if (e.time) {
      const ms = Date.parse(e.time);
      e.id = logId(Number.isNaN(ms) ? Date.now() : ms);
    } else {
      const ms = Date.now();
      e.time = isoOf(ms);
      e.id = logId(ms);
    }
    this.#queue.push(e);
    this.#schedule();
  }

  /**
   * A request entry, packed: eleven values on one array, no object (its id,
   * time, level name and message are made when it is written).
   */
  request(
    level: Level,
    method: string,
    path: string,
    status: number,
    durationMs: number,
    ip: string | null,
    authId: string | null,
    authEntity: string | null,
    requestId: string,
  ): void {
    const rank = levelRank(level);
    if (rank < this.#min || this.#full()) return;
    this.#packed.push(
      Date.now(),
      nextSeq(),
      rank,
      method,
      path,
      status,
      durationMs,
      ip,
      authId,
      authEntity,
      requestId,
    );
    this.#schedule();
  }

  /** True (and counted as dropped) when the queue is full. */
  #full(): boolean {
    if (this.#queue.length + this.#packed.length / PACKED_FIELDS < MAX_QUEUE) {
      return false;
    }
    this.#dropped++;
    return true;
  }

  /** A flush is scheduled only while entries wait: no wake-ups when idle. */
  #schedule(): void {
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, FLUSH_MS);
    }
  }

  /** An application event. */
  app(level: Level, message: string, data?: Record<string, unknown>): void {
    if (!this.enabled(level)) return;
    this.write({
      level,
      type: "app",
      message,
      method: null,
      path: null,
      status: null,
      duration_ms: null,
      ip: null,
      auth_id: null,
      auth_entity: null,
      request_id: null,
      data: scrub(data),
    });
  }

  /** Shorthands. */
  info(message: string, data?: Record<string, unknown>): void {
    this.app("info", message, data);
  }
  /** A warning event. */
  warn(message: string, data?: Record<string, unknown>): void {
    this.app("warn", message, data);
  }
  /** An error event. */
  error(message: string, data?: Record<string, unknown>): void {
    this.app("error", message, data);
  }

  /** Writes the queue to the store and the console. */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    const waiting = () =>
      this.#queue.length > 0 || this.#packed.length > 0 || this.#dropped > 0;
    if (!waiting()) return Promise.resolve();
    this.#flushing = (async () => {
      try {
        while (waiting()) {
          if (this.#dropped > 0) {
            const n = this.#dropped;
            this.#dropped = 0;
            this.app("warn", "log queue full: entries dropped", { dropped: n });
          }
          const batch = this.#queue.splice(0, BATCH);
          const packed = this.#packed.splice(0, BATCH * PACKED_FIELDS);
          this.#print(batch, packed);
          if (this.#store) {
            await this.#store.insert(batch, packed).catch((err) =>
              this.#printError(err)
            );
          }
        }
      } finally {
        this.#flushing = undefined;
      }
    })();
    return this.#flushing;
  }

  #print(batch: LogEntry[], packed: PackedRequests): void {
    if (this.#console === "off") return;
    // Request lines go to the console in --dev only; the log store always has them.
    let shown = batch;
    if (this.#console === "pretty") {
      if (packed.length > 0) {
        const rows = batch.map(entryRow);
        unpackRequests(packed, rows);
        // Ids sort by time, then by the process's sequence: arrival order.
        shown = rows.map(rowEntry).sort((a, b) => a.id < b.id ? -1 : 1);
      }
    } else shown = batch.filter((e) => e.type === "app");
    if (shown.length === 0) return;
    const lines =
      shown.map((e) =>
        this.#console === "json" ? JSON.stringify(e) : pretty(e, this.#color)
      )
        .join("\n") + "\n";
    try {
      Deno.stdout.writeSync(this.#encoder.encode(lines));
    } catch { /* stdout closed */ }
  }

  #printError(err: unknown): void {
    try {
      Deno.stderr.writeSync(
        this.#encoder.encode(
          `moonbase: cannot write logs: ${
            err instanceof Error ? err.message : err
          }\n`,
        ),
      );
    } catch { /* stderr closed */ }
  }

  /** Flushes and stops the timer. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}

function pretty(e: LogEntry, color: boolean): string {
  const level = e.level.toUpperCase().padEnd(5);
  const head = `${color ? `${COLORS[e.level]}${level}\x1b[0m` : level} ${
    e.time.slice(11, 23)
  }`;
  if (e.type === "request") {
    return `${head} ${e.method} ${e.path} ${e.status} ${
      e.duration_ms?.toFixed(1)
    }ms ${e.ip ?? ""}${e.auth_id ? ` ${e.auth_entity}/${e.auth_id}` : ""}`;
  }
  return `${head} ${e.message}${e.data ? " " + JSON.stringify(e.data) : ""}`;
}
