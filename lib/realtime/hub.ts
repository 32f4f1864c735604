/**
 * The realtime hub of one instance: who follows what, and fan-out. Each
 * event from the feed goes to the subscribers of its entity; for each, the
 * entity's current rule decides (per caller, once per event) whether it is
 * sent, and as what: an update that takes a record out of a subscriber's
 * view arrives as a `delete` of the record as it saw it, never the new data.
 *
 * Over 350 lines, one idea: fan-out to this instance's subscribers; kept whole
 * because subscribing, quotas and sending share the hub's maps of callers and
 * topics.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { RecordData } from "../records/codec.ts";
import type { StoredEvent } from "./event_log.ts";
import { type EventLog, RETAIN_ROWS } from "./event_log.ts";
import { Frame } from "./frames.ts";
import type { LaterFrame, Subscriber } from "./subscriber.ts";
import type { Topic, TopicExpand } from "./topics.ts";
import type { ExpandNode } from "../records/expand/plan.ts";
import type { SharedReads } from "../records/rule_types.ts";
import { oneAtATime, type ReadGate } from "../records/rule_shared_reads.ts";
import type { EventFeed } from "./feed.ts";
import type { Quota, StreamCounts } from "./stream_counts.ts";

/** Limits of realtime connections. */
export interface RealtimeLimits {
  /** Topics one connection may follow. */
  maxTopics: number;
  /** Connections per token (guests: per client address). */
  maxPerToken: number;
  /** Connections per user, across all their tokens. */
  maxPerUser: number;
  /** Connections per client address, guests and users together. */
  maxPerAddress: number;
  /** Connections in all (the rest of the connection cap is kept for requests). */
  maxStreams: number;
}

/**
 * Whether a caller sees a record through an operation (RecordService.sees):
 * at once, or once `reads` (the event's, shared by its subscribers) read
 * what the rule reads through relations.
 */
export type Sees = (
  entity: string,
  entityId: string,
  op: "list" | "get",
  auth: AuthValue,
  record: RecordData,
  reads: SharedReads,
) => boolean | Promise<boolean>;

/** The reads one event's decisions share (RecordService.sharedReads). */
export type NewSharedReads = (gate: ReadGate) => SharedReads;

/** What the hub keeps while it decides one event for its subscribers. */
interface EventState {
  readonly id: number;
  /** Decisions by operation, record (`r` new, `p` previous) and caller. */
  readonly seen: Map<string, boolean | Promise<boolean>>;
  /** Frames without expansions, by record. */
  readonly frames: Map<string, Frame>;
  /** Related records the decisions read (made when first needed). */
  reads?: SharedReads;
}

/**
 * An event's record with the expansions `plan` asks, as `auth` may see them
 * now (RecordService.expandEvent).
 */
export type ExpandEvent = (
  entity: string,
  entityId: string,
  record: RecordData,
  plan: readonly ExpandNode[],
  auth: AuthValue,
) => Promise<RecordData>;

/**
 * `p` itself, marked as handled: a decision is awaited when its
 * subscriber's turn comes, maybe after it failed.
 */
function quiet<T>(p: T | Promise<T>): T | Promise<T> {
  if (p instanceof Promise) p.catch(() => {});
  return p;
}

/** A frame, made now or read first. */
async function made(f: Frame | LaterFrame): Promise<Frame | undefined> {
  return typeof f === "function" ? await f() : f;
}

/** Expanded frames kept for other subscribers of the same caller. */
const MAX_EXPANDED_FRAMES = 256;

/** Why a connection over `quota` is refused. */
function refusal(quota: Quota): MoonbaseError {
  const kind = quota.key.slice(0, quota.key.indexOf(":") + 1);
  if (quota.key === "all") {
    return MoonbaseError.withStatus(
      503,
      `Cannot open a realtime connection: the server holds its most (${quota.limit}; the rest of its connections are kept for requests); try again later`,
    );
  }
  const per = kind === "token:"
    ? "token"
    : kind === "user:"
    ? "user (across all their tokens)"
    : kind === "guest:"
    ? "client address for guests"
    : "client address";
  return new MoonbaseError(
    "rate_limited",
    `Cannot open a realtime connection: at most ${quota.limit} per ${per}; close one first`,
  );
}

function callerKey(auth: AuthValue): string {
  return auth.type === "guest" ? "" : `${auth.entity}\0${auth.id}`;
}

/** Who a caller is for expansions (its kind too: what it may read differs). */
function expandKey(auth: AuthValue): string {
  return `${auth.type}\0${callerKey(auth)}`;
}

/** Fan-out of events to this instance's subscribers. */
export class Hub {
  readonly #log: EventLog;
  readonly #sees: Sees;
  readonly #newReads: NewSharedReads;
  readonly #expand: ExpandEvent | undefined;
  /** Expanded frames by event, record, caller and paths (bounded). */
  readonly #expanded = new Map<string, Promise<Frame>>();
  readonly limits: RealtimeLimits;
  #feed: EventFeed | undefined;
  /** Entity → subscribers with any topic of it. */
  readonly #byEntity = new Map<string, Set<Subscriber>>();
  readonly subscribers: Set<Subscriber> = new Set();
  /** Open connections by limit key (the process's, with several workers). */
  readonly #counts: StreamCounts;
  /** The event being fanned out (undefined: decide anew). */
  #state: EventState | undefined;
  /** Runs decisions' reads one at a time (bounded database work per instance). */
  readonly #gate: ReadGate = oneAtATime();

  constructor(
    log: EventLog,
    sees: Sees,
    limits: RealtimeLimits,
    counts: StreamCounts,
    newReads: NewSharedReads,
    expand?: ExpandEvent,
  ) {
    this.#log = log;
    this.#sees = sees;
    this.#newReads = newReads;
    this.#expand = expand;
    this.limits = limits;
    this.#counts = counts;
  }

  /** Attaches the feed (it calls `dispatch`). */
  set feed(feed: EventFeed) {
    this.#feed = feed;
  }

  /**
   * Registers a connection: 429 past a limit per token (guests: per
   * address), per user or per client address; 503 when streams hold
   * their share of the connection cap. `admitted`: the keys `admit`
   * counted it under already (they are not counted again).
   */
  join(sub: Subscriber, admitted: readonly string[] = []): void {
    const l = this.limits;
    const quotas: Quota[] = [
      ...this.#connectionQuotas(sub.address),
      sub.claims
        ? { key: `token:${sub.claims.jti}`, limit: l.maxPerToken }
        : { key: `guest:${sub.address}`, limit: l.maxPerToken },
    ];
    if (sub.claims) {
      const { entity, id } = sub.auth;
      quotas.push({ key: `user:${entity}\0${id}`, limit: l.maxPerUser });
    }
    const fresh = quotas.filter((q) => !admitted.includes(q.key));
    const full = this.#counts.take(fresh);
    if (full) throw refusal(full);
    sub.counted = [...admitted, ...fresh.map((q) => q.key)];
    this.subscribers.add(sub);
  }

  /**
   * Counts a connection whose caller is not known yet (a WebSocket before
   * its first message) under its client address and the streams in all,
   * so unidentified connections cannot take the slots kept for requests:
   * 429 or 503 as `join`. Returns the keys, for `join` (or `release`).
   */
  admit(address: string): string[] {
    const quotas = this.#connectionQuotas(address);
    const full = this.#counts.take(quotas);
    if (full) throw refusal(full);
    return quotas.map((q) => q.key);
  }

  /** Uncounts what `admit` counted (the connection never joined). */
  release(keys: readonly string[]): void {
    this.#counts.give(keys);
  }

  #connectionQuotas(address: string): Quota[] {
    return [
      { key: "all", limit: this.limits.maxStreams },
      { key: `address:${address}`, limit: this.limits.maxPerAddress },
    ];
  }

  /** Forgets a connection. */
  leave(sub: Subscriber): void {
    if (!this.subscribers.delete(sub)) return;
    sub.closed = true;
    this.#counts.give(sub.counted);
    sub.counted = [];
    for (const e of sub.followed()) this.#byEntity.get(e)?.delete(sub);
    if (this.subscribers.size === 0) this.#feed?.stop();
  }

  /**
   * What must hold before a stream starts: the topic limit and a running
   * feed (a busy or unreachable database is an error answer, not a stream).
   */
  async prepare(sub: Subscriber, topics: readonly Topic[]): Promise<void> {
    this.#checkLimit(sub, topics);
    await this.#feed?.start();
  }

  #checkLimit(sub: Subscriber, topics: readonly Topic[]): void {
    const added = topics.filter((t) => !sub.topics.has(t.key)).length;
    if (sub.topics.size + added > this.limits.maxTopics) {
      throw new MoonbaseError(
        "invalid",
        `Cannot subscribe: too many topics (at most ${this.limits.maxTopics})`,
      );
    }
  }

  /**
   * Adds checked topics to a subscriber. With `lastEventId` it first gets
   * the events of those topics it missed (or a reset when they are gone);
   * returns whether it was reset.
   */
  async subscribe(
    sub: Subscriber,
    topics: readonly Topic[],
    lastEventId?: string,
  ): Promise<boolean> {
    this.#checkLimit(sub, topics);
    await this.#feed?.start();
    if (sub.closed) return false;
    // No await from here to the index: events after `position` reach it live.
    const position = this.#feed?.position ?? 0;
    const fresh = topics.filter((t) => !sub.topics.has(t.key));
    sub.add(topics);
    for (const t of topics) {
      let set = this.#byEntity.get(t.entity);
      if (!set) this.#byEntity.set(t.entity, set = new Set());
      set.add(sub);
    }
    if (sub.lastId === 0) sub.lastId = position;
    const keys = [...sub.topics.keys()];
    if (lastEventId === undefined || fresh.length === 0) {
      sub.sink.ready(keys, false);
      return false;
    }
    sub.pending ??= [];
    try {
      const from = await this.#resumable(lastEventId, position, fresh);
      sub.sink.ready(keys, from < 0);
      if (from >= 0) await this.#replay(sub, fresh, from, position);
      return from < 0;
    } finally {
      if (!sub.closed) sub.flush(position, this.#frame);
    }
  }

  /**
   * The id to resume after, or -1 when the events after it are gone or
   * too many bytes to replay (`EventLog.resumable`).
   */
  async #resumable(
    lastEventId: string,
    position: number,
    topics: readonly Topic[],
  ): Promise<number> {
    const from = /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : -1;
    // At most RETAIN_ROWS events back: a resume never scans more.
    if (from < 0 || from > position || position - from > RETAIN_ROWS) {
      return -1;
    }
    const entities = [...new Set(topics.map((t) => t.entity))];
    return await this.#log.resumable(from, position, entities) ? from : -1;
  }

  /** Sends the retained events after `lastEventId` up to `position`. */
  async #replay(
    sub: Subscriber,
    topics: readonly Topic[],
    from: number,
    position: number,
  ): Promise<void> {
    const only = new Set(topics.map((t) => t.key));
    const entities = [...new Set(topics.map((t) => t.entity))];
    let after = from;
    let reset = false;
    while (!sub.closed && after < position) {
      const { events, pruned } = await this.#log.read(
        after,
        position,
        100,
        entities,
      );
      // Pruned while it resumed: what is left is sent after a reset.
      if (pruned && !reset && !sub.closed) {
        reset = true;
        sub.sink.ready([...sub.topics.keys()], true);
      }
      if (events.length === 0) break;
      for (const ev of events) {
        // Paced by the client: nothing more while its queue is full.
        await sub.sink.drain();
        await sub.sent(); // expansions read one at a time, paced too
        if (sub.closed) return;
        this.#state = undefined; // decided now, under the rules of now
        sub.send(this.frameFor(sub, ev, only));
      }
      after = events[events.length - 1].id;
    }
  }

  /**
   * Events after the feed's position were pruned before it read them:
   * every subscriber is reset now, one resuming once its replay is over
   * (before the live events it holds).
   */
  lost(): void {
    for (const sub of this.subscribers) {
      if (sub.closed || sub.topics.size === 0) continue;
      if (sub.pending) sub.resetDue = true;
      else sub.sink.ready([...sub.topics.keys()], true);
    }
  }

  /** Removes topics from a subscriber. */
  unsubscribe(sub: Subscriber, keys: readonly string[]): void {
    for (const e of sub.remove(keys)) this.#byEntity.get(e)?.delete(sub);
  }

  /** Fans events out (the feed calls it, in id order). */
  dispatch(events: readonly StoredEvent[]): void {
    for (const ev of events) {
      const subs = this.#byEntity.get(ev.entity);
      if (!subs || subs.size === 0) continue;
      for (const sub of subs) sub.offer(ev, this.#frame);
      // Decisions hold for one fan-out only: rules may change before the next.
      this.#state = undefined;
    }
  }

  #frame = (
    sub: Subscriber,
    ev: StoredEvent,
  ): Frame | LaterFrame | undefined => this.frameFor(sub, ev);

  /**
   * What `sub` gets of `ev` (nothing, or a frame), by the rules now; with
   * expansions, or under a rule reading through relations (decided once
   * the related records are read, with the event's other subscribers), a
   * frame made when its turn comes.
   */
  frameFor(
    sub: Subscriber,
    ev: StoredEvent,
    only?: ReadonlySet<string>,
  ): Frame | LaterFrame | undefined {
    const ops = sub.ops(ev, only);
    if (ops.length === 0) return undefined;
    let state = this.#state;
    if (state?.id !== ev.id) {
      this.#state = state = { id: ev.id, seen: new Map(), frames: new Map() };
    }
    const st = state;
    const auth = sub.auth;
    const sees = (
      record: RecordData,
      which: string,
    ): boolean | Promise<boolean> => {
      const later: Promise<boolean>[] = [];
      for (const op of ops) {
        const key = `${op}\0${which}\0${callerKey(auth)}`;
        let ok = st.seen.get(key);
        if (ok === undefined) {
          st.reads ??= this.#newReads(this.#gate);
          ok = quiet(
            this.#sees(ev.entity, ev.entityId, op, auth, record, st.reads),
          );
          st.seen.set(key, ok);
        }
        if (ok === true) return true;
        if (ok !== false) later.push(ok);
      }
      return later.length === 0
        ? false
        : quiet(Promise.all(later).then((all) => all.includes(true)));
    };
    const expand = this.#expand && sub.expansion(ev, only);
    const frame = (
      action: StoredEvent["action"],
      record: RecordData,
      which: string,
    ): Frame | LaterFrame =>
      expand
        ? this.#later(auth, ev, action, record, which, expand)
        : this.#build(st, ev, action, record, which);
    const previous = ev.action === "update" ? ev.previous : undefined;
    const seen = sees(ev.record, "r");
    if (seen === true) return frame(ev.action, ev.record, "r");
    if (seen === false) {
      if (!previous) return undefined;
      const was = sees(previous, "p");
      if (was === true) return frame("delete", previous, "p");
      if (was === false) return undefined;
      return async () =>
        await was ? await made(frame("delete", previous, "p")) : undefined;
    }
    return async () => {
      if (await seen) return await made(frame(ev.action, ev.record, "r"));
      if (!previous) return undefined;
      // The previous record's decision, asked only when the new one is refused.
      return await sees(previous, "p")
        ? await made(frame("delete", previous, "p"))
        : undefined;
    };
  }

  /**
   * The frame of `record` with the expansions `expand` asks, read for the
   * subscriber's caller when its turn comes (once per event, record, caller
   * and paths while it is kept). An expansion refused as too large is sent
   * without its expansions and says why (`expand_error`); a database that
   * does not answer rejects (the subscriber's stream ends, to resume).
   */
  #later(
    auth: AuthValue,
    ev: StoredEvent,
    action: StoredEvent["action"],
    record: RecordData,
    which: string,
    expand: TopicExpand,
  ): LaterFrame {
    const plan = expand.plan;
    const key = `${ev.id}\0${which}\0${expandKey(auth)}\0${expand.text}`;
    return () => {
      let f = this.#expanded.get(key);
      if (!f) {
        f = this.#expand!(ev.entity, ev.entityId, record, plan, auth).then(
          (rec) => new Frame(ev.id, action, ev.entity, ev.recordId, rec, ev.at),
          (err: unknown) => {
            if (!(err instanceof MoonbaseError)) throw err;
            return new Frame(
              ev.id,
              action,
              ev.entity,
              ev.recordId,
              record,
              ev.at,
              err.message,
            );
          },
        );
        if (this.#expanded.size >= MAX_EXPANDED_FRAMES) this.#expanded.clear();
        this.#expanded.set(key, f);
        // A failed read is not kept: the next subscriber reads again.
        f.catch(() => this.#expanded.delete(key));
      }
      return f;
    };
  }

  #build(
    st: EventState,
    ev: StoredEvent,
    action: StoredEvent["action"],
    record: RecordData,
    which: string,
  ): Frame {
    let f = st.frames.get(which);
    if (!f) {
      f = new Frame(ev.id, action, ev.entity, ev.recordId, record, ev.at);
      st.frames.set(which, f);
    }
    return f;
  }

  /** Ends every connection (the app stops). */
  closeAll(): void {
    for (const sub of [...this.subscribers]) {
      sub.sink.end(503, "Cannot stay connected: the server is stopping");
    }
  }
}
