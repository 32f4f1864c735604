/**
 * When a connection's unsent messages mean its client does not keep up. A
 * burst (the hub sends a whole batch at once, a resume replays many events)
 * may pass the limit for a moment; a client still behind the limit after a
 * second, or ever four times past it, is too slow and is disconnected. So
 * the memory one connection holds stays bounded, and a fast reader is never
 * dropped for a burst.
 *
 * @module
 */

/** How long the queue may stay over the limit (ms). */
export const BACKLOG_GRACE_MS = 1000;

/**
 * Tracks one connection's backlog.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Backlog } from "moonbase/lib/realtime/backlog.ts";
 * const b = new Backlog(100);
 * assert.equal(b.ok(50, 0), true);
 * assert.equal(b.ok(150, 10), true); // a burst
 * assert.equal(b.ok(150, 2000), false); // still behind a second later
 * assert.equal(new Backlog(100).ok(401, 0), false); // far behind at once
 * ```
 */
export class Backlog {
  readonly #limit: number;
  #since = -1;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** False when `queued` bytes (now, in ms) mean the client is too slow. */
  ok(queued: number, now: number = performance.now()): boolean {
    if (queued <= this.#limit) {
      this.#since = -1;
      return true;
    }
    if (queued > 4 * this.#limit) return false;
    if (this.#since < 0) this.#since = now;
    return now - this.#since < BACKLOG_GRACE_MS;
  }
}
