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
import type { Queryable, Storage } from "../db/storage.ts";

/** One write's scope. */
export class WriteScope {
  /** The app's storage the write runs on. */
  readonly base: Storage;
  #tx: Queryable | undefined;
  #open = false;
  #deferred: (() => Promise<void>)[] = [];
  #savepoints = 0;
  readonly #partial: boolean;

  /**
   * `partial` (default true): each statement and transaction joined is a
   * savepoint, so a failure caught inside undoes that part only. A batch
   * passes false: any failure fails all of it, so its writes run straight
   * in its transaction (two statements fewer a write).
   */
  constructor(base: Storage, partial = true) {
    this.base = base;
    this.#partial = partial;
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
    return {
      dialect: base.dialect,
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
