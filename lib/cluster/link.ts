/**
 * The link between the isolates (Web Workers) of one `moonbase serve
 * --workers N` process. Each isolate keeps schemas, revocations and the
 * realtime feed's position in memory; a change made through one must reach
 * the others before they answer a request that could see it.
 *
 * Two channels:
 * - counters in a `SharedArrayBuffer` (one per kind of change): the isolate
 *   that made a change bumps its counter after the commit and before it
 *   answers; every isolate compares the counters with the values it has
 *   caught up to before it handles a request (two atomic loads), and reads
 *   the change from the database first when they differ. That is the
 *   guarantee: a request that starts after the change was answered sees it.
 * - a `BroadcastChannel` between the isolates: the same news pushed at once,
 *   so an isolate without requests (realtime streams, caches) catches up too,
 *   and new realtime events are read without waiting for a poll.
 *
 * The polls of `lib/sync.ts` stay as the safety net.
 *
 * @module
 */

import type { ChangeJournal } from "../records/changes.ts";
import type { SharedCount } from "../http/connections.ts";
import { streamTableBytes } from "./stream_table.ts";

/** What one isolate is told of the process it belongs to (structured-cloneable). */
export interface PeerConfig {
  /** This isolate's index: 0 is the main one (start-up work, singletons). */
  index: number;
  /** Isolates serving in all. */
  count: number;
  /** The counters, shared by every isolate of the process. */
  shared: SharedArrayBuffer;
  /** The process's realtime stream counts (stream_table.ts). */
  streams: SharedArrayBuffer;
  /** The name of the process's broadcast channel (unique per process and app). */
  channel: string;
  /** The main isolate's one-time setup token (while no admin exists). */
  setupToken?: string;
}

/** The kinds of change counted. */
export type ChangeKind = "schemas" | "revocations";
const SLOT: Record<ChangeKind, number> = { schemas: 0, revocations: 1 };
const SLOTS = 2;
/** The slot of the process-wide lock (`exclusive`), after the counters. */
const LOCK = SLOTS;
/** The slot of the process's open connections (every isolate's together). */
const CONNECTIONS = SLOTS + 1;

/** A message between isolates. */
type News =
  | { kind: ChangeKind }
  | { kind: "events"; position: number };

/**
 * A new set of counters and a channel name for a process of `count`
 * isolates (its realtime stream counts sized for `maxConnections`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newPeerConfig, PeerLink } from "moonbase/lib/cluster/link.ts";
 * const config = newPeerConfig(2, undefined);
 * const a = new PeerLink(config);
 * const b = new PeerLink({ ...config, index: 1 });
 * assert.equal(b.behind(), false);
 * a.announce("schemas");
 * assert.equal(b.behind(), true);
 * b.caughtUp(b.counters());
 * assert.equal(b.behind(), false);
 * a.close();
 * b.close();
 * ```
 */
export function newPeerConfig(
  count: number,
  setupToken: string | undefined,
  maxConnections = 1024,
): PeerConfig {
  return {
    index: 0,
    count,
    shared: new SharedArrayBuffer((SLOTS + 2) * Int32Array.BYTES_PER_ELEMENT),
    streams: new SharedArrayBuffer(streamTableBytes(maxConnections)),
    channel: `moonbase-peers-${crypto.randomUUID()}`,
    setupToken,
  };
}

/** One isolate's end of the link. */
export class PeerLink {
  readonly index: number;
  readonly count: number;
  readonly #counters: Int32Array;
  readonly #seen: Int32Array;
  readonly #channel: BroadcastChannel;
  readonly #handlers = new Map<string, (news: News) => void>();
  #catching: Promise<void> | undefined;

  /** Joins the process's counters and channel. */
  constructor(config: PeerConfig) {
    this.index = config.index;
    this.count = config.count;
    this.#counters = new Int32Array(config.shared);
    this.#seen = new Int32Array(SLOTS);
    this.#seen.set(this.counters());
    this.#channel = new BroadcastChannel(config.channel);
    this.#channel.onmessage = (e: MessageEvent<News>) =>
      this.#handlers.get(e.data.kind)?.(e.data);
  }

  /** Runs `handler` when another isolate announces a change of `kind`. */
  on(kind: ChangeKind, handler: () => void): void {
    this.#handlers.set(kind, handler);
  }

  /** Runs `handler` with the position another isolate's write committed up to. */
  onEvents(handler: (position: number) => void): void {
    this.#handlers.set(
      "events",
      (news) => "position" in news && handler(news.position),
    );
  }

  /** A change of `kind` was committed here: counts it and tells the others. */
  announce(kind: ChangeKind): void {
    Atomics.add(this.#counters, SLOT[kind], 1);
    this.#channel.postMessage({ kind } satisfies News);
  }

  /** Realtime events up to `position` were committed here. */
  announceEvents(position: number): void {
    this.#channel.postMessage({ kind: "events", position } satisfies News);
  }

  /** The counters now (take them before reading what they count). */
  counters(): Int32Array {
    const now = new Int32Array(SLOTS);
    for (let i = 0; i < SLOTS; i++) now[i] = Atomics.load(this.#counters, i);
    return now;
  }

  /** True when a change was counted that this isolate has not read yet. */
  behind(): boolean {
    return Atomics.load(this.#counters, 0) !== this.#seen[0] ||
      Atomics.load(this.#counters, 1) !== this.#seen[1];
  }

  /** The kinds whose counter moved since this isolate last caught up. */
  changed(now: Int32Array): ChangeKind[] {
    return (Object.keys(SLOT) as ChangeKind[]).filter((k) =>
      now[SLOT[k]] !== this.#seen[SLOT[k]]
    );
  }

  /** Records that everything counted in `now` has been read. */
  caughtUp(now: Int32Array): void {
    this.#seen.set(now);
  }

  /**
   * Reads (with `read`, once per kind that moved) what the other isolates
   * changed, until nothing counted is left unread. Calls made meanwhile
   * share the run in progress, which also reads what is counted while it
   * runs.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { newPeerConfig, PeerLink } from "moonbase/lib/cluster/link.ts";
   * const config = newPeerConfig(2, undefined);
   * const a = new PeerLink(config);
   * const b = new PeerLink({ ...config, index: 1 });
   * const read: string[] = [];
   * const reader = (kind: string) => Promise.resolve(void read.push(kind));
   * await b.catchUp(reader); // nothing counted: nothing read
   * a.announce("revocations");
   * await b.catchUp(reader);
   * assert.deepEqual(read, ["revocations"]);
   * assert.equal(b.behind(), false);
   * a.close();
   * b.close();
   * ```
   */
  catchUp(read: (kind: ChangeKind) => Promise<void>): Promise<void> {
    if (!this.#catching) {
      // Cleared in `finally`, which always runs after this assignment (a
      // run with nothing to read settles without awaiting anything).
      const run: Promise<void> = this.#readAll(read).finally(() => {
        if (this.#catching === run) this.#catching = undefined;
      });
      this.#catching = run;
    }
    return this.#catching;
  }

  async #readAll(read: (kind: ChangeKind) => Promise<void>): Promise<void> {
    while (this.behind()) {
      const now = this.counters();
      await Promise.all(this.changed(now).map(read));
      this.caughtUp(now);
    }
  }

  /**
   * Runs `task` while no other isolate of the process runs one (a lock in
   * the shared buffer; waiting does not block the thread). An isolate that
   * dies holding it ends the process anyway (lib/workers/supervisor.ts).
   */
  async exclusive<T>(task: () => Promise<T>): Promise<T> {
    while (Atomics.compareExchange(this.#counters, LOCK, 0, 1) !== 0) {
      const wait = Atomics.waitAsync(this.#counters, LOCK, 1, 1000);
      if (wait.async) await wait.value;
    }
    try {
      return await task();
    } finally {
      Atomics.store(this.#counters, LOCK, 0);
      Atomics.notify(this.#counters, LOCK);
    }
  }

  /** Leaves the channel. */
  close(): void {
    this.#handlers.clear();
    this.#channel.close();
  }
}

/** `journal`, also telling the other isolates where each commit ends. */
export function announcedJournal(
  journal: ChangeJournal,
  peers: PeerLink,
): ChangeJournal {
  return {
    ...journal, // append, and together where the database has it
    committed(position) {
      journal.committed(position);
      peers.announceEvents(position);
    },
  };
}

/**
 * The process's count of open connections, shared by its isolates (the
 * connection cap applies to all of them together).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { connectionCount, newPeerConfig } from "moonbase/lib/cluster/link.ts";
 * const config = newPeerConfig(2, undefined);
 * const a = connectionCount(config), b = connectionCount({ ...config, index: 1 });
 * a.add(1);
 * assert.equal(b.add(1), 2);
 * assert.equal(a.add(-1), 1);
 * ```
 */
export function connectionCount(config: PeerConfig): SharedCount {
  const cells = new Int32Array(config.shared);
  return { add: (delta) => Atomics.add(cells, CONNECTIONS, delta) + delta };
}
