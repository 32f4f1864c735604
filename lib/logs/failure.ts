/**
 * Failures of work that repeats on a timer (the log prune every minute, the
 * polls that keep an instance in step every second or so): each one is
 * written to the log, but at most one line per `everyMs`, which says how
 * many more failed since the last line. A broken database is one line a
 * while, not a line a second.
 *
 * @module
 */

/** Where a failure line goes: the app's logger (lib/logs/logger.ts). */
export interface FailureLog {
  warn(message: string, data?: Record<string, unknown>): void;
}

/** Ten minutes between two lines about the same failing work. */
export const FAILURE_LINE_EVERY = 600_000;

/**
 * One kind of repeated work that may fail: `message` names it ("Cannot
 * prune logs").
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RepeatedFailure } from "moonbase/lib/logs/failure.ts";
 * const lines: unknown[] = [];
 * let now = 0;
 * const f = new RepeatedFailure(
 *   { warn: (message, data) => lines.push({ message, ...data }) },
 *   "Cannot prune logs",
 *   { everyMs: 1000, now: () => now },
 * );
 * f.report(new Error("disk I/O error"));
 * f.report(new Error("disk I/O error"));
 * now = 1000;
 * f.report(new Error("disk I/O error"));
 * assert.deepEqual(lines, [
 *   { message: "Cannot prune logs", error: "disk I/O error" },
 *   { message: "Cannot prune logs", error: "disk I/O error", repeated: 1 },
 * ]);
 * ```
 */
export class RepeatedFailure {
  readonly #log: FailureLog;
  readonly #message: string;
  readonly #every: number;
  readonly #now: () => number;
  #last = -Infinity;
  #unwritten = 0;

  /** `everyMs`: the least time between two lines; `now`: the clock (tests). */
  constructor(
    log: FailureLog,
    message: string,
    options: { everyMs?: number; now?: () => number } = {},
  ) {
    this.#log = log;
    this.#message = message;
    this.#every = options.everyMs ?? FAILURE_LINE_EVERY;
    this.#now = options.now ?? Date.now;
  }

  /** A failure: written now, or counted into the next line. */
  report(err: unknown): void {
    const now = this.#now();
    if (now - this.#last < this.#every) {
      this.#unwritten++;
      return;
    }
    this.#last = now;
    const repeated = this.#unwritten;
    this.#unwritten = 0;
    this.#log.warn(this.#message, {
      error: err instanceof Error ? err.message : String(err),
      ...(repeated > 0 && { repeated }),
    });
  }
}
