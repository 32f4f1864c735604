/**
 * A gate for password hashing: at most `limit` scrypt runs at once (one per
 * core), the rest wait in arrival order. Without it, a burst of logins runs
 * every scrypt at once: each takes as long as the whole burst, and each holds
 * its 32 MB of memory meanwhile.
 *
 * Two priorities: `high` (login verification) goes ahead of `low` (hashing
 * new passwords: sign-ups, password changes), and `low` work holds at most
 * `limit - 1` slots (at least one), so a flood of sign-ups cannot keep a
 * login waiting for more than the scrypt runs already started.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** Who waits first: logins (`high`) or new passwords (`low`). */
export type KdfPriority = "high" | "low";

/** Runs tasks with bounded concurrency and bounded queues (FIFO per priority). */
export class KdfGate {
  #limit: number;
  readonly maxWaiting: number;
  /** Most `low` tasks running at once. */
  #lowLimit: number;
  /** Most `low` tasks waiting (a sign-up flood cannot fill the login queue). */
  readonly maxLowWaiting: number;
  #whole: number | undefined;
  #running = 0;
  #runningLow = 0;
  #high: (() => void)[] = [];
  #low: (() => void)[] = [];

  /**
   * At most `limit` tasks at once and `maxWaiting` queued behind them
   * (`maxLowWaiting` of them low-priority; default a quarter, at least 1).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KdfGate } from "moonbase/lib/auth/kdf_gate.ts";
   * const gate = new KdfGate(1, 10);
   * const order: string[] = [];
   * const tick = () => new Promise((r) => setTimeout(r, 5));
   * const job = (name: string) => async () => {
   *   order.push(name);
   *   await tick();
   * };
   * await Promise.all([
   *   gate.run(job("first"), "low"),
   *   gate.run(job("signup"), "low"),
   *   gate.run(job("login"), "high"),
   * ]);
   * assert.deepEqual(order, ["first", "login", "signup"]);
   * ```
   */
  constructor(limit: number, maxWaiting: number, maxLowWaiting?: number) {
    this.#limit = Math.max(1, Math.floor(limit));
    this.maxWaiting = Math.max(0, Math.floor(maxWaiting));
    this.#lowLimit = Math.max(1, this.#limit - 1);
    this.maxLowWaiting = Math.max(
      0,
      Math.floor(maxLowWaiting ?? Math.max(1, this.maxWaiting / 4)),
    );
  }

  /** Most tasks running at once. */
  get limit(): number {
    return this.#limit;
  }

  /** Most `low` tasks running at once. */
  get lowLimit(): number {
    return this.#lowLimit;
  }

  /**
   * Keeps `1 / parts` of the slots (at least one): each of `parts` isolates
   * of one process has a gate of its own, and the cores are the process's.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KdfGate } from "moonbase/lib/auth/kdf_gate.ts";
   * const gate = new KdfGate(4, 10);
   * gate.share(2);
   * assert.deepEqual([gate.limit, gate.lowLimit], [2, 1]);
   * gate.share(8);
   * assert.deepEqual([gate.limit, gate.lowLimit], [1, 1]);
   * ```
   */
  share(parts: number): void {
    const whole = this.#whole ??= this.#limit;
    this.#limit = Math.max(1, Math.floor(whole / Math.max(1, parts)));
    this.#lowLimit = Math.max(1, this.#limit - 1);
  }

  /** Tasks running now. */
  get running(): number {
    return this.#running;
  }

  /** Tasks waiting for a turn. */
  get waiting(): number {
    return this.#high.length + this.#low.length;
  }

  /**
   * Runs `task` when a slot is free (`high` priority unless told). Throws a
   * 503 `MoonbaseError` at once when its queue is full.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KdfGate } from "moonbase/lib/auth/kdf_gate.ts";
   * const gate = new KdfGate(2, 0);
   * assert.equal(await gate.run(() => Promise.resolve(42)), 42);
   * ```
   */
  async run<T>(
    task: () => Promise<T>,
    priority: KdfPriority = "high",
  ): Promise<T> {
    const low = priority === "low";
    if (this.#free(low)) this.#start(low);
    else {
      const queue = low ? this.#low : this.#high;
      if (queue.length >= (low ? this.maxLowWaiting : this.maxWaiting)) {
        throw new MoonbaseError(
          "unavailable",
          "Cannot hash the password now: too many password checks in progress; try again",
          null,
          { "Retry-After": "1" },
        );
      }
      // The slot is counted by #dispatch before the waiter wakes.
      await new Promise<void>((go) => queue.push(go));
    }
    try {
      return await task();
    } finally {
      this.#running--;
      if (low) this.#runningLow--;
      this.#dispatch();
    }
  }

  #free(low: boolean): boolean {
    if (this.#running >= this.limit) return false;
    // A login goes first while logins wait; a sign-up also waits behind
    // earlier sign-ups and leaves a slot for logins.
    return low
      ? this.#high.length === 0 && this.#low.length === 0 &&
        this.#runningLow < this.lowLimit
      : this.#high.length === 0;
  }

  #start(low: boolean): void {
    this.#running++;
    if (low) this.#runningLow++;
  }

  #dispatch(): void {
    while (this.#running < this.limit) {
      const high = this.#high.shift();
      if (high) {
        this.#start(false);
        high();
        continue;
      }
      if (this.#low.length === 0 || this.#runningLow >= this.lowLimit) return;
      this.#start(true);
      this.#low.shift()!();
    }
  }
}
