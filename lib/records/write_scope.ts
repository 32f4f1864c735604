/**
 * The write a before-hook runs in. While the hooks of a write run, record
 * operations and SQL of the same app (`app.entities`, `app.db`) join that
 * write's transaction instead of waiting for it to end (on SQLite they
 * would wait forever: the transaction waits for the hook; on PostgreSQL
 * they would run outside it and not roll back with it). What such a nested
 * operation does after its own commit — its after-hooks, removing files,
 * ending sessions — waits for the outer write's commit, and is dropped if
 * that write fails.
 *
 * The scope is carried by the async context (AsyncLocalStorage), so it
 * follows the hooks through their awaits; it closes when they return (work
 * they leave running does not join a transaction that is over), and names
 * the storage it belongs to, so another app's operations never join it.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { Pipelined, Queryable, SqlValue, Storage } from "../db/storage.ts";

/**
 * The first statement sent by `WriteScope.send` that failed: the batch's
 * request that sent it (undefined: the batch itself) and the error to
 * report.
 */
export interface SentFailure {
  readonly step: number | undefined;
  readonly error: unknown;
}

/** One write's scope. */
export class WriteScope {
  /** The app's storage the write runs on. */
  readonly base: Storage;
  #tx: Queryable | undefined;
  #open = false;
  #deferred: (() => Promise<void>)[] = [];
  #savepoints = 0;
  readonly #partial: boolean;
  /** Statements sent without waiting (`send`), each settling to its failure. */
  #sent: Promise<SentFailure | undefined>[] = [];
  #failure: SentFailure | undefined;
  #unanswered = 0;
  /**
   * The batch's request running now: what `send` counts a statement's
   * failure against.
   */
  step: number | undefined;

  /**
   * `partial` (default true): each statement and transaction joined is a
   * savepoint, so a failure caught inside undoes that part only. A batch
   * passes false: any failure fails all of it, so its writes run straight
   * in its transaction (two statements fewer a write), and on PostgreSQL
   * the joined storage can `pipeline` (see `send`).
   */
  constructor(base: Storage, partial = true) {
    this.base = base;
    this.#partial = partial;
  }

  /**
   * Whether statements may be sent without waiting (`send`): all or
   * nothing (a batch), on PostgreSQL, whose driver sends statements in
   * order on the transaction's connection, so each runs after those sent
   * before it and sees them. (SQLite runs a statement at once anyway.)
   */
  get pipelines(): boolean {
    return !this.#partial && this.base.dialect.name === "postgres";
  }

  /**
   * Sends `sql` on the open transaction without waiting for its answer
   * (only where `pipelines`); `then` gets it later. Its failure fails the
   * whole write: `settle` reports the first, with the `step` that sent it.
   */
  send(
    sql: string,
    params: readonly SqlValue[],
    then: Pipelined,
    step: number | undefined = this.step,
  ): void {
    const tx = this.#tx;
    if (!this.pipelines || !this.#open || !tx) {
      throw new Error("Cannot pipeline a statement outside a batch");
    }
    this.#unanswered++;
    this.#sent.push(
      tx.query(sql, params).finally(() => this.#unanswered--).then(
        (rows) => {
          then.done(rows);
          return undefined;
        },
        (err) => ({ step, error: then.failed(err) }),
      ).catch((error) => ({ step, error })),
    );
  }

  /** Whether a statement sent (`send`) has not been answered yet. */
  get unanswered(): boolean {
    return this.#unanswered > 0;
  }

  /**
   * Waits for every statement sent so far (`send`): the first that failed,
   * in the order they were sent (it stays the answer: the statements after
   * it failed with it), or undefined.
   */
  async settle(): Promise<SentFailure | undefined> {
    while (this.#sent.length > 0) {
      const sent = this.#sent;
      this.#sent = [];
      for (const outcome of sent) this.#failure ??= await outcome;
    }
    return this.#failure;
  }

  /** Runs `fn` (the hooks) inside the transaction `tx`; the scope closes after. */
  async run<T>(tx: Queryable, fn: () => Promise<T>): Promise<T> {
    this.#tx = tx;
    this.#open = true;
    try {
      return await scope.run(this, fn);
    } finally {
      this.#open = false;
    }
  }

  /** Queues work for after the outer write commits. */
  defer(fn: () => Promise<void>): void {
    this.#deferred.push(fn);
  }

  /** Runs the queued work (the outer write committed). */
  async flush(): Promise<void> {
    const jobs = this.#deferred;
    this.#deferred = [];
    for (const job of jobs) await job();
  }

  /** The storage a nested operation uses: statements join the write. */
  joined(): Storage | undefined {
    const tx = this.#tx;
    if (!this.#open || !tx) return undefined;
    const base = this.base;
    // Each nested statement and transaction is a savepoint: a failure a hook
    // catches undoes that part only (PostgreSQL would otherwise fail the
    // whole write).
    const savepoint = async <T>(
      fn: (q: Queryable) => Promise<T>,
    ): Promise<T> => {
      if (!this.#partial) return await fn(tx);
      if (tx.savepoint) return await tx.savepoint(fn);
      const name = `mb_nested_${++this.#savepoints}`;
      await tx.run(`SAVEPOINT ${name}`);
      try {
        const out = await fn(tx);
        await tx.run(`RELEASE SAVEPOINT ${name}`);
        return out;
      } catch (err) {
        await tx.run(`ROLLBACK TO SAVEPOINT ${name}`);
        await tx.run(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
    };
    const pipeline = this.pipelines
      ? (sql: string, params: readonly SqlValue[], then: Pipelined) =>
        this.send(sql, params, then)
      : undefined;
    return {
      dialect: base.dialect,
      ...(pipeline && { pipeline }),
      query: (sql, params) => savepoint((q) => q.query(sql, params)),
      run: (sql, params) => savepoint((q) => q.run(sql, params)),
      exec: (sql) => savepoint((q) => q.exec(sql)),
      transaction: (fn) => savepoint(fn),
      // Inside a write, its own transaction is the consistent view.
      snapshot: (fn) => savepoint(fn),
      ping: () => base.ping(),
      state: () => base.state(),
      close: () =>
        Promise.reject(new Error("Cannot close the database inside a hook")),
    };
  }
}

const scope = new AsyncLocalStorage<WriteScope>();

/** The open scope of a write on `base` this code runs in, if any. */
export function openScope(base: Storage): WriteScope | undefined {
  const s = scope.getStore();
  return s && s.base === base && s.joined() ? s : undefined;
}

/**
 * `base`, or — inside the before-hooks of a write on `base` — a storage
 * whose statements and transactions join that write.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { current, WriteScope } from "moonbase/lib/records/write_scope.ts";
 * const db = new SqliteStorage(":memory:");
 * assert.equal(current(db), db);
 * const w = new WriteScope(db);
 * await db.transaction((tx) =>
 *   w.run(tx, async () => {
 *     assert.notEqual(current(db), db);
 *     assert.deepEqual(await current(db).query("SELECT 1 AS one"), [{ one: 1 }]);
 *   })
 * );
 * assert.equal(current(db), db);
 * await db.close();
 * ```
 */
export function current(base: Storage): Storage {
  const s = scope.getStore();
  if (!s || s.base !== base) return base;
  return s.joined() ?? base;
}
