/**
 * First-admin setup runs one request at a time per instance: the check "no
 * admin yet" and the creation of the admin must not interleave with another
 * setup request of the same instance (two admins would be created).
 *
 * @module
 */

/**
 * A queue of one: each task starts once the previous one has settled. One
 * per instance (`Core.setupGate`): another app in the same process has its
 * own and never waits for this one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SetupGate } from "moonbase/lib/auth/setup_gate.ts";
 * const gate = new SetupGate();
 * const order: string[] = [];
 * const tick = () => new Promise((r) => setTimeout(r, 5));
 * await Promise.all([
 *   gate.run(async () => { await tick(); order.push("first"); }),
 *   gate.run(() => { order.push("second"); return Promise.resolve(); }),
 * ]);
 * assert.deepEqual(order, ["first", "second"]);
 * ```
 */
export class SetupGate {
  #last: Promise<unknown> = Promise.resolve();

  /** Runs `task` after every task queued before it; a failure does not stop the queue. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#last.then(task);
    this.#last = run.catch(() => {});
    return run;
  }
}
