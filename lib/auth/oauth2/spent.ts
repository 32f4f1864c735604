/**
 * Single use of a sign-in attempt: the id of each code verifier that
 * `login-oauth2` opened is written to `mb_oauth2_spent` before its code is
 * exchanged, and kept until the verifier expires. The second use of the
 * same verifier (a replayed request, a replayed code with it, two racing
 * requests) finds the row and is refused, on every instance of the
 * database. Expired rows are deleted as new ones come (at most one
 * sign-in's worth of work each time).
 *
 * @module
 */

import type { Storage } from "../../db/storage.ts";

/**
 * Records `id` as used until `expires` (Unix seconds). True for the first
 * use only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * import { spendFlow } from "moonbase/lib/auth/oauth2/spent.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * assert.equal(await spendFlow(db, "ab", 2e9, 1e9), true);
 * assert.equal(await spendFlow(db, "ab", 2e9, 1e9), false);
 * await db.close();
 * ```
 */
export async function spendFlow(
  store: Storage,
  id: string,
  expires: number,
  nowS: number,
): Promise<boolean> {
  const first = await store.run(
    `INSERT INTO "mb_oauth2_spent" ("id", "expires") VALUES (?, ?) ON CONFLICT ("id") DO NOTHING`,
    [id, expires],
  ) > 0;
  // Rows past their verifier's expiry guard nothing: the verifier no longer
  // opens. Bounded by the index and by the login rate limit.
  await store.run(
    `DELETE FROM "mb_oauth2_spent" WHERE "expires" < ?`,
    [Math.floor(nowS) - 60],
  );
  return first;
}
