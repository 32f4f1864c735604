/**
 * SQLite storage on `node:sqlite` (WAL, synchronous=NORMAL, busy_timeout,
 * foreign keys, prepared-statement cache). Statements only ever run through
 * `.all()` / `.run()`, which reset them; the reads of one turn of the event
 * loop share one read transaction, ended with the turn, so none stays open
 * and the WAL can be checkpointed.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import type {
  ColumnOrigin,
  DatabaseState,
  Queryable,
  Row,
  SqlValue,
  Storage,
} from "./storage.ts";
import { StorageUnavailableError } from "./storage.ts";
import { type RowMaker, rowMaker } from "./shapes.ts";
import { sqliteDialect } from "./sqlite_dialect.ts";
import { ownerOnly } from "./private_files.ts";
import { writes } from "./statement_kind.ts";
import { diskFull } from "../errors.ts";
import { bindable, settle } from "./sqlite_params.ts";
import {
  busyError,
  FULL_REPORTED_MS,
  groupLost,
  noSpace,
  staleSchema,
} from "./sqlite_errors.ts";

export { sqliteDialect } from "./sqlite_dialect.ts";

/**
 * The storages of this isolate by file: two on one file (two apps of one
 * process) must not wait in SQLite's busy handler for each other, since the
 * one holding the lock cannot run meanwhile (see `#neighbourHolding`).
 */
const byFile = new Map<string, Set<SqliteStorage>>();

/** A cached statement and its result column names. */
interface Prepared {
  st: StatementSync;
  /** Builds a row object from the statement's values (see shapes.ts). */
  make: RowMaker;
  /** The statement changes data (a write must commit before it is answered). */
  writes: boolean;
}

/** Writes waiting for the commit of the group they ran in. */
interface Group {
  waiting: { ok: () => void; fail: (err: unknown) => void }[];
  /** Its tick has come: it commits as soon as no transaction runs in it. */
  due: boolean;
}

/**
 * Storage on a SQLite file (or `:memory:`).
 *
 * Writes are committed in groups. The first write of a turn of the event
 * loop commits on its own; later writes of the same turn (transactions as
 * savepoints) share one transaction, committed when the turn ends (lean
 * transactions, see `leanTransaction`, always join it). A write's promise
 * settles only after its commit, so a write is durable before it is
 * acknowledged, and a failed statement or transaction undoes only itself.
 * One commit per group instead of one per write: an autocommit INSERT costs
 * ~64 µs, a grouped one ~26 µs. (Reads on this connection see grouped writes
 * before they commit.)
 */
export class SqliteStorage implements Storage {
  readonly dialect = sqliteDialect;
  #db: DatabaseSync;
  #cache = new Map<string, Prepared>();
  #tail: Promise<void> = Promise.resolve();
  #active: Promise<void> | undefined;
  #direct: Queryable;
  #group: Group | undefined;
  #turn = false;
  /** This turn's read transaction is open (see `#snapshot`). */
  #reading = false;
  readonly #endReading = () => this.#endRead();
  /** The running transaction has run a write statement. */
  #wrote = false;
  /** A write failed for lack of space, and none has succeeded since. */
  #full = false;
  #fullAt = 0;
  readonly #file: string;

  /** Opens (creating if needed) the database file at `path`. */
  constructor(path: string) {
    this.#file = path;
    try {
      ownerOnly(path);
      this.#db = new DatabaseSync(path);
      this.#db.exec("PRAGMA journal_mode=WAL");
      this.#db.exec("PRAGMA synchronous=NORMAL");
      this.#db.exec("PRAGMA busy_timeout=5000");
      this.#db.exec("PRAGMA foreign_keys=ON");
      this.#db.exec("PRAGMA journal_size_limit=67108864");
    } catch (err) {
      throw new StorageUnavailableError(
        `Cannot open SQLite database ${path}: ${
          err instanceof Error ? err.message : err
        }`,
      );
    }
    this.#direct = {
      // Failures reject (never throw), as on the storage itself.
      query: (sql, params) => settle(() => this.#txAll(sql, params)),
      run: (sql, params) =>
        settle(() => {
          const n = this.#run(sql, params);
          this.#wrote = true;
          return n;
        }),
      exec: (sql) => {
        try {
          this.#db.exec(sql);
        } catch (err) {
          return Promise.reject(err);
        }
        this.#wrote = true;
        // DDL: cached statements (and their row builders) may be stale.
        this.#cache.clear();
        return Promise.resolve();
      },
      columns: (sql) => this.columns(sql),
    };
    if (path !== ":memory:" && path !== "") {
      const set = byFile.get(path) ?? new Set();
      set.add(this);
      byFile.set(path, set);
    }
  }

  /**
   * Before taking the write lock: another storage of this isolate on the
   * same file commits its write group now (its turn would end only after
   * this thread waited out SQLite's busy timeout); one running a transaction
   * is returned, to be waited for.
   */
  /**
   * After a commit: the other storages of this isolate on the same file end
   * their read transactions, so that what runs after the commit in this
   * thread reads it (a snapshot of the turn would predate it).
   */
  #committed(): void {
    const set = byFile.get(this.#file);
    if (!set || set.size < 2) return;
    for (const other of set) if (other !== this) other.#endRead();
  }

  #neighbourHolding(): SqliteStorage | undefined {
    const set = byFile.get(this.#file);
    if (!set || set.size < 2) return undefined;
    for (const other of set) {
      if (other === this) continue;
      if (other.#active) return other;
      // (Its read transaction does not hold a writer back: WAL.)
      if (other.#group) other.#commit(other.#group);
    }
    return undefined;
  }

  /** Result columns of `sql` with their origin table and column (prepared, not run). */
  columns(sql: string): Promise<ColumnOrigin[]> {
    try {
      return Promise.resolve(
        this.#db.prepare(sql).columns().map((c) => ({
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

  #stmt(sql: string): Prepared {
    let s = this.#cache.get(sql);
    if (!s) {
      if (this.#cache.size > 2000) this.#cache.clear();
      const st = this.#db.prepare(sql);
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

  /** A statement of the open transaction (a write marks it as having written). */
  #txAll(sql: string, params: readonly SqlValue[] = []): Row[] {
    try {
      const prepared = this.#stmt(sql);
      const rows = this.#rows(prepared, params);
      if (prepared.writes) this.#wrote = true;
      return rows;
    } catch (err) {
      throw this.#error(err);
    }
  }

  #all(sql: string, params: readonly SqlValue[] = []): Row[] {
    try {
      return this.#allRaw(sql, params);
    } catch (err) {
      throw this.#error(err);
    }
  }

  /**
   * Maps a SQLite error: a full disk (507, remembered for health), a stale
   * schema (409), a write lock held past the busy timeout (503).
   */
  #error(err: unknown): unknown {
    if (!noSpace(err)) return busyError(err) ?? staleSchema(err);
    this.#full = true;
    this.#fullAt = Date.now();
    return diskFull();
  }

  #allRaw(sql: string, params: readonly SqlValue[] = []): Row[] {
    return this.#rows(this.#stmt(sql), params);
  }

  #rows({ st, make }: Prepared, params: readonly SqlValue[] = []): Row[] {
    const arrays = st.all(...bindable(params)) as unknown as unknown[][];
    const rows: Row[] = new Array(arrays.length);
    for (let r = 0; r < arrays.length; r++) rows[r] = make(arrays[r]);
    return rows;
  }

  #run(sql: string, params: readonly SqlValue[] = []): number {
    try {
      return this.#runRaw(sql, params);
    } catch (err) {
      throw this.#error(err);
    }
  }

  #runRaw(sql: string, params: readonly SqlValue[] = []): number {
    return Number(this.#stmt(sql).st.run(...bindable(params)).changes);
  }

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    let prepared: Prepared;
    try {
      prepared = this.#stmt(sql);
    } catch (err) {
      return Promise.reject(this.#error(err));
    }
    // A write (… RETURNING) commits like `run`.
    if (prepared.writes) return this.#write(() => this.#all(sql, params));
    if (this.#active) return this.#later(() => this.#all(sql, params));
    // No transaction open: answer at once (no extra async frame per read),
    // with the statement just looked up, in this turn's read transaction.
    try {
      this.#snapshot();
      return Promise.resolve(this.#rows(prepared, params));
    } catch (err) {
      this.#failed();
      return Promise.reject(this.#error(err));
    }
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.#write(() => this.#run(sql, params));
  }

  /**
   * Opens this turn's read transaction, unless a transaction is open (the
   * write group's, which reads share). Outside a transaction each read takes
   * and drops SQLite's shared lock: two `fcntl` and an `fstat`, ~3 µs on a
   * VM, where a read in a transaction costs ~1 µs. The turn's reads share
   * the lock and one snapshot; it ends when the turn does (`setImmediate`,
   * like the write group) or before any write, so a request never reads
   * older data than was committed when its turn began, and a write never
   * waits on it. Reads of another connection's commit made during the turn
   * wait for the next turn, as a request arriving a moment earlier would.
   */
  #snapshot(): void {
    if (this.#reading || this.#db.isTransaction) return;
    try {
      this.#stmt("BEGIN").st.run();
    } catch {
      return; // the read runs on its own
    }
    this.#reading = true;
    setImmediate(this.#endReading);
  }

  /**
   * Ends this turn's read transaction now: the next read sees every commit
   * made so far, another connection's included. For reading what another
   * isolate announced after its commit (a shared counter, a message): this
   * turn's snapshot may be older than that commit, and a reader that counts
   * itself caught up after reading it would stay behind.
   */
  fresh(): void {
    this.#endRead();
  }

  /** Ends this turn's read transaction (before a write, or with the turn). */
  #endRead(): void {
    if (!this.#reading) return;
    this.#reading = false;
    try {
      if (this.#db.isTransaction) this.#stmt("COMMIT").st.run();
    } catch {
      try {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      } catch { /* the connection reports the next error itself */ }
    }
  }

  /** Runs a write: alone when it is the turn's first, else in the write group. */
  #write<T>(statement: () => T): Promise<T> {
    if (this.#active) return this.#later(() => this.#write(statement));
    const holder = this.#neighbourHolding();
    if (holder) {
      return holder.#later(() => undefined).then(() => this.#write(statement));
    }
    this.#endRead();
    if (!this.#group && !this.#turn) {
      // The first write of this turn commits on its own, answered at once.
      this.#startTurn();
      try {
        const out = statement();
        this.#full = false;
        this.#committed();
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
      this.#failed();
      return Promise.reject(this.#error(err));
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
    this.#turn = true;
    setImmediate(() => {
      this.#turn = false;
      const group = this.#group;
      if (!group) return;
      group.due = true;
      // With a transaction running, it commits the group when it ends.
      if (!this.#active) this.#commit(group);
    });
  }

  /** The open write group (opened here, committed at the end of the turn). */
  #join(): Group {
    this.#failed(); // a group SQLite rolled back is not joined
    if (this.#group) return this.#group;
    if (!this.#turn) this.#startTurn();
    this.#db.exec("BEGIN IMMEDIATE");
    const group: Group = { waiting: [], due: false };
    this.#group = group;
    return group;
  }

  /** Commits `group` and settles its writes (no transaction may be running). */
  #commit(group: Group): void {
    if (this.#group !== group) return;
    if (!this.#db.isTransaction) return this.#lose(group);
    try {
      this.#db.exec("COMMIT");
      this.#full = false;
    } catch (err) {
      this.#error(err); // remembers a full disk for health and for the group
      try {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      } catch { /* the connection reports the next error itself */ }
      return this.#lose(group);
    }
    this.#group = undefined;
    this.#committed();
    for (const w of group.waiting) w.ok();
  }

  /**
   * After a failed statement: when SQLite rolled the whole transaction back
   * (not just the statement), every other write of the group is lost (the
   * failing statement keeps its own error).
   */
  #failed(): void {
    if (this.#group && !this.#db.isTransaction) this.#lose(this.#group);
  }

  /** Tells every write of a group that was not committed: 507 when the disk was full, else 503. */
  #lose(group: Group): void {
    this.#group = undefined;
    this.#cache.clear();
    const why = this.#full ? diskFull : groupLost;
    for (const w of group.waiting) w.fail(why());
  }

  /** Runs `fn` once no transaction is open. */
  async #later<T>(fn: () => T | Promise<T>): Promise<T> {
    while (this.#active) await this.#active;
    return await fn();
  }

  async exec(sql: string): Promise<void> {
    while (this.#active) await this.#active;
    // Statements outside any transaction (DDL, pragmas): commit the group first.
    this.#endRead();
    if (this.#group) this.#commit(this.#group);
    try {
      this.#db.exec(sql);
    } catch (err) {
      throw busyError(err) ?? err; // other failures stay the driver's own
    }
    this.#cache.clear();
  }

  /**
   * Runs `fn` in a transaction: on its own when it is the turn's first write,
   * else as a savepoint of the write group (settling after the commit).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#transaction(fn, false);
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
    return this.#transaction(fn, true);
  }

  async #transaction<T>(
    fn: (tx: Queryable) => Promise<T>,
    lean: boolean,
  ): Promise<T> {
    const prev = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => release = r);
    this.#tail = mine;
    await prev;
    for (;;) {
      while (this.#active) await this.#active;
      const holder = this.#neighbourHolding();
      if (!holder) break;
      await holder.#later(() => undefined);
    }
    this.#active = mine;
    this.#endRead();
    const alone = !lean && !this.#group && !this.#turn;
    const savepoint = !alone && !lean;
    this.#wrote = false;
    let out: T, committed: Promise<void> | undefined;
    try {
      const group = alone ? undefined : this.#join();
      if (alone) {
        this.#startTurn();
        this.#db.exec("BEGIN IMMEDIATE");
      } else if (savepoint) this.#db.exec("SAVEPOINT mb_tx");
      try {
        out = await fn(this.#direct);
        if (alone) {
          this.#db.exec("COMMIT");
          this.#full = false;
          this.#committed();
        } else if (savepoint) this.#db.exec("RELEASE mb_tx");
      } catch (err) {
        if (this.#db.isTransaction) {
          if (alone) this.#db.exec("ROLLBACK");
          else if (savepoint) {
            this.#db.exec("ROLLBACK TO mb_tx");
            this.#db.exec("RELEASE mb_tx");
          } // Lean, after a write: the group is lost (`#failed` below).
          else if (this.#wrote) this.#db.exec("ROLLBACK");
        }
        this.#cache.clear();
        throw err;
      }
      if (group) {
        committed = new Promise((ok, fail) => group.waiting.push({ ok, fail }));
      }
    } catch (err) {
      if (!alone) this.#failed();
      throw this.#error(err);
    } finally {
      this.#active = undefined;
      release();
      // A group whose turn ended while this ran commits now, before the next
      // transaction can join it: a stream of transactions never delays it.
      if (this.#group?.due) this.#commit(this.#group);
    }
    await committed;
    return out;
  }

  async ping(): Promise<void> {
    await this.query("SELECT 1 AS ok");
  }

  stateNow(): DatabaseState | undefined {
    if (this.#active) return undefined;
    try {
      this.#rows(this.#stmt("SELECT 1 AS ok"), []);
    } catch {
      this.#failed();
      return "unavailable";
    }
    return this.#answered();
  }

  async state(): Promise<DatabaseState> {
    const now = this.stateNow();
    if (now) return now;
    try {
      await this.ping();
    } catch {
      return "unavailable";
    }
    return this.#answered();
  }

  /** The state of a database that answered: full while writes fail for space. */
  #answered(): DatabaseState {
    const full = this.#full && Date.now() - this.#fullAt < FULL_REPORTED_MS;
    return full ? "full" : "ok";
  }

  async close(): Promise<void> {
    while (this.#active) await this.#active;
    const set = byFile.get(this.#file);
    set?.delete(this);
    if (set?.size === 0) byFile.delete(this.#file);
    this.#endRead();
    if (this.#group) this.#commit(this.#group);
    this.#cache.clear();
    if (this.#db.isOpen) {
      try {
        // Best effort, without waiting: a reader of another connection in
        // this thread (its turn's read transaction) could not end meanwhile.
        this.#db.exec("PRAGMA busy_timeout=0");
        this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch { /* best effort */ }
      this.#db.close();
    }
  }
}
