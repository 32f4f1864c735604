/**
 * Rules for changing an account through the records API (a PATCH on an auth
 * entity's record):
 *
 * - a user changing their own `password` or `email` must give the current
 *   password in `oldPassword` (PocketBase's name); missing or wrong → 400 on
 *   `oldPassword`. Admins need none. The check is an ordinary scrypt
 *   verification, so a wrong password costs what a right one does;
 * - `oldPassword` never reaches validation or storage;
 * - an unchanged `email` is dropped from the write, so only a new email
 *   resets `verified` (the reset itself: `lib/records/caller_limits.ts`);
 * - a user's API key cannot change the user's own `password` or `email`
 *   (403, lib/auth/api_keys.ts).
 *
 * @module
 */

import { invalidFields } from "../errors.ts";
import type { Entity } from "../records/entity.ts";
import type { AuthValue } from "../caller.ts";
import { verifyDummy, verifyPassword } from "./password.ts";
import { apiKeyRefused } from "./api_key_refusals.ts";

/** The key that carries the current password. */
export const OLD_PASSWORD = "oldPassword";

/** True when `auth` is the user whose record `id` of `entity` is. */
export function isOwnRecord(
  entity: Entity,
  id: string,
  auth: AuthValue,
): boolean {
  return auth.type === "user" && auth.entity === entity.name && auth.id === id;
}

/**
 * True when this PATCH body needs `checkAccountChange` (an auth entity's
 * record, and a key it looks at). Cheap: no reads.
 */
export function touchesAccount(
  entity: Entity,
  body: Record<string, unknown>,
): boolean {
  return entity.type === "auth" &&
    (Object.hasOwn(body, "password") || Object.hasOwn(body, "email") ||
      Object.hasOwn(body, OLD_PASSWORD));
}

/**
 * Checks a PATCH body on an auth entity's record `id` and returns the body
 * to write (without `oldPassword`; without an unchanged `email`). Throws a
 * 400 with a field error on `oldPassword` when the caller changes their own
 * password or email without the right current password. `beforeCheck` runs
 * right before a password is verified (the route counts it as a login
 * attempt).
 *
 * @example
 * ```ts ignore
 * const body = await checkAccountChange(users, id, {password: "new-pass-1", oldPassword: "old-pass-1"}, auth);
 * ```
 */
export async function checkAccountChange(
  entity: Entity,
  id: string,
  body: Record<string, unknown>,
  auth: AuthValue,
  beforeCheck: () => Promise<void> = () => Promise.resolve(),
): Promise<Record<string, unknown>> {
  const { [OLD_PASSWORD]: old, ...rest } = body;
  if (auth.type === "admin") return rest;
  const changesPassword = Object.hasOwn(rest, "password");
  const changesEmail = Object.hasOwn(rest, "email");
  if (!changesPassword && !changesEmail) return rest;
  const row = await entity.rowFromCols(id, ["id"]);
  if (!row) return rest; // the update answers 404
  if (
    changesEmail && typeof rest.email === "string" &&
    rest.email.toLowerCase() === row.email
  ) {
    delete rest.email;
    if (!changesPassword) return rest;
  }
  if (!isOwnRecord(entity, id, auth)) return rest; // the rule decides
  if (auth.key !== undefined) {
    // A key is no login: it never changes the credentials it acts for.
    throw apiKeyRefused(
      "change password or email",
      "log in as the user and use that token",
    );
  }
  if (typeof old !== "string" || old === "" || old.length > 1024) {
    throw invalidFields({
      [OLD_PASSWORD]: {
        code: "required",
        message: "The current password is required to change password or email",
      },
    }, "Cannot update account: the current password is required");
  }
  await beforeCheck();
  const hash = typeof row.password === "string" ? row.password : undefined;
  const ok = hash
    ? await verifyPassword(old, hash, "low")
    : await verifyDummy(old, "low");
  if (!ok) {
    throw invalidFields({
      [OLD_PASSWORD]: {
        code: "invalid",
        message: "The current password is wrong",
      },
    }, "Cannot update account: the current password is wrong");
  }
  return rest;
}
