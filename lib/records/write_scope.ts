/**
 * The write a before-hook runs in. While hooks run, record operations and
 * SQL of the same app (`app.entities`, `app.db`) join that write's
 * transaction instead of waiting for it to end: on SQLite they would wait
 * forever (the transaction waits for the hook), on PostgreSQL they would run
 * outside it and not roll back with it.
 *
 * The scope is carried by the async context (AsyncLocalStorage), so it
 * follows the hook through its awaits and nowhere else; it names the storage
 * it belongs to, so another app's operations never join it.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { Queryable, Storage } from "../db/storage.ts";

interface Scope {
  /** The app's storage the transaction runs on. */
  base: Storage;
  /** The transaction. */
  tx: Queryable;
}

const scope = new AsyncLocalStorage<Scope>();

/** Runs `fn` (the before-hooks) inside the write `tx` of `base`. */
export function inWrite<T>(base: Storage, tx: Queryable, fn: () => T): T {
  return scope.run({ base, tx }, fn);
}

/**
 * `base`, or — inside a before-hook of a write on `base` — a storage whose
 * statements and transactions join that write.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { current, inWrite } from "moonbase/lib/records/write_scope.ts";
 * const db = new SqliteStorage(":memory:");
 * assert.equal(current(db), db);
 * await db.transaction((tx) =>
 *   inWrite(db, tx, async () => {
 *     assert.notEqual(current(db), db);
 *     assert.deepEqual(await current(db).query("SELECT 1 AS one"), [{ one: 1 }]);
 *   })
 * );
 * await db.close();
 * ```
 */
export function current(base: Storage): Storage {
  const s = scope.getStore();
  if (!s || s.base !== base) return base;
  const tx = s.tx;
  return {
    dialect: base.dialect,
    query: (sql, params) => tx.query(sql, params),
    run: (sql, params) => tx.run(sql, params),
    exec: (sql) => tx.exec(sql),
    // Nested: part of the write (a failure fails the whole write).
    transaction: (fn) => fn(tx),
    ping: () => base.ping(),
    state: () => base.state(),
    close: () =>
      Promise.reject(new Error("Cannot close the database inside a hook")),
  };
}
