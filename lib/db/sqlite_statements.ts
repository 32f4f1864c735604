/**
 * The connection of one SQLite storage and its statements: the file opened
 * with Moonbase's pragmas (WAL, synchronous=NORMAL, busy_timeout, foreign
 * keys), a cache of prepared statements (each knowing whether it writes and
 * how to build its rows), and SQLite's errors mapped to what they mean to a
 * client, a full disk remembered for health. Statements only ever run
 * through `.all()` / `.run()`, which reset them. When statements run (the
 * read snapshot of a turn, the write group) is decided by
 * sqlite_read_turn.ts and sqlite_write_group.ts.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { registerTextFunctions } from "./sqlite_text.ts";
import type {
  ColumnOrigin,
  DatabaseState,
  Queryable,
  Row,
  SqlValue,
} from "./storage.ts";
import { StorageUnavailableError } from "./storage.ts";
import { type RowMaker, rowMaker } from "./shapes.ts";
import { ownerOnly } from "./private_files.ts";
import { writes } from "./statement_kind.ts";
import { diskFull } from "../errors.ts";
import { bindable, settle } from "./sqlite_params.ts";
import {
  busyError,
  FULL_REPORTED_MS,
  noSpace,
  staleSchema,
} from "./sqlite_errors.ts";

/** A cached statement and its result column names. */
export interface Prepared {
  st: StatementSync;
  /** Builds a row object from the statement's values (see shapes.ts). */
  make: RowMaker;
  /** The statement changes data (a write must commit before it is answered). */
  writes: boolean;
}

/** Whether writes fail for lack of space: what health reports as "full". */
interface Space {
  /** A write failed for lack of space, and none has succeeded since. */
  full: boolean;
  /** When a write last failed for lack of space (ms since the epoch). */
  at: number;
}

/** Statements the cache holds before it starts over (SQL built per request stays bounded). */
const CACHE_LIMIT = 2000;

/** One `node:sqlite` connection with its statement cache. */
export class SqliteConnection {
  /** The driver's connection: `exec` for transaction control, `isTransaction`. */
  readonly db: DatabaseSync;
  readonly #cache = new Map<string, Prepared>();
  readonly #space: Space = { full: false, at: 0 };
  readonly #readOnly: boolean;

  /**
   * Opens (creating if needed) the database file at `path`; `readOnly`
   * opens an existing one for reading only (a snapshot's connection).
   */
  constructor(path: string, options: { readOnly?: boolean } = {}) {
    this.#readOnly = options.readOnly === true;
    try {
      if (this.#readOnly) {
        this.db = new DatabaseSync(path, { readOnly: true });
        this.db.exec("PRAGMA busy_timeout=5000");
        // A snapshot reads what the writer wrote, views and fold indexes
        // included: the same functions as on the writer's connection.
        registerTextFunctions(this.db);
        return;
      }
      ownerOnly(path);
      this.db = new DatabaseSync(path);
      this.db.exec("PRAGMA journal_mode=WAL");
      this.db.exec("PRAGMA synchronous=NORMAL");
      this.db.exec("PRAGMA busy_timeout=5000");
      this.db.exec("PRAGMA foreign_keys=ON");
      this.db.exec("PRAGMA journal_size_limit=67108864");
      registerTextFunctions(this.db);
    } catch (err) {
      throw new StorageUnavailableError(
        `Cannot open SQLite database ${path}: ${
          err instanceof Error ? err.message : err
        }`,
      );
    }
  }

  /** The prepared statement of `sql` (prepared once, then from the cache). */
  statement(sql: string): Prepared {
    let s = this.#cache.get(sql);
    if (!s) {
      if (this.#cache.size > CACHE_LIMIT) this.#cache.clear();
      const st = this.db.prepare(sql);
      // Rows come back as arrays and become plain objects here: cheaper than
      // the binding's own objects, and they serialize on V8's fast path.
      (st as StatementSync & { setReturnArrays(on: boolean): void })
        .setReturnArrays(true);
      const names = st.columns().map((c) => c.name);
      s = { st, make: rowMaker(names), writes: writes(sql) };
      this.#cache.set(sql, s);
    }
    return s;
  }

  /** Runs a prepared statement and returns its rows (errors unmapped). */
  rows({ st, make }: Prepared, params: readonly SqlValue[] = []): Row[] {
    const arrays = st.all(...bindable(params)) as unknown as unknown[][];
    const rows: Row[] = new Array(arrays.length);
    for (let r = 0; r < arrays.length; r++) rows[r] = make(arrays[r]);
    return rows;
  }

  /** The rows of `sql`, a failure mapped by `error`. */
  all(sql: string, params: readonly SqlValue[] = []): Row[] {
    try {
      return this.rows(this.statement(sql), params);
    } catch (err) {
      throw this.error(err);
    }
  }

  /** Runs `sql` and returns the number of changed rows, a failure mapped by `error`. */
  run(sql: string, params: readonly SqlValue[] = []): number {
    try {
      return Number(this.statement(sql).st.run(...bindable(params)).changes);
    } catch (err) {
      throw this.error(err);
    }
  }

  /**
   * The statements of a transaction, for its `fn`: `wrote` is called after
   * each write statement that succeeded.
   */
  queryable(wrote: () => void): Queryable {
    return {
      // Failures reject (never throw), as on the storage itself.
      query: (sql, params) =>
        settle(() => {
          try {
            const prepared = this.statement(sql);
            const rows = this.rows(prepared, params);
            if (prepared.writes) wrote();
            return rows;
          } catch (err) {
            throw this.error(err);
          }
        }),
      run: (sql, params) =>
        settle(() => {
          const n = this.run(sql, params);
          wrote();
          return n;
        }),
      exec: (sql) => {
        try {
          this.db.exec(sql);
        } catch (err) {
          return Promise.reject(err);
        }
        wrote();
        // DDL: cached statements (and their row builders) may be stale.
        this.forget();
        return Promise.resolve();
      },
      columns: (sql) => this.columns(sql),
    };
  }

  /** Result columns of `sql` with their origin table and column (prepared, not run). */
  columns(sql: string): Promise<ColumnOrigin[]> {
    try {
      return Promise.resolve(
        this.db.prepare(sql).columns().map((c) => ({
          name: c.name,
          table: c.table,
          column: c.column,
          type: c.type,
        })),
      );
    } catch (err) {
      return Promise.reject(staleSchema(err));
    }
  }

  /**
   * Maps a SQLite error: a full disk (507, remembered for health), a stale
   * schema (409), a write lock held past the busy timeout (503).
   */
  error(err: unknown): unknown {
    if (!noSpace(err)) return busyError(err) ?? staleSchema(err);
    this.#space.full = true;
    this.#space.at = Date.now();
    return diskFull();
  }

  /** A write was committed: the disk had room. */
  committed(): void {
    this.#space.full = false;
  }

  /** The last write failed for lack of space (none has succeeded since). */
  get full(): boolean {
    return this.#space.full;
  }

  /** The state of a database that answered: full while writes fail for space. */
  answered(): DatabaseState {
    const space = this.#space;
    const full = space.full && Date.now() - space.at < FULL_REPORTED_MS;
    return full ? "full" : "ok";
  }

  /** Forgets every prepared statement (after DDL or a rollback they may be stale). */
  forget(): void {
    this.#cache.clear();
  }

  /** Closes the connection, checkpointing the WAL first when it can at once. */
  close(): void {
    this.#cache.clear();
    if (!this.db.isOpen) return;
    if (this.#readOnly) return this.db.close();
    try {
      // Without waiting: a reader of another connection in this thread (its
      // turn's read transaction) could not end meanwhile.
      this.db.exec("PRAGMA busy_timeout=0");
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Ignored: the checkpoint only keeps the WAL file small; a failed one
      // loses nothing, and SQLite checkpoints again as writes go on.
    }
    this.db.close();
  }
}
