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
  nextSeq,
  requestMessage,
  rowEntry,
  unpackRequests,
} from "./rows.ts";
import { appEntry, pretty, stamped } from "./entries.ts";
import { type PackedChunk, RequestPacker } from "./packed.ts";
import { RepeatedFailure } from "./failure.ts";

export { logId, logIdFloor } from "./rows.ts";
export { scrub } from "./entries.ts";

/**
 * Queued entries are handed on within this time: short enough that they die
 * young (entries kept for 200 ms survived into the old generation and cost
 * ~8 µs of garbage collection per request under load), long enough to batch.
 */
const FLUSH_MS = 20;
const MAX_QUEUE = 20_000;
const BATCH = 1000;
/** Characters of a client's error text a request entry keeps. */
const MAX_ERROR = 1000;
/** Least time between two stderr lines about failed log writes. */
const WRITE_FAILED_EVERY = 60_000;

/** Console formats. */
export type ConsoleMode = "json" | "pretty" | "off";

/** Writes log entries. */
export class Logger {
  #store: LogStore | undefined;
  #min: number;
  #console: ConsoleMode;
  #queue: LogEntry[] = [];
  /** Request entries being packed, and full chunks (`BATCH` each) waiting. */
  #packer = new RequestPacker();
  #chunks: PackedChunk[] = [];
  #chunked = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #flushing: Promise<void> | undefined;
  #dropped = 0;
  #encoder = new TextEncoder();
  /** Pretty lines are coloured only on a terminal, and never with NO_COLOR. */
  #color = !Deno.noColor && Deno.stdout.isTerminal();
  /** A store that fails fails every batch: one stderr line a minute. */
  #writeFailed = new RepeatedFailure(
    { warn: (_, data) => this.#printError(data) },
    "cannot write logs",
    { everyMs: WRITE_FAILED_EVERY },
  );

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
    this.#queue.push(stamped(entry));
    this.#schedule();
  }

  /**
   * A request entry, packed: its values and characters copied into typed
   * arrays, no object kept (its id, time, level name and message are made
   * when it is written). An answer with an error keeps the text the client
   * got in the entry's `data.error` (a row of its own, not packed).
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
    error: string | null = null,
  ): void {
    const rank = levelRank(level);
    if (rank < this.#min) return;
    if (error !== null) {
      return this.write({
        level,
        type: "request",
        message: requestMessage(method, path, status),
        method,
        path,
        status,
        duration_ms: durationMs,
        ip,
        auth_id: authId,
        auth_entity: authEntity,
        request_id: requestId,
        data: { error: error.slice(0, MAX_ERROR) },
      });
    }
    if (this.#full()) return;
    const packer = this.#packer;
    packer.add(
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
    if (packer.rows === BATCH) {
      this.#chunks.push(packer.take());
      this.#chunked += BATCH;
    }
    this.#schedule();
  }

  /** True (and counted as dropped) when the queue is full. */
  #full(): boolean {
    if (this.#backlog() < MAX_QUEUE) {
      return false;
    }
    this.#dropped++;
    return true;
  }

  /**
   * A hand-off is scheduled only while entries wait (no wake-ups when idle)
   * and none is being written: the next one waits for the timer, so
   * batches stay large however fast the writer answers.
   */
  #schedule(): void {
    if (this.#timer === undefined && !this.#closed && !this.#flushing) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        // Never rejects: a failed write is reported by #writeFailed.
        void this.#drain(false);
      }, FLUSH_MS);
    }
  }

  /** An application event. */
  app(level: Level, message: string, data?: Record<string, unknown>): void {
    if (!this.enabled(level)) return;
    this.write(appEntry(level, message, data));
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
    return this.#drain(true);
  }

  #waiting(): boolean {
    return this.#backlog() > 0 || this.#dropped > 0;
  }

  /**
   * Hands batches on, one at a time (each waits for the previous one to be
   * written, so memory stays bounded by the queue): all of them (`all`), or
   * on the timer one, and more only while a full batch is waiting (the
   * writer fell behind and catches up).
   */
  #drain(all: boolean): Promise<void> {
    if (this.#flushing) {
      return all
        ? this.#flushing.then(() => this.#drain(true))
        : this.#flushing;
    }
    if (!this.#waiting()) return Promise.resolve();
    // Cleared in a later microtask than it is set, even when nothing awaits.
    this.#flushing = this.#handOn(all).finally(() => {
      this.#flushing = undefined;
      if (this.#waiting()) this.#schedule();
    });
    return this.#flushing;
  }

  async #handOn(all: boolean): Promise<void> {
    do {
      const batch = this.#queue.splice(0, BATCH);
      let packed = this.#chunks.shift();
      if (packed) this.#chunked -= packed.rows;
      else if (this.#packer.rows > 0) packed = this.#packer.take();
      // The notice joins the batch whatever the queue holds (queued behind
      // a full queue, it would be dropped and counted once more).
      if (this.#dropped > 0 && this.enabled("warn")) {
        batch.push(stamped(appEntry("warn", "log queue full: entries dropped", {
          dropped: this.#dropped,
        })));
      }
      this.#dropped = 0;
      this.#print(batch, packed);
      if (this.#store) {
        this.#packer.reuse(
          await this.#store.insert(batch, packed).catch((err) => {
            this.#writeFailed.report(err);
            return undefined;
          }),
        );
      }
    } while (all ? this.#waiting() : this.#backlog() >= BATCH);
  }

  /** Entries waiting. */
  #backlog(): number {
    return this.#queue.length + this.#chunked + this.#packer.rows;
  }

  #print(batch: LogEntry[], packed: PackedChunk | undefined): void {
    if (this.#console === "off") return;
    // Request lines go to the console in --dev only; the log store always has them.
    let shown = batch;
    if (this.#console === "pretty") {
      if (packed) {
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

  /** The log store cannot be written to: only stderr is left to say so. */
  #printError(data: Record<string, unknown> | undefined): void {
    const repeated = data?.repeated
      ? ` (${data.repeated} more failed since the last line)`
      : "";
    try {
      Deno.stderr.writeSync(
        this.#encoder.encode(
          `moonbase: cannot write logs: ${data?.error}${repeated}\n`,
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
