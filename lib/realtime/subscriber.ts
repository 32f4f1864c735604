/**
 * One realtime connection (SSE stream or WebSocket): who it is, its topics,
 * and delivery in order. While it resumes (replays missed events from the
 * log) live events wait in a bounded queue; a connection that cannot keep
 * up is closed, never buffered without bound.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { TokenClaims } from "../auth/jwt.ts";
import type { StoredEvent } from "./event_log.ts";
import type { Frame } from "./frames.ts";
import type { Topic, TopicExpand } from "./topics.ts";

/** Where a subscriber's messages go (the SSE stream or the WebSocket). */
export interface Sink {
  /** Sends an event; false when the client does not keep up (then it ends). */
  event(frame: Frame): boolean;
  /** The subscription changed (or began): its topics, and whether it reset. */
  ready(topics: string[], reset: boolean): void;
  /** Keeps the connection alive (SSE comment). */
  heartbeat(): void;
  /** Resolves once what waits to be sent is below the limit (or it ended). */
  drain(): Promise<void>;
  /** Ends the connection, telling why (`status` as an HTTP error would). */
  end(status: number, message: string): void;
}

/**
 * A frame that needs a read first (an event's record with expansions, or a
 * decision under a rule reading through relations): the
 * subscriber calls it when the events before it are sent, so at most one
 * such read per subscriber runs at a time. It rejects when the database
 * does not answer.
 */
export type LaterFrame = () => Promise<Frame | undefined>;

/** Decides and frames an event for one subscriber (the hub's `frameFor`). */
export type Framer = (
  sub: Subscriber,
  ev: StoredEvent,
) => Frame | LaterFrame | undefined;

/** Live events a resuming subscriber may have waiting. */
const MAX_PENDING = 10_000;
/** Events waiting behind a frame being read (expansions), per subscriber. */
const MAX_LATER = 10_000;

/** A connection's subscription state. */
export class Subscriber {
  /** The caller; `user` is refreshed while the connection lives. */
  auth: AuthValue;
  /** The token's claims (none for guests). */
  readonly claims: TokenClaims | undefined;
  /** The client address it counts under (`clientKey` of the address). */
  readonly address: string;
  /** The limit keys it is counted under while it is open (hub.ts). */
  counted: string[] = [];
  readonly sink: Sink;
  /** Topic key → topic. */
  readonly topics: Map<string, Topic> = new Map();
  /** Entities with an entity topic. */
  readonly entities: Set<string> = new Set();
  /** Every id up to here was offered to it. */
  lastId = 0;
  /** Resuming: live events wait here. */
  pending: StoredEvent[] | undefined;
  /** Resuming: some live events were pruned unread; reset at `flush`. */
  resetDue = false;
  closed = false;
  /** Serializes subscription changes (WebSocket messages). */
  chain: Promise<void> = Promise.resolve();
  /** Frames in order behind one being read (`LaterFrame`), and their count. */
  #later: Promise<void> = Promise.resolve();
  #waiting = 0;

  constructor(
    auth: AuthValue,
    claims: TokenClaims | undefined,
    address: string,
    sink: Sink,
  ) {
    this.auth = auth;
    this.claims = claims;
    this.address = address;
    this.sink = sink;
  }

  /** Adds topics (the index is the hub's). */
  add(topics: readonly Topic[]): void {
    for (const t of topics) {
      this.topics.set(t.key, t);
      if (t.id === undefined) this.entities.add(t.entity);
    }
  }

  /** Removes topics; returns the entities it no longer follows at all. */
  remove(keys: readonly string[]): string[] {
    const before = this.followed();
    for (const k of keys) this.topics.delete(k);
    this.entities.clear();
    for (const t of this.topics.values()) {
      if (t.id === undefined) this.entities.add(t.entity);
    }
    const after = this.followed();
    return [...before].filter((e) => !after.has(e));
  }

  /** Entities it has any topic of. */
  followed(): Set<string> {
    return new Set([...this.topics.values()].map((t) => t.entity));
  }

  /** The rule operations under which it follows this event's record. */
  ops(ev: StoredEvent, only?: ReadonlySet<string>): ("list" | "get")[] {
    const out: ("list" | "get")[] = [];
    const entityKey = ev.entity, recordKey = `${ev.entity}/${ev.recordId}`;
    const has = (k: string) => this.topics.has(k) && (!only || only.has(k));
    if (has(entityKey)) out.push("list");
    if (has(recordKey)) out.push("get");
    return out;
  }

  /**
   * The expansions asked for this event's record: those of its record topic
   * when that topic matches and asks some, else those of its entity topic.
   */
  expansion(
    ev: StoredEvent,
    only?: ReadonlySet<string>,
  ): TopicExpand | undefined {
    const keys = [`${ev.entity}/${ev.recordId}`, ev.entity];
    for (const k of keys) {
      const t = this.topics.get(k);
      if (t?.expand && (!only || only.has(k))) return t.expand;
    }
    return undefined;
  }

  /** Resolves once every frame handed to `send` so far went out (or was dropped). */
  sent(): Promise<void> {
    return this.#later;
  }

  /** A live event: sent now, or queued while resuming. */
  offer(ev: StoredEvent, frame: Framer): void {
    if (this.closed || ev.id <= this.lastId) return;
    if (this.pending) {
      if (this.pending.length >= MAX_PENDING) {
        this.sink.end(503, "Cannot keep up: too many events while resuming");
        return;
      }
      this.pending.push(ev);
      return;
    }
    this.lastId = ev.id;
    this.send(frame(this, ev));
  }

  /**
   * Sends a frame, ending a connection that does not keep up. A frame still
   * to be read, and every frame after it, waits its turn: the order holds.
   */
  send(f: Frame | LaterFrame | undefined): void {
    if (!f || this.closed) return;
    if (typeof f !== "function" && this.#waiting === 0) return this.#out(f);
    if (this.#waiting >= MAX_LATER) {
      this.sink.end(503, "Cannot keep up: too many events wait to be expanded");
      return;
    }
    this.#waiting++;
    this.#later = this.#later.then(async () => {
      try {
        if (this.closed) return;
        const frame = typeof f === "function" ? await f() : f;
        if (frame) this.#out(frame);
      } catch {
        // The read failed (the database did not answer): the client resumes
        // from its last event once it reconnects.
        this.sink.end(
          503,
          "Cannot send an event: the database did not answer; reconnect",
        );
      } finally {
        this.#waiting--;
      }
    });
  }

  #out(f: Frame): void {
    if (this.closed) return;
    if (!this.sink.event(f)) {
      this.sink.end(503, "Cannot keep up: the client reads too slowly");
    }
  }

  /** Resuming is over: the queued live events after `upTo` go out. */
  flush(upTo: number, frame: Framer): void {
    const queued = this.pending ?? [];
    this.pending = undefined;
    this.lastId = Math.max(this.lastId, upTo);
    if (this.resetDue) {
      this.resetDue = false;
      this.sink.ready([...this.topics.keys()], true);
    }
    for (const ev of queued) this.offer(ev, frame);
  }
}
