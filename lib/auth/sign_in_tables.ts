/**
 * The system tables of sign-in by code and the second factor:
 * `mb_otps` (mailed sign-in codes, as hashes: otp.ts), `mb_mfas` (first
 * logins waiting for a second: mfa.ts), `mb_totp` (TOTP enrolments, the
 * secret sealed, with the last step used: totp_enrollment.ts), and the mail
 * throttle's `mb_mail_throttle` (lib/mail/throttle.ts: the one throttle of
 * every account mail, codes and links alike).
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { ensureThrottleTable } from "../mail/throttle.ts";

/** Creates the tables when missing (idempotent; concurrent starts on one PostgreSQL are retried). */
export async function ensureSignInTables(store: Storage): Promise<void> {
  const text = store.dialect.columnType("text");
  const int = store.dialect.columnType("int");
  const stmts = [
    `CREATE TABLE IF NOT EXISTS "mb_otps" ("id" ${text} PRIMARY KEY, "entity_id" ${text} NOT NULL, "user_id" ${text} NOT NULL, "email" ${text} NOT NULL, "code_hash" ${text} NOT NULL, "attempts" ${int} NOT NULL, "expires" ${int} NOT NULL, "created" ${int} NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "mb_otps_expires" ON "mb_otps" ("expires")`,
    `CREATE TABLE IF NOT EXISTS "mb_mfas" ("id" ${text} PRIMARY KEY, "entity_id" ${text} NOT NULL, "user_id" ${text} NOT NULL, "method" ${text} NOT NULL, "gen" ${int} NOT NULL, "attempts" ${int} NOT NULL, "expires" ${int} NOT NULL, "created" ${int} NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "mb_mfas_expires" ON "mb_mfas" ("expires")`,
    `CREATE TABLE IF NOT EXISTS "mb_totp" ("entity_id" ${text} NOT NULL, "user_id" ${text} NOT NULL, "secret" ${text} NOT NULL, "enrolled" ${int} NOT NULL, "last_step" ${int} NOT NULL, "created" ${int} NOT NULL, PRIMARY KEY ("entity_id", "user_id"))`,
  ];
  for (let attempt = 0;; attempt++) {
    try {
      await store.transaction(async (tx) => {
        for (const s of stmts) await tx.exec(s);
      });
      await ensureThrottleTable(store);
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}
