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
import type { Topic } from "./topics.ts";

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

/** Decides and frames an event for one subscriber (the hub's `frameFor`). */
export type Framer = (sub: Subscriber, ev: StoredEvent) => Frame | undefined;

/** Live events a resuming subscriber may have waiting. */
const MAX_PENDING = 10_000;

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

  /** Sends a frame, ending a connection that does not keep up. */
  send(f: Frame | undefined): void {
    if (!f || this.closed) return;
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
