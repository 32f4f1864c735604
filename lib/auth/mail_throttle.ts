/**
 * At most one account mail per entity, purpose and address in
 * `MAIL_INTERVAL_MS` (`mb_account_mail`, made by account_tokens.ts): a
 * mailbox cannot be flooded through the request routes, and the request
 * answers the same whether a mail went or not.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";

/** The shortest time between two mails of one purpose to one address. */
export const MAIL_INTERVAL_MS = 120_000;

/**
 * Takes the address's slot for the purpose: true when no mail of it went
 * in the last `MAIL_INTERVAL_MS` (then the caller sends one), false when one
 * did. Atomic: of two racing requests one gets the slot.
 */
export async function takeMailSlot(
  q: Queryable,
  key: { entityId: string; purpose: string; email: string },
  now: number,
): Promise<boolean> {
  const k = `${key.entityId}:${key.purpose}:${key.email}`.slice(0, 400);
  const rows = await q.query(
    `INSERT INTO "mb_account_mail" ("key", "sent") VALUES (?, ?)
     ON CONFLICT ("key") DO UPDATE SET "sent" = excluded."sent"
     WHERE "mb_account_mail"."sent" <= ?
     RETURNING "key"`,
    [k, now, now - MAIL_INTERVAL_MS],
  );
  return rows.length > 0;
}

/** Drops slots older than the interval (they no longer hold anything back). */
export async function pruneMailSlots(q: Queryable, now: number): Promise<void> {
  await q.run(`DELETE FROM "mb_account_mail" WHERE "sent" <= ?`, [
    now - MAIL_INTERVAL_MS,
  ]);
}
