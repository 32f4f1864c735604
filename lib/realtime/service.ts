/**
 * Realtime for one app: the event log, the feed that reads it in order, the
 * hub that fans out, the watchdog, and the journal records write to. On
 * PostgreSQL a commit is announced to every instance with one coalesced
 * NOTIFY carrying the newest event id (never the record: the feed reads it
 * from the log).
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { pgNotify } from "../db/pg_notify.ts";
import type { TokenClaims } from "../auth/jwt.ts";
import type { ChangeJournal } from "../records/changes.ts";
import type { Registry } from "../records/registry.ts";
import { EventLog } from "./event_log.ts";
import { EventFeed } from "./feed.ts";
import {
  type ExpandEvent,
  Hub,
  type NewSharedReads,
  type RealtimeLimits,
  type Sees,
} from "./hub.ts";
import { Watchdog } from "./watchdog.ts";
import type { Subscriber } from "./subscriber.ts";
import type { Topic } from "./topics.ts";
import type { StreamCounts } from "./stream_counts.ts";

/** The NOTIFY channel of new events. */
export const EVENTS_CHANNEL = "mb_events";

/** What realtime is built from (lib/core.ts wires it). */
export interface RealtimeEnv {
  storage: Storage;
  schemas: Registry;
  /** The database clock (ms). */
  now: () => number;
  sees: Sees;
  /** The reads one event's decisions share (rules reading relations). */
  sharedReads: NewSharedReads;
  /** An event's record with a topic's expansions, for its subscriber. */
  expand?: ExpandEvent;
  isRevoked(claims: TokenClaims): boolean;
  /** True while notifications from other instances arrive. */
  listening(): boolean;
  limits: RealtimeLimits;
  /** Open connections by limit key (shared by a process's workers). */
  counts: StreamCounts;
  /** SSE heartbeat period (ms). */
  heartbeatMs: number;
  /** Bytes an SSE stream may have waiting before it is dropped as too slow. */
  bufferBytes: number;
  /** Bytes of events the log keeps at most (default `RETAIN_BYTES`). */
  retainBytes?: number;
  /** Bytes of events a resume may replay (default `RESUME_BYTES`). */
  resumeBytes?: number;
  onError(err: unknown): void;
}

/** Realtime subscriptions of an app. */
export class Realtime {
  readonly log: EventLog;
  readonly feed: EventFeed;
  readonly hub: Hub;
  readonly journal: ChangeJournal;
  readonly env: RealtimeEnv;
  readonly #watchdog: Watchdog;
  #pruner: ReturnType<typeof setInterval> | undefined;
  #notifying = false;
  #notifyAgain = false;
  #closed = false;

  constructor(env: RealtimeEnv) {
    this.env = env;
    this.log = new EventLog(env.storage, env.now, {
      retainBytes: env.retainBytes,
      resumeBytes: env.resumeBytes,
      // Events are judged by the rules stored when they are read.
      schemas: env.schemas,
      onError: env.onError,
    });
    this.hub = new Hub(
      this.log,
      env.sees,
      env.limits,
      env.counts,
      env.sharedReads,
      env.expand,
    );
    this.feed = new EventFeed(
      this.log,
      (events) => this.hub.dispatch(events),
      env.listening,
      env.onError,
      () => this.hub.lost(),
    );
    this.hub.feed = this.feed;
    this.#watchdog = new Watchdog(this.hub, {
      storage: env.storage,
      schemas: env.schemas,
      now: env.now,
      isRevoked: (c) => env.isRevoked(c),
      heartbeatMs: env.heartbeatMs,
      onError: env.onError,
    });
    const pg = env.storage.dialect.name === "postgres";
    this.journal = {
      append: (tx, change) => this.log.append(tx, change),
      together: pg
        ? (write, change) => this.log.together(write, change)
        : undefined,
      appendAfter: pg ? (change) => this.log.appendAfter(change) : undefined,
      togetherReturning: pg
        ? (write, head, columns) =>
          this.log.togetherReturning(write, head, columns)
        : undefined,
      returned: pg ? (row) => this.log.returned(row) : undefined,
      committed: (position) => {
        this.feed.committed(position);
        this.log.committed();
        if (pg) this.#notify();
      },
    };
  }

  /** Reads where the log stands and starts the timers. */
  async start(): Promise<void> {
    await this.feed.init();
    this.#watchdog.start();
    const prune = () => this.log.prune().catch(this.env.onError);
    prune(); // also measures the log (lib/realtime/event_log.ts `committed`)
    this.#pruner = setInterval(prune, 60_000);
    Deno.unrefTimer(this.#pruner);
  }

  /** A notification from another instance: new events. */
  notified(): void {
    this.feed.poke();
  }

  /**
   * Registers a connection and checks what must hold before its stream
   * starts (limits, a running feed); then `Hub.subscribe` fills it.
   */
  async open(sub: Subscriber, topics: readonly Topic[]): Promise<void> {
    this.hub.join(sub);
    try {
      await this.hub.prepare(sub, topics);
    } catch (err) {
      this.hub.leave(sub);
      throw err;
    }
  }

  /** One NOTIFY at a time; commits meanwhile share the next one. */
  #notify(): void {
    if (this.#closed) return;
    if (this.#notifying) {
      this.#notifyAgain = true;
      return;
    }
    this.#notifying = true;
    pgNotify(this.env.storage, EVENTS_CHANNEL, "")
      .catch(this.env.onError)
      .finally(() => {
        this.#notifying = false;
        if (this.#notifyAgain) {
          this.#notifyAgain = false;
          this.#notify();
        }
      });
  }

  /** Ends every connection and stops. */
  close(): void {
    this.#closed = true;
    this.hub.closeAll();
    this.#watchdog.stop();
    this.feed.stop();
    if (this.#pruner !== undefined) clearInterval(this.#pruner);
  }
}
