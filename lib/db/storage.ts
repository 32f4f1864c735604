/**
 * The storage interface: everything above it is written once for SQLite
 * and PostgreSQL. SQL uses `?` placeholders; values are always parameters.
 *
 * @module
 */

/** A value that can be bound as a parameter. */
export type SqlValue = string | number | boolean | null | Uint8Array;

/** A result row (column name → value). */
export type Row = Record<string, unknown>;

/** What a constraint failure was about, when the database tells. */
export interface ConstraintFailure {
  /** `too_long`: a value too big for an index entry (PostgreSQL). */
  kind: "unique" | "foreign_key" | "not_null" | "check" | "too_long";
  /** Constraint or index name (PostgreSQL). */
  constraint?: string;
  /** `table.column` (SQLite); a unique index over several: `t.a, t.b`. */
  column?: string;
}

/** Something SQL can run on: the storage itself or an open transaction. */
export interface Queryable {
  /** Runs a statement returning rows (SELECT, or … RETURNING). */
  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  /** Runs a statement and returns the number of changed rows. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs DDL (one statement, no parameters). */
  exec(sql: string): Promise<void>;
  /**
   * The result columns of a query without running it, with the table column
   * each is a plain copy of where the database tells (SQLite only).
   */
  columns?(sql: string): Promise<ColumnOrigin[]>;
  /**
   * Inside a transaction (PostgreSQL): runs `fn` as a savepoint, so that its
   * failure undoes `fn`'s statements only and the transaction goes on.
   * Without it, issue `SAVEPOINT` statements (SQLite).
   */
  savepoint?<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}

/** What to do with a statement sent by `Storage.pipeline` once it answers. */
export interface Pipelined {
  /** Its rows (it succeeded). */
  done(rows: Row[]): void;
  /** The error to report for its failure (it failed). */
  failed(err: unknown): unknown;
}

/** A result column and where it comes from (null when it is computed). */
export interface ColumnOrigin {
  name: string;
  table: string | null;
  column: string | null;
  /** Declared type of the origin column. */
  type: string | null;
}

/** The database-specific details that SQL builders need. */
export interface Dialect {
  readonly name: "sqlite" | "postgres";
  /** Suffix that locks selected rows until commit (" FOR UPDATE"; "" where writes are serialized). */
  readonly forUpdate: string;
  /** Condition "the JSON array in column `col` contains the string `?`". */
  jsonArrayContains(col: string): string;
  /** Column type for a logical kind. */
  columnType(kind: ColumnKind): string;
  /** Encodes a JS value for a column of this kind. */
  encode(kind: ColumnKind, value: unknown): SqlValue;
  /** Decodes a stored value of this kind to its JSON value. */
  decode(kind: ColumnKind, value: unknown): unknown;
  /** Classifies a database error as a constraint failure, if it is one. */
  constraintFailure(err: unknown): ConstraintFailure | undefined;
}

/** What the health check reports about the database. */
export type DatabaseState = "ok" | "unavailable" | "full";

/** Logical storage kinds that field types map to. */
export type ColumnKind = "text" | "int" | "double" | "bool" | "json";

/** The storage: a database plus its dialect. */
export interface Storage extends Queryable {
  readonly dialect: Dialect;
  /**
   * Runs `fn` in one transaction; it commits when `fn` resolves and rolls
   * back when it throws. Inside `fn`, run statements on `tx` only: a
   * statement on the storage itself may wait for this transaction to end
   * (SQLite; PostgreSQL with one connection), and never sees its writes.
   * A statement that fails inside `fn` fails the whole transaction on
   * PostgreSQL even when `fn` catches it: do not catch and carry on.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * `transaction` for a write that only reads before its one write statement
   * and only appends its change after it; a storage that can make that
   * cheaper (SQLite: no savepoint of its own in the write group) has it.
   */
  leanTransaction?<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Only inside a batch's transaction on PostgreSQL (`WriteScope`): sends a
   * write that nothing after it in the same record write reads (a create
   * fused with its change) without waiting for its answer, so the batch's
   * next writes go out in the same round trip. Its answer is handed to
   * `then` later; its failure fails the batch as the request that sent it
   * (the statements sent after it fail too, and are not reported).
   */
  pipeline?(sql: string, params: readonly SqlValue[], then: Pipelined): void;
  /**
   * `query` for a statement whose best plan depends on its parameters'
   * values (a list under a caller's filter): PostgreSQL plans it for the
   * values of each call ("custom plan"), never with the generic plan it
   * would otherwise keep for a prepared statement after five calls (that
   * plan guesses a range bounded by two parameters at 0.5% of the rows,
   * whatever the bounds). Without it, use `query`.
   */
  queryCustomPlan?(sql: string, params: readonly SqlValue[]): Promise<Row[]>;
  /**
   * Runs `fn` on a read-only view of the database as it was when the
   * snapshot began (every commit before it, none after), on a connection of
   * its own, so writers go on meanwhile (a backup reads through it). `fn`
   * may run for long; its statements must be reads.
   */
  snapshot<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /**
   * The database's condition for the health check: `unavailable` when it
   * cannot be reached, `full` while writes fail for lack of space (until a
   * write succeeds again), else `ok`.
   */
  state(): Promise<DatabaseState>;
  /**
   * The same, answered at once when that costs no waiting (SQLite with no
   * transaction open); `undefined`: ask `state()`.
   */
  stateNow?(): DatabaseState | undefined;
  /**
   * Makes the next read see every commit made so far (SQLite ends the read
   * transaction its reads of this turn share): for a catch-up on another
   * isolate's change.
   */
  fresh?(): void;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Thrown when the database cannot be reached or opened (lives in lib/errors.ts). */
export { StorageUnavailableError } from "../errors.ts";

/**
 * Quotes an identifier. Only `[A-Za-z0-9_]` names are accepted, so no
 * quoting escape is ever needed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ident } from "moonbase/lib/db/storage.ts";
 * assert.ok(ident("posts") === '"posts"');
 * ```
 */
export function ident(name: string): string {
  if (!/^[A-Za-z0-9_]{1,63}$/.test(name)) {
    throw new Error(
      `Cannot quote identifier: invalid name ${JSON.stringify(name)}`,
    );
  }
  return `"${name}"`;
}

function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/**
 * Maps an entity or field name (up to 64 characters) to an identifier that
 * fits PostgreSQL's 63-byte limit: unchanged when short enough, else a
 * prefix plus a hash of the whole name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { physicalName } from "moonbase/lib/db/storage.ts";
 * assert.ok(physicalName("posts") === "posts");
 * assert.ok(physicalName("a".repeat(64)).length === 63);
 * ```
 */
export function physicalName(name: string): string {
  return name.length <= 63 ? name : `${name.slice(0, 54)}_${fnv1a(name)}`;
}
