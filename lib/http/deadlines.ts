/**
 * Request-body deadlines without a timer per request: a body reader
 * registers a watch and notes progress on every chunk (one timestamp); the
 * server's sweeper (one timer for all connections) expires watches that got
 * no bytes for `idleMs` or ran past `totalMs`, cancelling their reader. The
 * reader then throws a 408 (`timeout`) whose response closes the connection.
 *
 * The limits are process-wide: the last server started sets them. Without a
 * running server (a handler called in-process) nothing expires.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** Body time limits in milliseconds. */
export interface BodyLimits {
  /** Longest pause between two chunks of a body. */
  idleMs: number;
  /** Longest time a whole body may take. */
  totalMs: number;
  /**
   * Least average rate (bytes per second) a body must keep once it has taken
   * longer than `idleMs` (0: none): a client trickling a byte just inside
   * `idleMs` would otherwise hold its connection until `totalMs`.
   */
  minRate: number;
}

let limits: BodyLimits = { idleMs: 30_000, totalMs: 600_000, minRate: 500 };
const watches = new Set<BodyWatch>();

/** Sets the process-wide body limits (done by the server when it starts). */
export function setBodyLimits(next: BodyLimits): void {
  limits = { ...next };
}

/** A reader that can be cancelled (a `ReadableStreamDefaultReader`). */
interface Cancellable {
  cancel(reason?: unknown): Promise<void>;
}

/**
 * The deadline of one body read. Call `step()` after every `read()` (it
 * throws the 408 when the sweeper expired the read) and `done()` at the end.
 *
 * @example
 * ```ts
 * import { BodyWatch } from "moonbase/lib/http/deadlines.ts";
 * import assert from "node:assert/strict";
 * const reader = new Blob(["hi"]).stream().getReader();
 * const watch = new BodyWatch(reader);
 * const { value } = await reader.read();
 * watch.step();
 * watch.done();
 * assert.equal(value?.length, 2);
 * ```
 */
export class BodyWatch {
  /** When the body read started (performance.now()). */
  readonly start: number;
  /** When the last chunk arrived. */
  last: number;
  /** Bytes read so far. */
  bytes = 0;
  /** Why the sweeper expired this read ("" while it may go on). */
  expired: "" | "idle" | "total" | "slow" = "";
  readonly #reader: Cancellable;

  constructor(reader: Cancellable) {
    this.start = this.last = performance.now();
    this.#reader = reader;
    watches.add(this);
  }

  /** Notes progress (`n` bytes read); throws the 408 when the read was expired. */
  step(n = 0): void {
    if (this.expired) throw this.error();
    this.last = performance.now();
    this.bytes += n;
  }

  /** Ends the watch (call it in `finally`). */
  done(): void {
    watches.delete(this);
  }

  /** Expires the read: the pending `read()` ends and `step()` throws. */
  expire(why: "idle" | "total" | "slow"): void {
    this.expired = why;
    watches.delete(this);
    this.#reader.cancel().catch(() => {});
  }

  /** The 408 for an expired read. */
  error(): MoonbaseError {
    const message = this.expired === "total"
      ? `Cannot read body: not complete within ${limits.totalMs / 1000} s`
      : this.expired === "slow"
      ? `Cannot read body: it arrives slower than ${limits.minRate} bytes per second`
      : `Cannot read body: no data for ${limits.idleMs / 1000} s`;
    return new MoonbaseError("timeout", message, null, { connection: "close" });
  }
}

/** Expires the body reads past their deadline; `now` is performance.now(). */
export function sweepBodies(now: number): void {
  for (const w of watches) {
    const took = now - w.start;
    if (now - w.last >= limits.idleMs) w.expire("idle");
    else if (took >= limits.totalMs) w.expire("total");
    else if (
      limits.minRate > 0 && took >= limits.idleMs &&
      w.bytes * 1000 < limits.minRate * took
    ) w.expire("slow");
  }
}
