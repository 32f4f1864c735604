/**
 * A gate for password hashing: at most `limit` scrypt runs at once (one per
 * core), the rest wait in arrival order. Without it, a burst of logins runs
 * every scrypt at once: each takes as long as the whole burst, and each holds
 * its 32 MB of memory meanwhile.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** Runs tasks with bounded concurrency and a bounded queue (FIFO). */
export class KdfGate {
  readonly limit: number;
  readonly maxWaiting: number;
  #running = 0;
  #waiting: (() => void)[] = [];

  /**
   * At most `limit` tasks at once and `maxWaiting` queued behind them.
   *
   * @example
   * ```ts
   * import { KdfGate } from "moonbase/lib/auth/kdf_gate.ts";
   * const gate = new KdfGate(1, 10);
   * const order: number[] = [];
   * const tick = () => new Promise((r) => setTimeout(r, 5));
   * await Promise.all([1, 2, 3].map((n) =>
   *   gate.run(async () => {
   *     order.push(n);
   *     await tick();
   *   })
   * ));
   * console.assert(order.join() === "1,2,3");
   * ```
   */
  constructor(limit: number, maxWaiting: number) {
    this.limit = Math.max(1, Math.floor(limit));
    this.maxWaiting = Math.max(0, Math.floor(maxWaiting));
  }

  /** Tasks running now. */
  get running(): number {
    return this.#running;
  }

  /** Tasks waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `task` when a slot is free. Throws a 503 `MoonbaseError` at once
   * when the queue is full.
   *
   * @example
   * ```ts
   * import { KdfGate } from "moonbase/lib/auth/kdf_gate.ts";
   * const gate = new KdfGate(2, 0);
   * console.assert((await gate.run(() => Promise.resolve(42))) === 42);
   * ```
   */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) {
      if (this.#waiting.length >= this.maxWaiting) {
        throw new MoonbaseError(
          "unavailable",
          "Cannot hash the password now: too many password checks in progress; try again",
          null,
          { "Retry-After": "1" },
        );
      }
      // The slot is handed over by the task that ends (no recount here).
      await new Promise<void>((go) => this.#waiting.push(go));
    } else {
      this.#running++;
    }
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
