/**
 * Keeps an instance in step with the others on the same database:
 * revocations and schema changes. On PostgreSQL they arrive by
 * LISTEN/NOTIFY (on a connection of their own) and apply at once; a slower
 * poll stays as the safety net for a notification missed while the
 * listening connection was down (it also polls right after reconnecting).
 * Without a listener (SQLite, or PostgreSQL before the listener is up) the
 * polls run at their fast pace.
 *
 * @module
 */

import type { Storage } from "./db/storage.ts";
import { PgListener, pgNotify } from "./db/pg_notify.ts";
import { REVOCATION_CHANNEL, type Revocations } from "./auth/revocation.ts";
import type { Registry } from "./records/registry.ts";

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

  /** Wires the services; nothing runs before `start`. */
  constructor(storage: Storage, schemas: Registry, revocations: Revocations) {
    this.#storage = storage;
    this.#schemas = schemas;
    this.#revocations = revocations;
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
    if (pg && connection) {
      const listener = new PgListener(connection, () => this.#caughtUp());
      listener.on(REVOCATION_CHANNEL, (p) => this.#revocations.apply(p));
      listener.on(SCHEMA_CHANNEL, () => this.#refreshSchemas());
      for (const [channel, handler] of this.#channels) {
        listener.on(channel, handler);
      }
      this.#listener = listener;
      this.#schemas.onChange = () =>
        pgNotify(this.#storage, SCHEMA_CHANNEL, "").catch(() => {});
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
    this.#revocations.poll().catch(() => {});
    this.#refreshSchemas();
    for (const handler of this.#channels.values()) handler("");
    this.#setPace();
  }

  #refreshSchemas(): void {
    if (this.#storage.dialect.name !== "postgres") return;
    this.#schemas.refreshIfChanged().catch(() => {});
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
        this.#revocations.poll().catch(() => {});
        // A listener that dropped: poll fast until it is back.
        if (!this.#fixed && !this.listening && this.#pace === SLOW) {
          this.#setPace();
        }
      }, pace.revocations));
    }
    // Only PostgreSQL is shared by several instances.
    if (pace.schemas > 0 && this.#storage.dialect.name === "postgres") {
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
