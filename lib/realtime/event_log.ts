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
 * kept, as long as they fit in `retainBytes` (each row stores its size: the
 * bytes of its bodies); a write that takes the log past that bound prunes at
 * once, down to the newest events that fit in seven eighths of it
 * (`LOW_WATER`), so a full log is pruned once per eighth written. The oldest row kept marks what can
 * still be resumed (ids only grow: pruning always keeps the newest row), and
 * so does the prune mark: each prune stores, in its own transaction, the id
 * it deleted below (`mb_meta` key `events_pruned_below`; on PostgreSQL a
 * write committing late may leave an older row behind a prune). Every read
 * returns the mark too, in the same statement: a read that finds ids
 * missing below it says events were pruned before they were read
 * (`LogRead.pruned`), so a reader behind a prune resets its clients instead
 * of skipping those events silently.
 *
 * Reads are bounded by bytes as well as rows (`READ_BYTES`, at least one
 * event), and an event's bodies are parsed only when first used (an event
 * nobody follows is never parsed). Every read also returns the stored schema
 * version, in the same statement: when another instance changed the schemas
 * before the events were read, they are reloaded before the events are
 * handed on (so they are judged by the rules in force when they were read).
 *
 * Over 350 lines, one idea: the event log; kept whole because writing,
 * reading, gap settling and pruning share its ids, locks and prune mark.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { Queryable, Row, SqlValue, Storage } from "../db/storage.ts";
import {
  BODY_COLUMNS,
  type ChangeAction,
  type ChangeHead,
  type RecordChange,
  type SqlStatement,
} from "../records/changes.ts";
import type { RecordData } from "../records/codec.ts";

/** Events younger than this are kept (5 minutes). */
export const RETAIN_MS = 5 * 60_000;
/** The newest this many events are kept whatever their age (within `retainBytes`). */
export const RETAIN_ROWS = 10_000;
/** Default `retainBytes`: the log keeps at most this many bytes of bodies (64 MiB). */
export const RETAIN_BYTES = 64 * 1024 * 1024;
/**
 * A prune by bytes keeps the newest events that fit in this share of
 * `retainBytes`: a full log is pruned once per eighth of it written, not
 * once per write (each prune sums the sizes of the whole log).
 */
export const LOW_WATER = 7 / 8;
/** Default `resumeBytes`: a resume replays at most this many bytes (8 MiB). */
export const RESUME_BYTES = 8 * 1024 * 1024;
/** One read holds at most this many bytes of bodies (or one event). */
export const READ_BYTES = 1024 * 1024;

/** Byte bounds of the log. */
export interface EventLogOptions {
  /** Bytes of bodies the log keeps at most (the newest row is always kept). */
  retainBytes?: number;
  /** Bytes of events a resume may replay; past it the client is reset. */
  resumeBytes?: number;
  /**
   * The schemas in memory: `version` is compared with the stored one each
   * read returns; `refreshIfChanged` reloads them.
   */
  schemas?: { readonly version: string; refreshIfChanged(): Promise<void> };
  /** Reports a failed prune started by a write. */
  onError?: (err: unknown) => void;
}

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
  `INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "size", "record", "previous")`;
const VALUES = "?, ?, ?, ?, ?, ?, ?, ?";
const HELD = `(SELECT pg_advisory_xact_lock_shared(${LOCK_KEY})) AS "held"`;

const COLUMNS = ["id", "entity", "entity_id", "record_id", "action", "at"]
  .concat("record", "previous").map((c) => `"e"."${c}"`).join(", ");
/** The stored schema version, read with the events (one lookup per statement). */
const VERSION =
  `(SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version') AS "mb_schema"`;
/** The `mb_meta` key of the prune mark: every id below it may have been deleted. */
const PRUNED_KEY = "events_pruned_below";
/** The prune mark, read with the events. */
const PRUNED =
  `(SELECT "value" FROM "mb_meta" WHERE "key" = '${PRUNED_KEY}') AS "mb_pruned"`;

/** What a read of the log found. */
export interface LogRead {
  /** The events, oldest first. */
  events: StoredEvent[];
  /**
   * Events after the read's start that it should have returned were pruned
   * before it (they are gone): whoever was to get them must be reset.
   */
  pruned: boolean;
}

function isId(v: unknown): boolean {
  return v !== null && v !== undefined;
}

/**
 * An event as read: its bodies are parsed when first used (the hub skips
 * events nobody follows, and asks for `previous` only when `record` is
 * out of a subscriber's view).
 */
class LoggedEvent implements StoredEvent {
  readonly id: number;
  readonly entity: string;
  readonly entityId: string;
  readonly recordId: string;
  readonly action: ChangeAction;
  readonly at: number;
  #record: string | RecordData;
  #previous: string | RecordData | undefined;

  constructor(row: Row) {
    this.id = Number(row.id);
    this.entity = String(row.entity);
    this.entityId = String(row.entity_id);
    this.recordId = String(row.record_id);
    this.action = String(row.action) as ChangeAction;
    this.at = Number(row.at);
    this.#record = String(row.record);
    this.#previous = isId(row.previous) ? String(row.previous) : undefined;
  }

  get record(): RecordData {
    if (typeof this.#record === "string") {
      this.#record = JSON.parse(this.#record);
    }
    return this.#record as RecordData;
  }

  get previous(): RecordData | undefined {
    if (typeof this.#previous === "string") {
      this.#previous = JSON.parse(this.#previous);
    }
    return this.#previous as RecordData | undefined;
  }
}

/** UTF-8 bytes of a body. */
function bytes(json: string | null): number {
  return json === null ? 0 : Buffer.byteLength(json, "utf8");
}

/** Reads and writes `mb_events`. */
export class EventLog {
  readonly #store: Storage;
  readonly #now: () => number;
  readonly #pg: boolean;
  readonly #schemas: EventLogOptions["schemas"];
  readonly #onError: (err: unknown) => void;
  /** Bytes of bodies the log keeps at most. */
  readonly retainBytes: number;
  /** Bytes a resume may replay at most. */
  readonly resumeBytes: number;
  /** Bytes the log held after the last prune of this instance. */
  #kept = 0;
  /** Bytes this instance appended since then. */
  #grown = 0;
  #pruning = false;
  /** `togetherReturning`'s texts by the write's. */
  readonly #fused = new Map<string, string>();

  /** `now`: the database clock (ms). */
  constructor(
    store: Storage,
    now: () => number,
    options: EventLogOptions = {},
  ) {
    this.#store = store;
    this.#now = now;
    this.#pg = store.dialect.name === "postgres";
    this.#schemas = options.schemas;
    this.#onError = options.onError ?? (() => {});
    this.retainBytes = options.retainBytes ?? RETAIN_BYTES;
    this.resumeBytes = options.resumeBytes ?? RESUME_BYTES;
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
    const append = this.appendAfter(c);
    return {
      sql: `WITH "mb_write" AS (${write.sql} RETURNING 1) ${append.sql}`,
      params: [...write.params, ...append.params],
    };
  }

  /**
   * PostgreSQL only: the append of `c` once for each row of the statement's
   * `"mb_write"` (a data-modifying WITH query before it: no row, nothing
   * appended), returning the change's `id`; the shared lock is taken
   * before the id, as in `append`.
   */
  appendAfter(c: RecordChange): SqlStatement {
    return {
      sql: `${INSERT} SELECT ${VALUES} FROM ${HELD}, "mb_write" RETURNING "id"`,
      params: this.#values(c),
    };
  }

  /**
   * PostgreSQL only: `write` (an UPDATE or DELETE `… RETURNING` its
   * record's columns and the change's bodies as JSON text, in
   * `BODY_COLUMNS`) and the append of its change as one statement; its rows
   * are the write's `columns`, with the change's id and size (`returned`).
   * The shared lock comes before the id, as in `append`.
   */
  togetherReturning(
    write: SqlStatement,
    c: ChangeHead,
    columns: string,
  ): SqlStatement {
    // The same text for the same write (its text is made once: see
    // lib/records/fused_writes.ts): looked up by reference after.
    let sql = this.#fused.get(write.sql);
    if (sql === undefined) {
      const { record, previous } = BODY_COLUMNS;
      sql =
        `WITH "mb_write" AS (${write.sql}), "mb_event" AS (${INSERT} SELECT ?, ?, ?, ?, ?, octet_length(${record}) + COALESCE(octet_length(${previous}), 0), ${record}, ${previous} FROM ${HELD}, "mb_write" RETURNING "id", "size") SELECT ${columns}, "mb_event"."id" AS "mb:event", "mb_event"."size" AS "mb:size" FROM "mb_write", "mb_event"`;
      if (this.#fused.size >= 256) this.#fused.clear();
      this.#fused.set(write.sql, sql);
    }
    return {
      sql,
      params: [
        ...write.params,
        c.entity,
        c.entityId,
        c.id,
        c.action,
        this.#now(),
      ],
    };
  }

  /** The id of the event a `togetherReturning` row appended (its size counted). */
  returned(row: Row): number {
    this.#grown += Number(row["mb:size"] ?? 0);
    return Number(row["mb:event"]);
  }

  #values(c: RecordChange): SqlValue[] {
    const record = JSON.stringify(c.record);
    const previous = c.previous === undefined
      ? null
      : JSON.stringify(c.previous);
    const size = bytes(record) + bytes(previous);
    this.#grown += size;
    return [
      c.entity,
      c.entityId,
      c.id,
      c.action,
      this.#now(),
      size,
      record,
      previous,
    ];
  }

  /**
   * A write committed: when what the log held after the last prune plus
   * what this instance appended since passes `retainBytes`, prune now (in
   * the background), so a burst of large events never holds the log past
   * its bound for long (each instance counts its own writes: with N
   * instances writing at once, at most about N times the bound).
   */
  committed(): void {
    if (this.#pruning || this.#kept + this.#grown <= this.retainBytes) return;
    this.#pruning = true;
    const grown = this.#grown;
    this.prune().then(
      () => {
        this.#grown -= grown;
        this.#pruning = false;
        this.committed(); // written meanwhile
      },
      (err) => {
        this.#pruning = false; // the next commit tries again
        this.#onError(err);
      },
    );
  }

  /**
   * Events with `after < id <= upTo`, oldest first, at most `limit`, and
   * at most `READ_BYTES` of bodies (at least one event); `pruned` when
   * some of them were pruned before the read (with `entities`: when any
   * event after `after` was).
   */
  async read(
    after: number,
    upTo = Number.MAX_SAFE_INTEGER,
    limit = 500,
    entities?: readonly string[],
  ): Promise<LogRead> {
    const only = entities?.length
      ? ` AND "entity" IN (${entities.map(() => "?").join(", ")})`
      : "";
    const rows = await this.#store.query(
      this.#select(`"id" > ? AND "id" <= ?${only}`, limit),
      [after, upTo, ...(entities ?? []), READ_BYTES],
    );
    const events = await this.#events(rows);
    let mark: number;
    if (rows.length > 0) mark = pruneMark(rows[0]);
    else if (upTo > after && upTo < Number.MAX_SAFE_INTEGER) {
      // Nothing in a closed range: read the mark now (it only grows, and
      // every id in the range was missing already).
      mark = pruneMark(
        (await this.#store.query(`SELECT ${PRUNED}`))[0] ?? {},
      );
    } else return { events, pruned: false };
    const hole = entities?.length ? after + 1 : firstHole(after, events, upTo);
    return { events, pruned: hole !== undefined && hole < mark };
  }

  /**
   * The events matching `where`, in id order, at most `limit` rows and
   * `READ_BYTES` (the sizes are read first; bodies only of the rows that
   * fit), with the stored schema version.
   */
  #select(where: string, limit: number): string {
    return `SELECT ${COLUMNS}, ${VERSION}, ${PRUNED} FROM (SELECT "id", SUM("size") OVER (ORDER BY "id") - "size" AS "before" FROM (SELECT "id", "size" FROM "mb_events" WHERE ${where} ORDER BY "id" LIMIT ${
      Math.trunc(limit)
    }) AS "l") AS "w" JOIN "mb_events" AS "e" ON "e"."id" = "w"."id" WHERE "w"."before" < ? ORDER BY "e"."id"`;
  }

  /** Rows to events, after reloading the schemas if another instance changed them. */
  async #events(rows: Row[]): Promise<StoredEvent[]> {
    const schemas = this.#schemas;
    if (
      schemas && rows.length > 0 &&
      String(rows[0].mb_schema ?? "0") !== schemas.version
    ) {
      await schemas.refreshIfChanged();
    }
    return rows.map((row) => new LoggedEvent(row));
  }

  /**
   * Like `read`, but final: on PostgreSQL it takes the advisory lock
   * exclusively (every transaction holding an event id has ended), so no id
   * below those returned can still appear; `max` is the highest id then
   * (or the last returned, when the byte bound left some out).
   * It never queues for the lock (queued, it would hold up every new
   * writer behind it): undefined when a writer holds it now, except with
   * `wait`, which waits at most 100 ms.
   */
  async final(
    after: number,
    limit = 500,
    wait = false,
  ): Promise<(LogRead & { max: number }) | undefined> {
    if (!this.#pg) {
      const { events, pruned } = await this.read(after, undefined, limit);
      const last = events.at(-1)?.id;
      return {
        events,
        pruned,
        max: last === undefined || events.length === limit
          ? (await this.bounds()).max
          : last,
      };
    }
    try {
      const got = await this.#store.transaction(async (tx) => {
        if (wait) {
          await tx.query(`SET LOCAL lock_timeout = '100ms'`);
          await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY}) AS "held"`);
        } else {
          const got = await tx.query(
            `SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS "held"`,
          );
          if (got[0]?.held !== true) return undefined;
        }
        const rows = await tx.query(this.#select(`"id" > ?`, limit), [
          after,
          READ_BYTES,
        ]);
        const top = await tx.query(
          `SELECT COALESCE(MAX("id"), 0) AS "max" FROM "mb_events"`,
        );
        return { rows, max: Number(top[0].max) };
      });
      if (!got) return undefined;
      const events = await this.#events(got.rows);
      // Every id up to the last row read is settled; past it only when all
      // rows up to `max` fit in this read.
      const last = events.at(-1)?.id;
      const hole = firstHole(after, events, Number.MAX_SAFE_INTEGER);
      return {
        events,
        pruned: hole !== undefined && got.rows.length > 0 &&
          hole < pruneMark(got.rows[0]),
        max: last === undefined || events.length === limit ? got.max : last,
      };
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
   * Whether a client that saw every event up to `from` can resume up to
   * `upTo` following `entities`: every event after `from` is still kept,
   * and those of `entities` hold at most `resumeBytes` (only their sizes
   * are read, never their bodies).
   */
  async resumable(
    from: number,
    upTo: number,
    entities: readonly string[],
  ): Promise<boolean> {
    const only = entities.length
      ? ` AND "entity" IN (${entities.map(() => "?").join(", ")})`
      : "";
    const rows = await this.#store.query(
      `SELECT COALESCE((SELECT MIN("id") FROM "mb_events"), 0) AS "min", (SELECT COALESCE(SUM("size"), 0) FROM "mb_events" WHERE "id" > ? AND "id" <= ?${only}) AS "bytes", ${PRUNED}`,
      [from, upTo, ...entities],
    );
    const min = Number(rows[0].min);
    if (!(min > 0 ? from >= min : from === 0)) return false;
    // A row committed late may be older than what a prune deleted.
    if (from + 1 < pruneMark(rows[0])) return false;
    return Number(rows[0].bytes) <= this.resumeBytes;
  }

  /**
   * Drops what retention no longer needs: rows both older than
   * `retainMs` and outside the newest `retainRows`, except the newest
   * such row (it marks how far back a resume reaches); and, when the log
   * holds more than `retainBytes`, rows outside the newest that fit in
   * `LOW_WATER` of it (the newest row always stays). Returns rows dropped.
   */
  async prune(
    retainMs = RETAIN_MS,
    retainRows = RETAIN_ROWS,
    retainBytes = this.retainBytes,
  ): Promise<number> {
    let below = 0;
    // By the primary key only (no index on "at": it would cost every write).
    const byCount = await this.#store.query(
      `SELECT "id" FROM "mb_events" ORDER BY "id" DESC LIMIT 1 OFFSET ${
        Math.trunc(retainRows)
      }`,
    );
    if (isId(byCount[0]?.id)) {
      const old = await this.#store.query(
        `SELECT MAX("id") AS "id" FROM "mb_events" WHERE "id" <= ? AND "at" < ?`,
        [Number(byCount[0].id), this.#now() - retainMs],
      );
      if (isId(old[0]?.id)) below = Number(old[0].id);
    }
    // By bytes, once past the bound: the oldest row of the newest that fit
    // in its low-water mark (sizes only), so the next prune by bytes comes
    // only after that much more is written, not after every write.
    const low = Math.floor(retainBytes * LOW_WATER);
    const [b] = await this.#store.query(
      `SELECT MIN(CASE WHEN "run" <= ? THEN "id" END) AS "fits", MAX(CASE WHEN "run" <= ? THEN "run" END) AS "bytes", MAX("id") AS "top", MIN("run") AS "newest", MAX("run") AS "total" FROM (SELECT "id", SUM("size") OVER (ORDER BY "id" DESC) AS "run" FROM "mb_events") AS "w"`,
      [low, low],
    );
    const total = Number(b?.total ?? 0);
    if (total <= retainBytes) this.#kept = total;
    else {
      // None fits: the newest row alone is past the mark; it stays.
      const fits = b?.fits ?? b?.top;
      if (isId(fits)) below = Math.max(below, Number(fits));
      this.#kept = Number(b?.bytes ?? b?.newest ?? 0);
    }
    if (below === 0) return 0;
    // The mark with the rows it deleted: a reader sees both or neither.
    return await this.#store.transaction(async (tx) => {
      const n = await tx.run(`DELETE FROM "mb_events" WHERE "id" < ?`, [
        below,
      ]);
      await tx.run(
        `INSERT INTO "mb_meta" ("key", "value") VALUES ('${PRUNED_KEY}', ?) ON CONFLICT ("key") DO UPDATE SET "value" = "excluded"."value" WHERE CAST("mb_meta"."value" AS BIGINT) < CAST("excluded"."value" AS BIGINT)`,
        [String(below)],
      );
      return n;
    });
  }
}

/** The prune mark a row carries (0: nothing was ever pruned). */
function pruneMark(row: Row): number {
  const v = Number(row.mb_pruned ?? 0);
  return Number.isFinite(v) ? v : 0;
}

/**
 * The first id after `after` missing from `events` (read in id order, none
 * left out between them), or undefined when none is known to be missing:
 * for an empty read, `after + 1` when the range up to `upTo` held ids.
 */
function firstHole(
  after: number,
  events: readonly StoredEvent[],
  upTo: number,
): number | undefined {
  let next = after + 1;
  for (const ev of events) {
    if (ev.id > next) return next;
    next = ev.id + 1;
  }
  return events.length === 0 && upTo > after ? next : undefined;
}
