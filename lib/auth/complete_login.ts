/**
 * The last step of every login that proved who the user is: issues the
 * session token. One place for what must hold after any login method, so
 * a second factor (MFA: a first login answering 401 with `{mfa_id}`) or a
 * "verified email required" check hooks in here once for every method.
 * Today OAuth2 sign-in goes through it; the password login of
 * `Sessions.login` checks its password and issues its token itself (both
 * apply `auth.require_verified` through lib/auth/verified.ts).
 *
 * @module
 */

import type { RecordData } from "../records/codec.ts";
import type { Entity } from "../records/entity.ts";
import type { LoginResult, Sessions } from "./sessions.ts";
import { assertMayLogIn } from "./verified.ts";

/** How the user proved who they are. */
export type LoginMethod = "password" | "otp" | "oauth2" | "totp";

/**
 * Completes a login of `user` of `entity` by `method`: the token and the
 * user, or an error the route answers as is (the seam for MFA).
 *
 * @example
 * ```ts ignore
 * const { token, user } = await completeLogin(core.sessions, entity, user, "oauth2");
 * ```
 */
export async function completeLogin(
  sessions: Sessions,
  entity: Entity,
  user: RecordData,
  _method: LoginMethod,
): Promise<LoginResult> {
  assertMayLogIn(entity, user); // `auth.require_verified`
  return await sessions.issue(entity, user);
}
