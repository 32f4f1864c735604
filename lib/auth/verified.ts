/**
 * `auth.require_verified`: a user whose email is not verified cannot log in
 * (403 `Cannot log in: email not verified`). The one home of the rule:
 * every login method calls `assertMayLogIn` once the user has proved who
 * they are (never before, so the answer tells nothing to someone who does
 * not know the password).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { RecordData } from "../records/codec.ts";
import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";

/** The exact message of the refusal (issue 30's contract). */
export const NOT_VERIFIED = "Cannot log in: email not verified";

/**
 * Throws the 403 when the entity requires verified emails and `user` (a
 * decoded record) is not verified.
 *
 * @example
 * ```ts ignore
 * assertMayLogIn(entity, user); // after the password matched
 * ```
 */
export function assertMayLogIn(entity: Entity, user: RecordData): void {
  if (authOptions(entity).require_verified && user.verified !== true) {
    throw new MoonbaseError("forbidden", NOT_VERIFIED);
  }
}
