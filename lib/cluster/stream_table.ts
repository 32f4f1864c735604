/**
 * The realtime stream counts of one process, shared by its isolates: a
 * hash table in a `SharedArrayBuffer` (key → open streams), so a limit per
 * token, user or client address holds however the kernel spreads a
 * client's connections over the workers. Keys are stored as two 32-bit
 * hashes (a collision would only make two keys share a count); a short
 * spin lock guards each change, which is a few memory operations.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Quota, StreamCounts } from "../realtime/stream_counts.ts";

/** Cells before the slots: the lock, and the slots in use. */
const LOCK = 0, USED = 1, HEADER = 2;
/** Cells of a slot: two hashes of the key, and its count. */
const CELLS = 3;
const MAX_SLOTS = 1 << 18;

/**
 * Bytes of a table for a process of at most `maxConnections` connections
 * (each stream counts under at most four keys; the table stays half empty).
 */
export function streamTableBytes(maxConnections: number): number {
  const want = Math.min(MAX_SLOTS, Math.max(64, 8 * maxConnections));
  const slots = 2 ** Math.ceil(Math.log2(want));
  return (HEADER + slots * CELLS) * Int32Array.BYTES_PER_ELEMENT;
}

/** Two 32-bit hashes of a key (never both zero: that marks an empty slot). */
function hashes(key: string): [number, number] {
  let a = 0x811c9dc5, b = 0x9747b28c;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  a ^= a >>> 16;
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  a = Math.imul(a, 0xc2b2ae35);
  a ^= a >>> 16;
  if (a === 0 && b === 0) b = 1;
  return [a | 0, b | 0];
}

/**
 * Stream counts in a shared buffer (every isolate of the process passes
 * the same one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SharedStreamCounts, streamTableBytes } from "moonbase/lib/cluster/stream_table.ts";
 * const buffer = new SharedArrayBuffer(streamTableBytes(16));
 * const a = new SharedStreamCounts(buffer), b = new SharedStreamCounts(buffer);
 * const q = [{ key: "address:203.0.113.9", limit: 2 }];
 * assert.equal(a.take(q), undefined);
 * assert.equal(b.take(q), undefined);
 * assert.equal(a.take(q)?.limit, 2); // the other isolate's stream counts too
 * b.give(["address:203.0.113.9"]);
 * assert.equal(a.take(q), undefined);
 * ```
 */
export class SharedStreamCounts implements StreamCounts {
  readonly #cells: Int32Array;
  readonly #mask: number;
  readonly #slots: number;

  constructor(buffer: SharedArrayBuffer) {
    this.#cells = new Int32Array(buffer);
    this.#slots = (this.#cells.length - HEADER) / CELLS;
    if (!Number.isInteger(Math.log2(this.#slots))) {
      throw new RangeError("Cannot share stream counts: a bad table size");
    }
    this.#mask = this.#slots - 1;
  }

  take(quotas: readonly Quota[]): Quota | undefined {
    return this.#locked(() => {
      const found = quotas.map((q) => this.#find(q.key));
      for (let i = 0; i < quotas.length; i++) {
        const at = found[i];
        const n = at.found ? this.#cells[this.#count(at.slot)] : 0;
        if (n >= quotas[i].limit) return quotas[i];
      }
      const fresh = found.filter((f) => !f.found).length;
      if (Atomics.load(this.#cells, USED) + fresh > this.#slots * 0.9) {
        throw new MoonbaseError(
          "unavailable",
          "Cannot open a realtime connection: too many open; try again later",
        );
      }
      for (const q of quotas) {
        // Looked up again: an earlier insert may have filled its empty slot.
        const at = this.#find(q.key);
        if (at.found) this.#cells[this.#count(at.slot)]++;
        else this.#insert(at.slot, q.key);
      }
      return undefined;
    });
  }

  give(keys: readonly string[]): void {
    this.#locked(() => {
      for (const k of keys) {
        const at = this.#find(k);
        if (!at.found) continue;
        const c = this.#count(at.slot);
        if (--this.#cells[c] <= 0) this.#delete(at.slot);
      }
    });
  }

  #locked<T>(fn: () => T): T {
    const cells = this.#cells;
    // Held for a few memory operations: spin (an isolate that died
    // holding it ends the process: lib/workers/supervisor.ts).
    const deadline = performance.now() + 1000;
    while (Atomics.compareExchange(cells, LOCK, 0, 1) !== 0) {
      if (performance.now() > deadline) {
        throw new MoonbaseError(
          "unavailable",
          "Cannot open a realtime connection: the connection counts are busy; try again",
        );
      }
    }
    try {
      return fn();
    } finally {
      Atomics.store(cells, LOCK, 0);
    }
  }

  #base(slot: number): number {
    return HEADER + slot * CELLS;
  }

  #count(slot: number): number {
    return this.#base(slot) + 2;
  }

  #empty(slot: number): boolean {
    const b = this.#base(slot);
    return this.#cells[b] === 0 && this.#cells[b + 1] === 0;
  }

  #home(slot: number): number {
    return (this.#cells[this.#base(slot)] >>> 0) & this.#mask;
  }

  /** The key's slot, or the empty slot it would go to. */
  #find(key: string): { found: boolean; slot: number } {
    const [a, b] = hashes(key);
    let slot = (a >>> 0) & this.#mask;
    for (let i = 0; i < this.#slots; i++) {
      const base = this.#base(slot);
      if (this.#empty(slot)) return { found: false, slot };
      if (this.#cells[base] === a && this.#cells[base + 1] === b) {
        return { found: true, slot };
      }
      slot = (slot + 1) & this.#mask;
    }
    return { found: false, slot: -1 }; // full (take keeps it from happening)
  }

  #insert(slot: number, key: string): void {
    const [a, b] = hashes(key);
    const base = this.#base(slot);
    this.#cells[base] = a;
    this.#cells[base + 1] = b;
    this.#cells[base + 2] = 1;
    Atomics.add(this.#cells, USED, 1);
  }

  /** Empties a slot, moving back the entries after it (linear probing). */
  #delete(slot: number): void {
    const cells = this.#cells;
    let hole = slot;
    let next = slot;
    for (;;) {
      next = (next + 1) & this.#mask;
      if (this.#empty(next)) break;
      const home = this.#home(next);
      // The entry at `next` may fill the hole unless its home lies
      // (cyclically) after the hole and up to `next`.
      const stays = hole <= next
        ? hole < home && home <= next
        : hole < home || home <= next;
      if (stays) continue;
      const from = this.#base(next), to = this.#base(hole);
      cells[to] = cells[from];
      cells[to + 1] = cells[from + 1];
      cells[to + 2] = cells[from + 2];
      hole = next;
    }
    const b = this.#base(hole);
    cells[b] = cells[b + 1] = cells[b + 2] = 0;
    Atomics.sub(cells, USED, 1);
  }
}
