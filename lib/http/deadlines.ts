/**
 * Request-body deadlines without a timer per request: a body reader
 * registers a watch and notes progress on every chunk (one timestamp); the
 * server's sweeper (one timer for all connections) expires watches that got
 * no bytes for `idleMs` or ran past `totalMs`, cancelling their reader. The
 * reader then throws a 408 (`timeout`) whose response closes the connection.
 *
 * The watches and their limits belong to one `BodyDeadlines` (each app has
 * its own, from its config: `Core.bodies`); the server that serves the app
 * sweeps it. A watch without one, or one nobody sweeps (a handler called
 * in-process), never expires.
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

/** Defaults of the body limits. */
export const DEFAULT_BODY_LIMITS: Readonly<BodyLimits> = Object.freeze({
  idleMs: 30_000,
  totalMs: 600_000,
  minRate: 500,
});

/**
 * The body reads in progress of one app and their limits: body readers
 * register a `BodyWatch` here, the server's sweeper calls `sweep()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BodyDeadlines, BodyWatch } from "moonbase/lib/http/deadlines.ts";
 * const bodies = new BodyDeadlines({ idleMs: 10, totalMs: 1000, minRate: 0 });
 * const reader = new ReadableStream<Uint8Array>().getReader();
 * const watch = new BodyWatch(reader, bodies);
 * assert.equal(bodies.size, 1);
 * bodies.sweep(performance.now() + 20);
 * assert.equal(watch.expired, "idle");
 * assert.equal(bodies.size, 0);
 * ```
 */
export class BodyDeadlines {
  readonly limits: Readonly<BodyLimits>;
  readonly #watches = new Set<BodyWatch>();

  constructor(limits: BodyLimits = DEFAULT_BODY_LIMITS) {
    this.limits = Object.freeze({ ...limits });
  }

  /** Body reads being watched now. */
  get size(): number {
    return this.#watches.size;
  }

  /** Registers a read (called by `BodyWatch`). */
  add(w: BodyWatch): void {
    this.#watches.add(w);
  }

  /** Forgets a read (called by `BodyWatch`). */
  delete(w: BodyWatch): void {
    this.#watches.delete(w);
  }

  /** Expires the body reads past their deadline; `now` is performance.now(). */
  sweep(now: number): void {
    const { idleMs, totalMs, minRate } = this.limits;
    for (const w of this.#watches) {
      const took = now - w.start;
      if (now - w.last >= idleMs) w.expire("idle");
      else if (took >= totalMs) w.expire("total");
      else if (
        minRate > 0 && took >= idleMs && w.bytes * 1000 < minRate * took
      ) w.expire("slow");
    }
  }
}

/** A reader that can be cancelled (a `ReadableStreamDefaultReader`). */
interface Cancellable {
  cancel(reason?: unknown): Promise<void>;
}

/**
 * The deadline of one body read, registered with the app's `BodyDeadlines`
 * (none: it never expires). Call `step()` after every `read()` (it throws
 * the 408 when the sweeper expired the read) and `done()` at the end.
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
  readonly #bodies: BodyDeadlines | undefined;

  constructor(reader: Cancellable, bodies?: BodyDeadlines) {
    this.start = this.last = performance.now();
    this.#reader = reader;
    this.#bodies = bodies;
    bodies?.add(this);
  }

  /** Notes progress (`n` bytes read); throws the 408 when the read was expired. */
  step(n = 0): void {
    if (this.expired) throw this.error();
    this.last = performance.now();
    this.bytes += n;
  }

  /** Ends the watch (call it in `finally`). */
  done(): void {
    this.#bodies?.delete(this);
  }

  /** Expires the read: the pending `read()` ends and `step()` throws. */
  expire(why: "idle" | "total" | "slow"): void {
    this.expired = why;
    this.#bodies?.delete(this);
    // The pending read ends either way; a stream already closed may reject.
    this.#reader.cancel().catch(() => {});
  }

  /** The 408 for an expired read. */
  error(): MoonbaseError {
    const limits = this.#bodies?.limits ?? DEFAULT_BODY_LIMITS;
    const message = this.expired === "total"
      ? `Cannot read body: not complete within ${limits.totalMs / 1000} s`
      : this.expired === "slow"
      ? `Cannot read body: it arrives slower than ${limits.minRate} bytes per second`
      : `Cannot read body: no data for ${limits.idleMs / 1000} s`;
    return new MoonbaseError("timeout", message, null, { connection: "close" });
  }
}
