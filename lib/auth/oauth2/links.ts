/**
 * Links between a provider's identity and a user (`mb_oauth2_links`): one
 * row per entity, issuer and subject (the provider's stable user id), so a
 * later sign-in finds its user by who the provider says it is, even after
 * the email changed on either side. Keyed by issuer, not by the provider's
 * name in the schema: renaming a provider keeps its links, and pointing a
 * name at another issuer does not hand that issuer the old links.
 *
 * @module
 */

import type { Storage } from "../../db/storage.ts";

/** The key of a link. */
export interface LinkKey {
  entityId: string;
  issuer: string;
  subject: string;
}

/** The user linked to an identity, if any. */
export async function linkedUser(
  store: Storage,
  key: LinkKey,
): Promise<string | undefined> {
  const rows = await store.query(
    `SELECT "user_id" FROM "mb_oauth2_links" WHERE "entity_id" = ? AND "issuer" = ? AND "subject" = ?`,
    [key.entityId, key.issuer, key.subject],
  );
  return rows.length > 0 ? String(rows[0].user_id) : undefined;
}

/**
 * Links an identity to a user (a link already there is kept: the first
 * of two racing sign-ins wins). Returns the user now linked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * import { link, linkedUser } from "moonbase/lib/auth/oauth2/links.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * const key = { entityId: "e", issuer: "https://id.example", subject: "42" };
 * assert.equal(await link(db, key, "google", "u1", 1), "u1");
 * assert.equal(await link(db, key, "google", "u2", 2), "u1");
 * assert.equal(await linkedUser(db, key), "u1");
 * await db.close();
 * ```
 */
export async function link(
  store: Storage,
  key: LinkKey,
  provider: string,
  userId: string,
  nowS: number,
): Promise<string> {
  await store.run(
    `INSERT INTO "mb_oauth2_links" ("entity_id", "issuer", "subject", "provider", "user_id", "created", "last_login") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT ("entity_id", "issuer", "subject") DO NOTHING`,
    [key.entityId, key.issuer, key.subject, provider, userId, nowS, nowS],
  );
  return (await linkedUser(store, key)) ?? userId;
}

/** Notes a sign-in through a link. */
export async function touchLink(
  store: Storage,
  key: LinkKey,
  nowS: number,
): Promise<void> {
  await store.run(
    `UPDATE "mb_oauth2_links" SET "last_login" = ? WHERE "entity_id" = ? AND "issuer" = ? AND "subject" = ?`,
    [nowS, key.entityId, key.issuer, key.subject],
  );
}

/** Removes a link (its user no longer exists). */
export async function unlink(store: Storage, key: LinkKey): Promise<void> {
  await store.run(
    `DELETE FROM "mb_oauth2_links" WHERE "entity_id" = ? AND "issuer" = ? AND "subject" = ?`,
    [key.entityId, key.issuer, key.subject],
  );
}

/**
 * Removes every link of a user but `keep`: the user's address has just
 * been proven by its owner (a provider's verified email claimed an
 * unverified account), so identities linked before, by whoever registered
 * the address first, lose their way in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * import { link, linkedUser, unlinkOthers } from "moonbase/lib/auth/oauth2/links.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * const early = { entityId: "e", issuer: "https://a.example", subject: "1" };
 * const owner = { entityId: "e", issuer: "https://b.example", subject: "2" };
 * await link(db, early, "a", "u1", 1);
 * await link(db, owner, "b", "u1", 2);
 * await unlinkOthers(db, owner, "u1");
 * assert.equal(await linkedUser(db, early), undefined);
 * assert.equal(await linkedUser(db, owner), "u1");
 * await db.close();
 * ```
 */
export async function unlinkOthers(
  store: Storage,
  keep: LinkKey,
  userId: string,
): Promise<void> {
  await store.run(
    `DELETE FROM "mb_oauth2_links" WHERE "entity_id" = ? AND "user_id" = ? AND NOT ("issuer" = ? AND "subject" = ?)`,
    [keep.entityId, userId, keep.issuer, keep.subject],
  );
}

/**
 * Removes every link of a user whose email was just proven by mail (a
 * verification link, a password reset, an email change or a sign-in code)
 * while the account was not verified: an identity linked to an unverified
 * account may belong to whoever registered the address first (a provider
 * that does not verify emails made the account), so it loses its way in
 * once the address's owner proves it. Only that user's links go.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteStorage } from "moonbase/lib/db/sqlite.ts";
 * import { ensureSystemTables } from "moonbase/lib/schema/system.ts";
 * import { link, linkedUser, unlinkUser } from "moonbase/lib/auth/oauth2/links.ts";
 * const db = new SqliteStorage(":memory:");
 * await ensureSystemTables(db);
 * const early = { entityId: "e", issuer: "https://a.example", subject: "1" };
 * const other = { entityId: "e", issuer: "https://a.example", subject: "2" };
 * await link(db, early, "a", "u1", 1);
 * await link(db, other, "a", "u2", 1);
 * await unlinkUser(db, "e", "u1");
 * assert.equal(await linkedUser(db, early), undefined);
 * assert.equal(await linkedUser(db, other), "u2");
 * await db.close();
 * ```
 */
export async function unlinkUser(
  store: Storage,
  entityId: string,
  userId: string,
): Promise<void> {
  await store.run(
    `DELETE FROM "mb_oauth2_links" WHERE "entity_id" = ? AND "user_id" = ?`,
    [entityId, userId],
  );
}
