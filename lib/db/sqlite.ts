/**
 * SQLite storage on `node:sqlite`: the `Storage` of one database file, put
 * together from its three ideas — the connection and its statements
 * (sqlite_statements.ts), the read snapshot of a turn of the event loop
 * (sqlite_read_turn.ts) and the write group, group commit of the turn's
 * writes (sqlite_write_group.ts). The reads of one turn share one read
 * transaction, ended with the turn, so none stays open and the WAL can be
 * checkpointed; a write settles only after its commit.
 *
 * @module
 */

import type {
  ColumnOrigin,
  DatabaseState,
  Queryable,
  Row,
  SqlValue,
  Storage,
} from "./storage.ts";
import { sqliteDialect } from "./sqlite_dialect.ts";
import { busyError } from "./sqlite_errors.ts";
import { type Prepared, SqliteConnection } from "./sqlite_statements.ts";
import { ReadTurn } from "./sqlite_read_turn.ts";
import { GroupCommit } from "./sqlite_write_group.ts";

export { sqliteDialect } from "./sqlite_dialect.ts";

/**
 * Storage on a SQLite file (or `:memory:`).
 *
 * Writes are committed in groups (sqlite_write_group.ts): the first write of
 * a turn of the event loop commits on its own, later writes of the same
 * turn share one transaction committed when the turn ends. A write's
 * promise settles only after its commit, so a write is durable before it is
 * acknowledged, and a failed statement or transaction undoes only itself.
 * (Reads on this connection see grouped writes before they commit.)
 */
export class SqliteStorage implements Storage {
  readonly dialect = sqliteDialect;
  readonly #conn: SqliteConnection;
  readonly #reads: ReadTurn;
  readonly #writes: GroupCommit;
  readonly #path: string;

  /** Opens (creating if needed) the database file at `path`. */
  constructor(path: string) {
    this.#path = path;
    this.#conn = new SqliteConnection(path);
    this.#reads = new ReadTurn(this.#conn);
    this.#writes = new GroupCommit(this.#conn, this.#reads, path);
  }

  /** Result columns of `sql` with their origin table and column (prepared, not run). */
  columns(sql: string): Promise<ColumnOrigin[]> {
    return this.#conn.columns(sql);
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    const conn = this.#conn;
    let prepared: Prepared;
    try {
      prepared = conn.statement(sql);
    } catch (err) {
      return Promise.reject(conn.error(err));
    }
    // A write (… RETURNING) commits like `run`.
    if (prepared.writes) return this.#writes.write(() => conn.all(sql, params));
    if (this.#writes.running) {
      return this.#writes.later(() => conn.all(sql, params));
    }
    // No transaction running: answer at once (no extra async frame per
    // read), with the statement just looked up, in this turn's snapshot.
    try {
      this.#reads.begin();
      return Promise.resolve(conn.rows(prepared, params));
    } catch (err) {
      this.#writes.failed();
      return Promise.reject(conn.error(err));
    }
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.#writes.write(() => this.#conn.run(sql, params));
  }

  /**
   * Ends this turn's read transaction now: the next read sees every commit
   * made so far, another connection's included. For reading what another
   * isolate announced after its commit (a shared counter, a message): this
   * turn's snapshot may be older than that commit, and a reader that counts
   * itself caught up after reading it would stay behind.
   */
  fresh(): void {
    this.#reads.end();
  }

  async exec(sql: string): Promise<void> {
    while (this.#writes.running) await this.#writes.running;
    // Statements outside any transaction (DDL, pragmas): commit the group first.
    this.#writes.commitNow();
    try {
      this.#conn.db.exec(sql);
    } catch (err) {
      throw busyError(err) ?? err; // other failures stay the driver's own
    }
    this.#conn.forget();
  }

  /**
   * Runs `fn` in a transaction: on its own when it is the turn's first write,
   * else as a savepoint of the write group (settling after the commit).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#writes.transaction(fn, false);
  }

  /**
   * `transaction` for a write whose every step after its first write
   * statement can fail only when the database does (a full disk, an I/O
   * error), such as a record's write followed by the append of its change.
   * It always runs in the write group (the turn's first write too: under
   * load that is one commit per turn instead of two) and without a
   * savepoint of its own (one SAVEPOINT and RELEASE fewer). When `fn` fails
   * before it wrote, the group goes on (a failed statement undoes itself);
   * when it fails after, nothing of it can be kept apart, so the whole group
   * rolls back and its other writes fail with 503 (a failure such as a full
   * disk ends the group in any case).
   */
  leanTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#writes.transaction(fn, true);
  }

  async snapshot<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    if (this.#path === ":memory:" || this.#path === "") {
      // No second connection sees an in-memory database: read in a transaction.
      return await this.transaction(fn);
    }
    // A connection of its own in one read transaction (WAL: writers go on).
    const conn = new SqliteConnection(this.#path, { readOnly: true });
    try {
      conn.db.exec("BEGIN");
      // The snapshot starts at the first read, so take it now.
      conn.all(`SELECT 1 AS "one" FROM "sqlite_schema" LIMIT 1`);
      return await fn(conn.queryable(() => {}));
    } finally {
      try {
        conn.db.exec("ROLLBACK");
      } catch {
        // Ignored: a read transaction that cannot end ends with its connection.
      }
      conn.close();
    }
  }

  async ping(): Promise<void> {
    await this.query("SELECT 1 AS ok");
  }

  stateNow(): DatabaseState | undefined {
    if (this.#writes.running) return undefined;
    const conn = this.#conn;
    try {
      conn.rows(conn.statement("SELECT 1 AS ok"), []);
    } catch {
      // Not ignored: the failure is the answer ("unavailable").
      this.#writes.failed();
      return "unavailable";
    }
    return conn.answered();
  }

  async state(): Promise<DatabaseState> {
    const now = this.stateNow();
    if (now) return now;
    try {
      await this.ping();
    } catch {
      return "unavailable"; // not ignored: the failure is the answer
    }
    return this.#conn.answered();
  }

  async close(): Promise<void> {
    while (this.#writes.running) await this.#writes.running;
    this.#writes.leave();
    this.#writes.commitNow();
    this.#conn.close();
  }
}
