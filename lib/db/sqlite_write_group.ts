/**
 * The write group of a turn: group commit of one SQLite connection's writes.
 *
 * The first write of a turn of the event loop commits on its own; later
 * writes of the same turn (transactions as savepoints) share one
 * transaction, committed when the turn ends (lean transactions always join
 * it). A write's promise settles only after its commit, so a write is
 * durable before it is acknowledged, and a failed statement or transaction
 * undoes only itself. One commit per group instead of one per write: an
 * autocommit INSERT costs ~64 µs, a grouped one ~26 µs. (Reads on this
 * connection see grouped writes before they commit.)
 *
 * Storages of one isolate on one file (two apps of one process) take the
 * write lock in turn: one never waits in SQLite's busy handler for another,
 * which could not run meanwhile.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import type { Queryable } from "./storage.ts";
import type { SqliteConnection } from "./sqlite_statements.ts";
import type { ReadTurn } from "./sqlite_read_turn.ts";
import { diskFull } from "../errors.ts";
import { groupLost } from "./sqlite_errors.ts";

/** Writes waiting for the commit of the group they ran in. */
interface Group {
  waiting: { ok: () => void; fail: (err: unknown) => void }[];
  /** Its tick has come: it commits as soon as no transaction runs in it. */
  due: boolean;
}

/** The transaction running on the connection (every other statement waits for it). */
interface Running {
  /** Settles when it ends. */
  done: Promise<void>;
  /** It has run a write statement (a lean one that fails then loses its group). */
  wrote: boolean;
}

/** Where the writes of one connection stand. */
interface WriteState {
  /** This turn of the event loop has written: its end is scheduled. */
  turn: boolean;
  /** The open write group: a transaction begun, committed with its turn. */
  group: Group | undefined;
  /** The running transaction. */
  running: Running | undefined;
  /** The last transaction to ask to run: the next one waits for it. */
  tail: Promise<void>;
}

/**
 * The write groups of this isolate by file: two on one file must not wait
 * in SQLite's busy handler for each other, since the one holding the lock
 * cannot run meanwhile (see `#neighbourHolding`).
 */
const byFile = new Map<string, Set<GroupCommit>>();

/** Group commit of one connection's writes (see the module's comment). */
export class GroupCommit {
  readonly #conn: SqliteConnection;
  readonly #reads: ReadTurn;
  readonly #file: string;
  readonly #state: WriteState = {
    turn: false,
    group: undefined,
    running: undefined,
    tail: Promise.resolve(),
  };
  /** What a transaction's `fn` runs its statements on. */
  readonly #tx: Queryable;

  /** Writes of `conn` (on the file at `path`), ending `reads` before each. */
  constructor(conn: SqliteConnection, reads: ReadTurn, path: string) {
    this.#conn = conn;
    this.#reads = reads;
    this.#file = path;
    this.#tx = conn.queryable(() => this.#wrote());
    if (path !== ":memory:" && path !== "") {
      const set = byFile.get(path) ?? new Set();
      set.add(this);
      byFile.set(path, set);
    }
  }

  /** Settles when the running transaction ends; undefined when none runs. */
  get running(): Promise<void> | undefined {
    return this.#state.running?.done;
  }

  /** The running transaction has run a write statement. */
  #wrote(): void {
    const running = this.#state.running;
    if (running) running.wrote = true;
  }

  /**
   * After a commit: the other storages of this isolate on the same file end
   * their read transactions, so that what runs after the commit in this
   * thread reads it (a snapshot of the turn would predate it).
   */
  #endNeighbourReads(): void {
    const set = byFile.get(this.#file);
    if (!set || set.size < 2) return;
    for (const other of set) if (other !== this) other.#reads.end();
  }

  /**
   * Before taking the write lock: another storage of this isolate on the
   * same file commits its write group now (its turn would end only after
   * this thread waited out SQLite's busy timeout); one running a transaction
   * is returned, to be waited for.
   */
  #neighbourHolding(): GroupCommit | undefined {
    const set = byFile.get(this.#file);
    if (!set || set.size < 2) return undefined;
    for (const other of set) {
      if (other === this) continue;
      if (other.#state.running) return other;
      // (Its read transaction does not hold a writer back: WAL.)
      if (other.#state.group) other.#commit(other.#state.group);
    }
    return undefined;
  }

  /** Runs a write: alone when it is the turn's first, else in the write group. */
  write<T>(statement: () => T): Promise<T> {
    const s = this.#state;
    if (s.running) return this.later(() => this.write(statement));
    const holder = this.#neighbourHolding();
    if (holder) {
      return holder.later(() => undefined).then(() => this.write(statement));
    }
    this.#reads.end();
    if (!s.group && !s.turn) {
      // The first write of this turn commits on its own, answered at once.
      this.#startTurn();
      try {
        const out = statement();
        this.#conn.committed();
        this.#endNeighbourReads();
        return Promise.resolve(out);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    let group: Group, out: T;
    try {
      group = this.#join();
      out = statement();
    } catch (err) {
      this.failed();
      return Promise.reject(this.#conn.error(err));
    }
    return new Promise((resolve, reject) =>
      group.waiting.push({ ok: () => resolve(out), fail: reject })
    );
  }

  /**
   * Marks a turn of the event loop with writes. `setImmediate` runs after the
   * pending I/O callbacks: the writes of requests that arrived together join
   * one group, committed here (a timer would cost a sequential client 1-3 ms).
   */
  #startTurn(): void {
    const s = this.#state;
    s.turn = true;
    setImmediate(() => {
      s.turn = false;
      const group = s.group;
      if (!group) return;
      group.due = true;
      // With a transaction running, it commits the group when it ends.
      if (!s.running) this.#commit(group);
    });
  }

  /** The open write group (opened here, committed at the end of the turn). */
  #join(): Group {
    const s = this.#state;
    this.failed(); // a group SQLite rolled back is not joined
    if (s.group) return s.group;
    if (!s.turn) this.#startTurn();
    this.#conn.db.exec("BEGIN IMMEDIATE");
    const group: Group = { waiting: [], due: false };
    s.group = group;
    return group;
  }

  /** Commits `group` and settles its writes (no transaction may be running). */
  #commit(group: Group): void {
    if (this.#state.group !== group) return;
    const db = this.#conn.db;
    if (!db.isTransaction) return this.#lose(group);
    try {
      db.exec("COMMIT");
      this.#conn.committed();
    } catch (err) {
      this.#conn.error(err); // remembers a full disk for health and for the group
      try {
        if (db.isTransaction) db.exec("ROLLBACK");
      } catch {
        // Ignored: the group's writes fail below in any case, and the
        // connection reports the next error itself.
      }
      return this.#lose(group);
    }
    this.#state.group = undefined;
    this.#endNeighbourReads();
    for (const w of group.waiting) w.ok();
  }

  /**
   * After a failed statement: when SQLite rolled the whole transaction back
   * (not just the statement), every other write of the group is lost (the
   * failing statement keeps its own error).
   */
  failed(): void {
    const group = this.#state.group;
    if (group && !this.#conn.db.isTransaction) this.#lose(group);
  }

  /** Tells every write of a group that was not committed: 507 when the disk was full, else 503. */
  #lose(group: Group): void {
    this.#state.group = undefined;
    this.#conn.forget();
    const why = this.#conn.full ? diskFull : groupLost;
    for (const w of group.waiting) w.fail(why());
  }

  /** Runs `fn` once no transaction is running. */
  async later<T>(fn: () => T | Promise<T>): Promise<T> {
    const s = this.#state;
    while (s.running) await s.running.done;
    return await fn();
  }

  /**
   * Ends this turn's reads and commits the open group now: before a
   * statement outside any transaction (DDL, pragmas) or closing.
   */
  commitNow(): void {
    this.#reads.end();
    if (this.#state.group) this.#commit(this.#state.group);
  }

  /** Leaves the write groups of its file (the storage closes). */
  leave(): void {
    const set = byFile.get(this.#file);
    set?.delete(this);
    if (set?.size === 0) byFile.delete(this.#file);
  }

  /**
   * Runs `fn` in a transaction: on its own when it is the turn's first write,
   * else as a savepoint of the write group (settling after the commit). A
   * `lean` one always runs in the write group and without a savepoint of
   * its own (see `SqliteStorage.leanTransaction`).
   */
  async transaction<T>(
    fn: (tx: Queryable) => Promise<T>,
    lean: boolean,
  ): Promise<T> {
    const s = this.#state;
    const prev = s.tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => release = r);
    s.tail = mine;
    await prev;
    for (;;) {
      while (s.running) await s.running.done;
      const holder = this.#neighbourHolding();
      if (!holder) break;
      await holder.later(() => undefined);
    }
    const running: Running = { done: mine, wrote: false };
    s.running = running;
    this.#reads.end();
    const alone = !lean && !s.group && !s.turn;
    const savepoint = !alone && !lean;
    const conn = this.#conn, db = conn.db;
    let out: T, committed: Promise<void> | undefined;
    try {
      const group = alone ? undefined : this.#join();
      if (alone) {
        this.#startTurn();
        db.exec("BEGIN IMMEDIATE");
      } else if (savepoint) db.exec("SAVEPOINT mb_tx");
      try {
        out = await fn(this.#tx);
        if (alone) {
          db.exec("COMMIT");
          conn.committed();
          this.#endNeighbourReads();
        } else if (savepoint) db.exec("RELEASE mb_tx");
      } catch (err) {
        if (db.isTransaction) {
          if (alone) db.exec("ROLLBACK");
          else if (savepoint) {
            db.exec("ROLLBACK TO mb_tx");
            db.exec("RELEASE mb_tx");
          } // Lean, after a write: the group is lost (`failed` below).
          else if (running.wrote) db.exec("ROLLBACK");
        }
        conn.forget();
        throw err;
      }
      if (group) {
        committed = new Promise((ok, fail) => group.waiting.push({ ok, fail }));
      }
    } catch (err) {
      if (!alone) this.failed();
      throw conn.error(err);
    } finally {
      s.running = undefined;
      release();
      // A group whose turn ended while this ran commits now, before the next
      // transaction can join it: a stream of transactions never delays it.
      if (s.group?.due) this.#commit(s.group);
    }
    await committed;
    return out;
  }
}
