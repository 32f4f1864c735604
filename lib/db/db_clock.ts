/**
 * One time base for every instance on a database: the database's clock.
 * On PostgreSQL each instance measures its offset to the server's clock
 * (the midpoint of a timed round trip, best of a few) at start and every
 * minute, and reads time as its own clock plus that offset: no query per
 * request. Token `iat`/`exp` and the expiry checks use it, so an instance
 * whose clock runs fast or slow neither stretches nor cuts token lifetimes.
 * SQLite is one process on one machine: offset 0.
 *
 * @module
 */

import type { Storage } from "./storage.ts";

/** A clock: milliseconds since the epoch. */
export type Clock = () => number;

/** Round trips per measurement (the shortest one is kept). */
const SAMPLES = 3;
/** Re-measured this often (ms). */
const EVERY = 60_000;

/**
 * This machine's clock corrected to the database's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DbClock } from "moonbase/lib/db/db_clock.ts";
 * import type { Storage } from "moonbase/lib/db/storage.ts";
 * // A database whose clock is 5 s ahead of this (frozen) machine's.
 * const db = {
 *   dialect: { name: "postgres" },
 *   query: () => Promise.resolve([{ ms: 1_005_000 }]),
 * } as unknown as Storage;
 * const clock = new DbClock(db, () => 1_000_000);
 * await clock.measure();
 * assert.equal(clock.offset, 5000);
 * assert.equal(clock.now(), 1_005_000);
 * ```
 */
export class DbClock {
  #store: Storage;
  #local: Clock;
  #offset = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** `local` is this machine's clock (default `Date.now`). */
  constructor(store: Storage, local: Clock = () => Date.now()) {
    this.#store = store;
    this.#local = local;
  }

  /** The database's time now, in ms (this machine's clock plus the offset). */
  readonly now: Clock = () => this.#local() + this.#offset;

  /** Milliseconds the database's clock is ahead of this machine's. */
  get offset(): number {
    return this.#offset;
  }

  /** Measures the offset now and then every minute (PostgreSQL only). */
  async start(): Promise<void> {
    if (this.#store.dialect.name !== "postgres") return;
    await this.measure();
    const timer = setInterval(() => {
      // Ignored: a failed measurement keeps the last offset, and a database
      // that does not answer is reported by health and by every request.
      this.measure().catch(() => {});
    }, EVERY);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  /**
   * One measurement: the database's time at the midpoint of the shortest of
   * a few round trips. A failed measurement keeps the last offset.
   */
  async measure(): Promise<void> {
    let best = Infinity;
    let offset = this.#offset;
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = this.#local();
      const rows = await this.#store.query(
        `SELECT extract(epoch from clock_timestamp()) * 1000 AS "ms"`,
      );
      const t1 = this.#local();
      const db = Number(rows[0]?.ms);
      if (!Number.isFinite(db) || t1 - t0 >= best) continue;
      best = t1 - t0;
      offset = Math.round(db - (t0 + t1) / 2);
    }
    this.#offset = offset;
  }

  /** Stops re-measuring. */
  close(): void {
    clearInterval(this.#timer);
  }
}
