/**
 * The read snapshot of a turn of the event loop: the reads of one turn on a
 * SQLite connection share one read transaction, ended when the turn ends or
 * before any write of the connection, so none stays open and the WAL can be
 * checkpointed.
 *
 * Outside a transaction each read takes and drops SQLite's shared lock: two
 * `fcntl` and an `fstat`, ~3 µs on a VM, where a read in a transaction costs
 * ~1 µs. The turn's reads share the lock and one snapshot; it ends when the
 * turn does (`setImmediate`, like the write group) or before any write, so a
 * request never reads older data than was committed when its turn began,
 * and a write never waits on it. Reads of another connection's commit made
 * during the turn wait for the next turn, as a request arriving a moment
 * earlier would.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import type { SqliteConnection } from "./sqlite_statements.ts";

/** The read transaction of the current turn on one connection. */
export class ReadTurn {
  readonly #conn: SqliteConnection;
  /** This turn's read transaction is open (its end is scheduled). */
  #open = false;
  readonly #endWithTurn = () => this.end();

  constructor(conn: SqliteConnection) {
    this.#conn = conn;
  }

  /** This turn's read transaction is open. */
  get open(): boolean {
    return this.#open;
  }

  /**
   * Opens this turn's read transaction, unless a transaction is open (the
   * write group's, which reads share) or this turn's already is.
   */
  begin(): void {
    if (this.#open || this.#conn.db.isTransaction) return;
    try {
      this.#conn.statement("BEGIN").st.run();
    } catch {
      // Ignored: without a snapshot the read runs on its own (outside a
      // transaction), and reports its own error if the database has one.
      return;
    }
    this.#open = true;
    setImmediate(this.#endWithTurn);
  }

  /**
   * Ends this turn's read transaction now (before a write, with the turn, or
   * for a fresh read): the next read sees every commit made so far.
   */
  end(): void {
    if (!this.#open) return;
    this.#open = false;
    const db = this.#conn.db;
    try {
      if (db.isTransaction) this.#conn.statement("COMMIT").st.run();
    } catch {
      // A read transaction has nothing to commit: ending it any way will do.
      try {
        if (db.isTransaction) db.exec("ROLLBACK");
      } catch {
        // Ignored: the connection reports the next error itself, on the
        // statement that meets it.
      }
    }
  }
}
