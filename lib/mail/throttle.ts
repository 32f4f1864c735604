/**
 * At most one mail per address and purpose per window (2 minutes), shared
 * by every instance through `mb_mail_throttle`. A request inside the window
 * is answered as any other (silently: no error tells a caller that a mail
 * went out a moment ago) and sends nothing. The one throttle of every
 * account mail: sign-in codes (lib/auth/otp.ts) and the mailed links of
 * verification, password reset and email change (lib/auth/account_mail.ts).
 * The row keeps a `ref`, the handle the first request answered with (an
 * `otp_id`; "" for a link), so the later ones can answer the same handle.
 *
 * @module
 */

import type { Queryable, Storage } from "../db/storage.ts";

/** Milliseconds between two mails of one purpose to one address. */
export const MAIL_WINDOW_MS = 120_000;

/** The throttle's table. */
export const THROTTLE_TABLE = "mb_mail_throttle";

/** The key of an address and purpose (`entity` keeps auth entities apart). */
export function throttleKey(
  entity: string,
  purpose: string,
  email: string,
): string {
  return `${entity}/${purpose}/${email.toLowerCase()}`;
}

/**
 * Claims the window of `key` for `ref`: true when no mail went out within
 * `MAIL_WINDOW_MS` (the caller sends one), false when one did (the caller
 * sends none and may answer `held(key)`). Atomic on both databases: of two
 * concurrent claims one wins (PostgreSQL waits for the other's row).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { claimWindow, ensureThrottleTable, heldRef } from "moonbase/lib/mail/throttle.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureThrottleTable(db);
 * assert.equal(await claimWindow(db, "k", "a", 1_000), true);
 * assert.equal(await claimWindow(db, "k", "b", 2_000), false);
 * assert.equal(await heldRef(db, "k", 2_000), "a");
 * assert.equal(await claimWindow(db, "k", "c", 1_000 + 120_000), true);
 * await db.close();
 * ```
 */
export async function claimWindow(
  q: Queryable,
  key: string,
  ref: string,
  now: number,
): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO "${THROTTLE_TABLE}" ("key", "until", "ref") VALUES (?, ?, ?)
     ON CONFLICT ("key") DO UPDATE SET "until" = excluded."until", "ref" = excluded."ref"
     WHERE "${THROTTLE_TABLE}"."until" <= ?
     RETURNING "ref"`,
    [key.slice(0, 400), now + MAIL_WINDOW_MS, ref, now],
  );
  return rows.length > 0;
}

/** The `ref` of the window `key` is in at `now` ("" when none). */
export async function heldRef(
  q: Queryable,
  key: string,
  now: number,
): Promise<string> {
  const rows = await q.query(
    `SELECT "ref" FROM "${THROTTLE_TABLE}" WHERE "key" = ? AND "until" > ?`,
    [key.slice(0, 400), now],
  );
  return rows.length > 0 ? String(rows[0].ref) : "";
}

/** Removes windows that ended before `now`. */
export async function pruneWindows(q: Queryable, now: number): Promise<void> {
  await q.run(`DELETE FROM "${THROTTLE_TABLE}" WHERE "until" <= ?`, [now]);
}

/** Creates the throttle's table when missing (idempotent). */
export async function ensureThrottleTable(store: Storage): Promise<void> {
  const text = store.dialect.columnType("text");
  const int = store.dialect.columnType("int");
  await store.exec(
    `CREATE TABLE IF NOT EXISTS "${THROTTLE_TABLE}" ("key" ${text} PRIMARY KEY, "until" ${int} NOT NULL, "ref" ${text} NOT NULL)`,
  );
  await store.exec(
    `CREATE INDEX IF NOT EXISTS "${THROTTLE_TABLE}_until" ON "${THROTTLE_TABLE}" ("until")`,
  );
}
