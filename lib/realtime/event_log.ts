/**
 * The event log: one row per record change in `mb_events`, written in the
 * change's own transaction (so rolled-back writes leave none), read by every
 * instance in id order, kept for a while so clients can resume.
 *
 * Ids come from the table's sequence. On SQLite one connection writes, so
 * ids are in commit order. On PostgreSQL two transactions may commit out of
 * id order; every writer therefore holds a shared advisory lock from the
 * moment it takes an id until it commits, and a reader that finds a gap can
 * take the lock exclusively (`final`): once it has it, no id below the
 * highest it can see is still in flight, so a gap left then is a rollback
 * (it only ever tries the lock: writers never queue behind a reader).
 *
 * Retention: rows younger than `RETAIN_MS` and the newest `RETAIN_ROWS` are
 * never pruned. The oldest row kept marks what can still be resumed (ids only
 * grow: pruning always keeps the newest row).
 *
 * @module
 */

import type { Queryable, Row, SqlValue, Storage } from "../db/storage.ts";
import type {
  ChangeAction,
  RecordChange,
  SqlStatement,
} from "../records/changes.ts";
import type { RecordData } from "../records/codec.ts";

/** Events younger than this are kept (5 minutes). */
export const RETAIN_MS = 5 * 60_000;
/** The newest this many events are kept whatever their age. */
export const RETAIN_ROWS = 10_000;

/** The advisory lock key event writers share (PostgreSQL). */
const LOCK_KEY = 7_020_617_001;

/** A change as stored, with its id and time. */
export interface StoredEvent {
  readonly id: number;
  readonly entity: string;
  /** The entity's id (a name may since belong to another entity). */
  readonly entityId: string;
  readonly recordId: string;
  readonly action: ChangeAction;
  /** Milliseconds since the epoch (database clock). */
  readonly at: number;
  readonly record: RecordData;
  readonly previous?: RecordData;
}

const INSERT =
  `INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "record", "previous")`;
const VALUES = "?, ?, ?, ?, ?, ?, ?";
const HELD = `(SELECT pg_advisory_xact_lock_shared(${LOCK_KEY})) AS "held"`;

const COLUMNS =
  `"id", "entity", "entity_id", "record_id", "action", "at", "record", "previous"`;

function isId(v: unknown): boolean {
  return v !== null && v !== undefined;
}

function toEvent(row: Row): StoredEvent {
  return {
    id: Number(row.id),
    entity: String(row.entity),
    entityId: String(row.entity_id),
    recordId: String(row.record_id),
    action: String(row.action) as ChangeAction,
    at: Number(row.at),
    record: JSON.parse(String(row.record)),
    ...(row.previous !== null && row.previous !== undefined &&
      { previous: JSON.parse(String(row.previous)) }),
  };
}

/** Reads and writes `mb_events`. */
export class EventLog {
  readonly #store: Storage;
  readonly #now: () => number;
  readonly #pg: boolean;

  /** `now`: the database clock (ms). */
  constructor(store: Storage, now: () => number) {
    this.#store = store;
    this.#now = now;
    this.#pg = store.dialect.name === "postgres";
  }

  /** True when ids may commit out of order (several writers). */
  get concurrent(): boolean {
    return this.#pg;
  }

  /** Appends a change inside the write's transaction; returns its id. */
  async append(tx: Queryable, c: RecordChange): Promise<number> {
    // PostgreSQL: the shared lock comes before the id (see the module doc).
    const rows = await tx.query(
      this.#pg
        ? `${INSERT} SELECT ${VALUES} FROM ${HELD} RETURNING "id"`
        : `${INSERT} VALUES (${VALUES}) RETURNING "id"`,
      this.#values(c),
    );
    return Number(rows[0].id);
  }

  /**
   * PostgreSQL only (`concurrent`): `write` (an INSERT) and the append of
   * its change as one statement (its own transaction), returning the
   * change's `id`; the shared lock is taken before the id, as in `append`.
   * (SQLite's writes share a transaction per turn anyway.)
   */
  together(write: SqlStatement, c: RecordChange): SqlStatement {
    return {
      sql:
        `WITH "mb_write" AS (${write.sql} RETURNING 1) ${INSERT} SELECT ${VALUES} FROM ${HELD}, "mb_write" RETURNING "id"`,
      params: [...write.params, ...this.#values(c)],
    };
  }

  #values(c: RecordChange): SqlValue[] {
    return [
      c.entity,
      c.entityId,
      c.id,
      c.action,
      this.#now(),
      JSON.stringify(c.record),
      c.previous === undefined ? null : JSON.stringify(c.previous),
    ];
  }

  /** Events with `after < id <= upTo`, oldest first, at most `limit`. */
  async read(
    after: number,
    upTo = Number.MAX_SAFE_INTEGER,
    limit = 500,
    entities?: readonly string[],
  ): Promise<StoredEvent[]> {
    const only = entities?.length
      ? ` AND "entity" IN (${entities.map(() => "?").join(", ")})`
      : "";
    const rows = await this.#store.query(
      `SELECT ${COLUMNS} FROM "mb_events" WHERE "id" > ? AND "id" <= ?${only} ORDER BY "id" LIMIT ${
        Math.trunc(limit)
      }`,
      [after, upTo, ...(entities ?? [])],
    );
    return rows.map(toEvent);
  }

  /**
   * Like `read`, but final: on PostgreSQL it takes the advisory lock
   * exclusively (every transaction holding an event id has ended), so no id
   * below those returned can still appear; `max` is the highest id then.
   * It never queues for the lock (queued, it would hold up every new
   * writer behind it): undefined when a writer holds it now, except with
   * `wait`, which waits at most 100 ms.
   */
  async final(
    after: number,
    limit = 500,
    wait = false,
  ): Promise<{ events: StoredEvent[]; max: number } | undefined> {
    if (!this.#pg) {
      const events = await this.read(after, undefined, limit);
      return { events, max: (await this.bounds()).max };
    }
    try {
      return await this.#store.transaction(async (tx) => {
        if (wait) {
          await tx.query(`SET LOCAL lock_timeout = '100ms'`);
          await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY}) AS "held"`);
        } else {
          const got = await tx.query(
            `SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS "held"`,
          );
          if (got[0]?.held !== true) return undefined;
        }
        const rows = await tx.query(
          `SELECT ${COLUMNS} FROM "mb_events" WHERE "id" > ? ORDER BY "id" LIMIT ${
            Math.trunc(limit)
          }`,
          [after],
        );
        const top = await tx.query(
          `SELECT COALESCE(MAX("id"), 0) AS "max" FROM "mb_events"`,
        );
        return { events: rows.map(toEvent), max: Number(top[0].max) };
      });
    } catch (err) {
      // lock_timeout: a writer still holds it.
      const code = (err as { code?: string } | null)?.code;
      if (
        wait &&
        (code === "55P03" || /lock timeout/i.test(String(err)))
      ) {
        return undefined;
      }
      throw err;
    }
  }

  /** The oldest and newest ids kept (0 and 0 when there are none). */
  async bounds(): Promise<{ min: number; max: number }> {
    // One subquery each: SQLite finds MIN or MAX alone by the key, but
    // both in one SELECT scan the whole table.
    const rows = await this.#store.query(
      `SELECT COALESCE((SELECT MIN("id") FROM "mb_events"), 0) AS "min", COALESCE((SELECT MAX("id") FROM "mb_events"), 0) AS "max"`,
    );
    return { min: Number(rows[0].min), max: Number(rows[0].max) };
  }

  /**
   * Drops what retention no longer needs: rows both older than
   * `RETAIN_MS` and outside the newest `RETAIN_ROWS`, except the newest
   * such row (it marks how far back a resume reaches). Returns rows dropped.
   */
  async prune(retainMs = RETAIN_MS, retainRows = RETAIN_ROWS): Promise<number> {
    // By the primary key only (no index on "at": it would cost every write).
    const byCount = await this.#store.query(
      `SELECT "id" FROM "mb_events" ORDER BY "id" DESC LIMIT 1 OFFSET ${
        Math.trunc(retainRows)
      }`,
    );
    if (!isId(byCount[0]?.id)) return 0;
    const old = await this.#store.query(
      `SELECT MAX("id") AS "id" FROM "mb_events" WHERE "id" <= ? AND "at" < ?`,
      [Number(byCount[0].id), this.#now() - retainMs],
    );
    if (!isId(old[0]?.id)) return 0;
    return await this.#store.run(`DELETE FROM "mb_events" WHERE "id" < ?`, [
      Number(old[0].id),
    ]);
  }
}
