/**
 * Counts of open realtime streams (SSE streams and WebSockets) under keys
 * (a token, a user, a client address, every stream), each with a limit. A
 * new stream is counted under all its keys at once, or under none when one
 * is at its limit. One process's isolates share one count
 * (lib/cluster/stream_table.ts); a single isolate counts in memory.
 *
 * @module
 */

/** One key a stream counts under, and how many streams it may have. */
export interface Quota {
  key: string;
  limit: number;
}

/** Open streams by key. */
export interface StreamCounts {
  /**
   * Counts one stream under every key when each is below its limit (all
   * or none); otherwise counts nothing and returns the first quota reached.
   */
  take(quotas: readonly Quota[]): Quota | undefined;
  /** Uncounts one stream under each key (taken before). */
  give(keys: readonly string[]): void;
}

/**
 * Stream counts of one isolate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalStreamCounts } from "moonbase/lib/realtime/stream_counts.ts";
 * const c = new LocalStreamCounts();
 * const q = [{ key: "a", limit: 1 }, { key: "all", limit: 5 }];
 * assert.equal(c.take(q), undefined);
 * assert.equal(c.take(q)?.key, "a"); // at its limit: nothing counted
 * c.give(["a", "all"]);
 * assert.equal(c.take(q), undefined);
 * ```
 */
export class LocalStreamCounts implements StreamCounts {
  readonly #counts = new Map<string, number>();

  take(quotas: readonly Quota[]): Quota | undefined {
    const full = quotas.find((q) => (this.#counts.get(q.key) ?? 0) >= q.limit);
    if (full) return full;
    for (const q of quotas) {
      this.#counts.set(q.key, (this.#counts.get(q.key) ?? 0) + 1);
    }
    return undefined;
  }

  give(keys: readonly string[]): void {
    for (const k of keys) {
      const n = (this.#counts.get(k) ?? 1) - 1;
      if (n > 0) this.#counts.set(k, n);
      else this.#counts.delete(k);
    }
  }
}
