/**
 * The sign-in rows a user leaves in system tables: TOTP enrolments
 * (`mb_totp`), mailed codes (`mb_otps`), pending second factors (`mb_mfas`)
 * and mailed links (`mb_account_tokens`). They go with the user: a deleted
 * record's rows (and, when an auth entity is dropped, all of its rows) are
 * removed, so no sealed secret or live code of a former user stays behind.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";

/** The tables holding rows keyed by `entity_id` and `user_id`. */
export const USER_ROW_TABLES: readonly string[] = [
  "mb_totp",
  "mb_otps",
  "mb_mfas",
  "mb_account_tokens",
];

/**
 * Removes the rows of user `userId` of the entity `entityId`, or with no
 * `userId` every row of the entity (it was dropped). Nobody else's rows.
 */
export async function forgetUserRows(
  q: Queryable,
  entityId: string,
  userId?: string,
): Promise<void> {
  for (const table of USER_ROW_TABLES) {
    if (userId === undefined) {
      await q.run(`DELETE FROM "${table}" WHERE "entity_id" = ?`, [entityId]);
    } else {
      await q.run(
        `DELETE FROM "${table}" WHERE "entity_id" = ? AND "user_id" = ?`,
        [entityId, userId],
      );
    }
  }
}
