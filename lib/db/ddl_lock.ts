/**
 * Start-up DDL on PostgreSQL (the ALTERs an upgraded instance runs on the
 * system tables) waits a bounded time for its locks: an ALTER that waits
 * for a session holding the table would hold up the start for as long, and
 * every statement of the running instances on that table would queue
 * behind it. Past `DDL_LOCK_TIMEOUT_MS` the statement fails, and the start
 * fails saying which table is held and what to do (SQLite: one writer at a
 * time, `busy_timeout` bounds the wait already).
 *
 * @module
 */

import type { Queryable, Storage } from "./storage.ts";

/** How long a start-up ALTER waits for its table's lock (PostgreSQL). */
export const DDL_LOCK_TIMEOUT_MS = 5000;

/**
 * Runs `fn` in a transaction whose statements wait at most `ms` for a lock
 * (PostgreSQL: `SET LOCAL lock_timeout`); a lock not granted in time fails
 * with "Cannot start: <table> …" naming the table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { boundedDdl } from "moonbase/lib/db/ddl_lock.ts";
 * const db = new SqliteStorage(":memory:");
 * await boundedDdl(db, "t", (tx) => tx.exec(`CREATE TABLE "t" ("a" TEXT)`));
 * assert.deepEqual(await db.query(`SELECT COUNT(*) AS "n" FROM "t"`), [{ n: 0 }]);
 * await db.close();
 * ```
 */
export async function boundedDdl<T>(
  store: Storage,
  table: string,
  fn: (tx: Queryable) => Promise<T>,
  ms = DDL_LOCK_TIMEOUT_MS,
): Promise<T> {
  const pg = store.dialect.name === "postgres";
  try {
    return await store.transaction(async (tx) => {
      if (pg) await tx.exec(`SET LOCAL lock_timeout = ${Math.trunc(ms)}`);
      return await fn(tx);
    });
  } catch (err) {
    if (pg && lockTimedOut(err)) {
      throw new Error(
        `Cannot start: another session holds a lock on ${table} (waited ${
          Math.trunc(ms)
        } ms to alter it); end that session (see pg_locks and pg_stat_activity) or start again`,
      );
    }
    throw err;
  }
}

/** True when `err` is PostgreSQL's lock_timeout (55P03). */
export function lockTimedOut(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "55P03" || /lock timeout/i.test(String(err));
}
