/**
 * Keeps an instance in step with the others on the same database:
 * revocations and schema changes. On PostgreSQL they arrive by
 * LISTEN/NOTIFY (on a connection of their own) and apply at once; a slower
 * poll stays as the safety net for a notification missed while the
 * listening connection was down (it also polls right after reconnecting).
 * Without a listener (SQLite, or PostgreSQL before the listener is up) the
 * polls run at their fast pace.
 *
 * The isolates of one process (`serve --workers N`) are told at once
 * through a `PeerLink` (lib/cluster/link.ts), on either database: `fresh()`
 * reads what another isolate changed before a request is handled.
 *
 * A poll or catch-up that fails is tried again at the next one; its failure
 * is written to the log, one line per kind a while (lib/logs/failure.ts).
 *
 * @module
 */

import type { Storage } from "./db/storage.ts";
import { PgListener, pgNotify } from "./db/pg_notify.ts";
import { REVOCATION_CHANNEL, type Revocations } from "./auth/revocation.ts";
import type { Registry } from "./records/registry.ts";
import type { PeerLink } from "./cluster/link.ts";
import { type FailureLog, RepeatedFailure } from "./logs/failure.ts";

/** The NOTIFY channel of schema changes. */
export const SCHEMA_CHANNEL = "mb_schema";

/** Poll intervals in ms (0: no poll). */
export interface PollPace {
  revocations: number;
  schemas: number;
}

/** While notifications flow: the safety net. */
const SLOW: PollPace = { revocations: 2000, schemas: 5000 };
/** Without a listener. */
const FAST: PollPace = { revocations: 400, schemas: 1000 };

/** Notifications plus polls for one instance. */
export class InstanceSync {
  #storage: Storage;
  #schemas: Registry;
  #revocations: Revocations;
  #listener: PgListener | undefined;
  #timers: ReturnType<typeof setInterval>[] = [];
  #fixed: PollPace | undefined;
  #pace: PollPace | undefined;
  #channels = new Map<string, (payload: string) => void>();
  #peers: PeerLink | undefined;
  #failed: Record<
    "peers" | "notify" | "revocations" | "schemas",
    RepeatedFailure
  >;

  /**
   * Wires the services (`peers`: the other isolates of this process; `log`:
   * where failed polls are written, none without it); nothing runs before
   * `start`.
   */
  constructor(
    storage: Storage,
    schemas: Registry,
    revocations: Revocations,
    peers?: PeerLink,
    log: FailureLog = { warn: () => {} },
  ) {
    this.#storage = storage;
    this.#schemas = schemas;
    this.#revocations = revocations;
    this.#peers = peers;
    const failure = (message: string) => new RepeatedFailure(log, message);
    this.#failed = {
      peers: failure("Cannot read the changes of the other isolates"),
      notify: failure("Cannot announce a schema change to other instances"),
      revocations: failure("Cannot poll revocations"),
      schemas: failure("Cannot refresh schemas"),
    };
  }

  /**
   * Resolves once this isolate has read every schema change and revocation
   * another isolate of the process announced (at once when there is none:
   * the usual case costs two atomic loads).
   */
  fresh(): Promise<void> | undefined {
    if (!this.#peers?.behind()) return undefined;
    return this.#catchUpPeers();
  }

  #catchUpPeers(): Promise<void> {
    return this.#peers!.catchUp((kind) => {
      // Read what the other isolate committed, not this turn's snapshot of
      // the database (older, on SQLite), or this isolate would count itself
      // caught up while it is not.
      this.#storage.fresh?.();
      return kind === "schemas"
        ? this.#schemas.refreshIfChanged()
        : this.#revocations.poll();
    });
  }

  /**
   * Listens on one more channel (call before `start`); the handler also
   * runs with "" after the listener reconnects (news may have been missed).
   */
  on(channel: string, handler: (payload: string) => void): void {
    this.#channels.set(channel, handler);
  }

  /** True while notifications from other instances arrive. */
  get listening(): boolean {
    return this.#listener?.live ?? false;
  }

  /**
   * Starts listening (PostgreSQL, with `connection`) and polling. Schema
   * changes made here are announced to the others.
   */
  async start(connection?: string): Promise<void> {
    const pg = this.#storage.dialect.name === "postgres";
    const peers = this.#peers;
    if (peers) {
      // A catch-up that fails is tried again before the next request (fresh).
      const catchUp = () =>
        this.#catchUpPeers().catch((err) => this.#failed.peers.report(err));
      peers.on("schemas", catchUp);
      peers.on("revocations", catchUp);
      this.#schemas.onChange = () => peers.announce("schemas");
    }
    if (pg && connection) {
      const listener = new PgListener(connection, () => this.#caughtUp());
      listener.on(REVOCATION_CHANNEL, (p) => this.#revocations.apply(p));
      listener.on(SCHEMA_CHANNEL, () => this.#refreshSchemas());
      for (const [channel, handler] of this.#channels) {
        listener.on(channel, handler);
      }
      this.#listener = listener;
      this.#schemas.onChange = () => {
        peers?.announce("schemas");
        // Missed, the others read the change at their next schema poll.
        pgNotify(this.#storage, SCHEMA_CHANNEL, "").catch((err) =>
          this.#failed.notify.report(err)
        );
      };
      await listener.start();
    }
    this.#setPace();
  }

  /**
   * Fixes the poll intervals (tests use `{revocations: 0, schemas: 0}` to
   * show notifications alone suffice); `undefined` returns to the default.
   */
  setPolling(pace: PollPace | undefined): void {
    this.#fixed = pace;
    this.#setPace();
  }

  /** After (re)connecting: read what may have been missed, then poll slowly. */
  #caughtUp(): void {
    this.#pollRevocations();
    this.#refreshSchemas();
    for (const handler of this.#channels.values()) handler("");
    this.#setPace();
  }

  /** Schemas are shared on PostgreSQL, and between the isolates of a process. */
  get #sharedSchemas(): boolean {
    return this.#storage.dialect.name === "postgres" ||
      (this.#peers?.count ?? 1) > 1;
  }

  #refreshSchemas(): void {
    if (!this.#sharedSchemas) return;
    this.#schemas.refreshIfChanged().catch((err) =>
      this.#failed.schemas.report(err)
    );
  }

  #pollRevocations(): void {
    this.#revocations.poll().catch((err) =>
      this.#failed.revocations.report(err)
    );
  }

  #setPace(): void {
    const pace = this.#fixed ?? (this.listening ? SLOW : FAST);
    if (
      this.#pace && pace.revocations === this.#pace.revocations &&
      pace.schemas === this.#pace.schemas
    ) return;
    this.#stopTimers();
    this.#pace = pace;
    if (pace.revocations > 0) {
      this.#timers.push(setInterval(() => {
        this.#pollRevocations();
        // A listener that dropped: poll fast until it is back.
        if (!this.#fixed && !this.listening && this.#pace === SLOW) {
          this.#setPace();
        }
      }, pace.revocations));
    }
    if (pace.schemas > 0 && this.#sharedSchemas) {
      this.#timers.push(
        setInterval(() => this.#refreshSchemas(), pace.schemas),
      );
    }
  }

  #stopTimers(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  /** Stops polling and listening. */
  async close(): Promise<void> {
    this.#fixed = { revocations: 0, schemas: 0 };
    this.#stopTimers();
    this.#schemas.onChange = undefined;
    await this.#listener?.close();
  }
}
