/**
 * The feed: reads `mb_events` in id order and hands each event to the hub,
 * exactly once and never out of order, whichever instance wrote it. It runs
 * only while this instance has subscribers.
 *
 * - SQLite (one writer at a time, this process): it reads up to the highest
 *   id whose write is known committed (`committed`), so a write group that
 *   fails never shows. The commits of the other isolates of `serve
 *   --workers N` are told to it too (lib/cluster/link.ts): ids are taken
 *   under the write lock, so once id X is committed every id below X is
 *   committed or gone.
 * - PostgreSQL (many writers): it is woken by NOTIFY (and a slow poll); a
 *   gap in the ids may be a transaction still committing, so events after a
 *   gap wait; a gap that stays is settled by `EventLog.final`.
 *
 * Events pruned before the feed read them (it lagged behind a prune by
 * bytes, or another instance's) are never skipped silently: `lost` runs
 * before the events after them are delivered (the hub resets its
 * subscribers).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { EventLog, LogRead, StoredEvent } from "./event_log.ts";

/** How long a gap may stay before the feed settles it (ms). */
const GAP_WAIT_MS = 40;
/** After this long, settling may wait for the lock (100 ms at most, ms). */
const GAP_PATIENCE_MS = 2000;
/** How long a first subscriber may wait for a settled start (ms). */
const START_WAIT_MS = 3000;
/** Poll period while notifications flow / while they do not (ms). */
const POLL_SLOW_MS = 5000;
const POLL_FAST_MS = 1000;
const BATCH = 500;

/** Reads the event log in order for the hub. */
export class EventFeed {
  readonly #log: EventLog;
  readonly #deliver: (events: StoredEvent[]) => void;
  readonly #listening: () => boolean;
  /** Every id up to here was delivered (or was never committed). */
  #cursor = 0;
  /** SQLite: the highest id known committed. */
  #committed = 0;
  #running = false;
  #starting: Promise<void> | undefined;
  #reading = false;
  #again = false;
  #gapSince = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #poll: ReturnType<typeof setInterval> | undefined;
  #onError: (err: unknown) => void;
  readonly #lost: () => void;

  /**
   * `deliver` gets events in id order; `listening` tells whether
   * notifications from other instances arrive (PostgreSQL); `lost` runs
   * when events after the position were pruned before they were read.
   */
  constructor(
    log: EventLog,
    deliver: (events: StoredEvent[]) => void,
    listening: () => boolean = () => false,
    onError: (err: unknown) => void = () => {},
    lost: () => void = () => {},
  ) {
    this.#log = log;
    this.#deliver = deliver;
    this.#listening = listening;
    this.#onError = onError;
    this.#lost = lost;
  }

  /**
   * Reads where the log stands before any write of this process (SQLite:
   * every row there is committed).
   */
  async init(): Promise<void> {
    if (!this.#log.concurrent) {
      this.#committed = Math.max(
        this.#committed,
        (await this.#log.bounds()).max,
      );
    }
  }

  /** The last id delivered: events up to it are final. */
  get position(): number {
    return this.#cursor;
  }

  /** True while running. */
  get running(): boolean {
    return this.#running;
  }

  /** Starts reading from the newest event; resolves once the position is final. */
  start(): Promise<void> {
    if (this.#running) return Promise.resolve();
    if (!this.#starting) {
      // Cleared once settled (`finally` runs later: `#begin` may not await).
      const p: Promise<void> = this.#begin().finally(() => {
        if (this.#starting === p) this.#starting = undefined;
      });
      this.#starting = p;
    }
    return this.#starting;
  }

  async #begin(): Promise<void> {
    if (this.#log.concurrent) {
      this.#cursor = (await this.#settle(0, 0, START_WAIT_MS)).max;
    } else {
      // Only ids known committed: a write group still open may fail.
      this.#cursor = this.#committed;
    }
    this.#running = true;
    this.#gapSince = 0;
    if (this.#log.concurrent) {
      this.#poll = setInterval(
        () => this.poke(),
        this.#listening() ? POLL_SLOW_MS : POLL_FAST_MS,
      );
    }
    this.poke();
  }

  /** Stops reading (no subscriber is left). */
  stop(): void {
    this.#running = false;
    if (this.#poll !== undefined) clearInterval(this.#poll);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#poll = this.#timer = undefined;
  }

  /** A write of this instance committed up to event `id`. */
  committed(id: number): void {
    if (id > this.#committed) this.#committed = id;
    this.poke();
  }

  /** New events may be there: read them (coalesced). */
  poke(): void {
    if (!this.#running) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    queueMicrotask(() => this.#drain());
  }

  async #drain(): Promise<void> {
    try {
      do {
        this.#again = false;
        while (this.#running && await this.#step());
      } while (this.#again && this.#running);
    } catch (err) {
      this.#onError(err);
      this.#retry(250);
    } finally {
      this.#reading = false;
    }
  }

  /** Reads one batch; true when there may be more right away. */
  async #step(): Promise<boolean> {
    if (!this.#log.concurrent) {
      if (this.#committed <= this.#cursor) return false;
      const { events, pruned } = await this.#log.read(
        this.#cursor,
        this.#committed,
        BATCH,
      );
      if (pruned) this.#lost();
      if (events.length === 0) {
        this.#cursor = this.#committed;
        return false;
      }
      const last = events[events.length - 1].id;
      this.#emit(events, last);
      // A read stops at BATCH rows or at its byte bound: read on.
      return last < this.#committed;
    }
    // Only its run of ids right after the cursor is used: a gap waits.
    const { events } = await this.#log.read(this.#cursor, undefined, BATCH);
    if (events.length === 0) return false;
    let n = 0;
    while (n < events.length && events[n].id === this.#cursor + n + 1) n++;
    if (n > 0) {
      this.#gapSince = 0;
      this.#emit(events.slice(0, n), events[n - 1].id);
      return true;
    }
    // A gap right after the cursor: a write still committing, or a rollback.
    const now = performance.now();
    if (this.#gapSince === 0) this.#gapSince = now;
    if (now - this.#gapSince < GAP_WAIT_MS) {
      this.#retry(10);
      return false;
    }
    const settled = await this.#log.final(
      this.#cursor,
      BATCH,
      now - this.#gapSince > GAP_PATIENCE_MS,
    );
    if (!settled) {
      // A writer is still committing: it fills the gap or rolls back.
      this.#retry(25);
      return false;
    }
    this.#gapSince = 0;
    if (!this.#running) return false;
    if (settled.pruned) this.#lost();
    if (settled.events.length === 0) {
      this.#cursor = Math.max(this.#cursor, settled.max);
      return false;
    }
    const last = settled.events[settled.events.length - 1].id;
    this.#emit(
      settled.events,
      settled.events.length < BATCH ? Math.max(last, settled.max) : last,
    );
    return true;
  }

  /** `final`, tried until it gets the lock (at most `ms`, then 503). */
  async #settle(
    after: number,
    limit: number,
    ms: number,
  ): Promise<LogRead & { max: number }> {
    const started = performance.now();
    for (let pause = 5;; pause = Math.min(pause * 2, 100)) {
      const spent = performance.now() - started;
      const got = await this.#log.final(after, limit, spent > ms / 2);
      if (got) return got;
      if (spent > ms) {
        throw new MoonbaseError(
          "unavailable",
          "Cannot subscribe now: a long write holds the event log; try again",
        );
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  #emit(events: StoredEvent[], upTo: number): void {
    this.#cursor = upTo;
    this.#deliver(events);
  }

  #retry(ms: number): void {
    if (!this.#running || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.poke();
    }, ms);
  }
}
