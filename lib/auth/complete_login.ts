/**
 * The last step of every login that proved who the user is (password,
 * mailed code, OAuth2, TOTP): the one place a login completes, so what must
 * hold after any method holds for all of them:
 *
 * - `auth.require_verified`: an unverified user gets 403 (verified.ts);
 * - multi-factor: with `auth.mfa.enabled`, or for a user enrolled in TOTP
 *   (while `auth.totp.enabled`), a first login answers 401 with
 *   `data: {mfa_id}` (mfa.ts); a login that carries an `mfa_id` is the
 *   second, by another method, and gets the token;
 * - the token is issued in the password generation the login saw, so a
 *   password change meanwhile ends it.
 *
 * A sign-in method calls `completeLogin(core, entity, user, method,
 * { mfaId })` once it knows the user (sign_in.ts for password, code and
 * TOTP; the OAuth2 sign-in the same way with "oauth2" and its body's
 * `mfa_id`).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { RecordData } from "../records/codec.ts";
import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";
import type { MfaChallenges } from "./mfa.ts";
import type { LoginResult, Sessions } from "./sessions.ts";
import type { TotpEnrollments } from "./totp_enrollment.ts";
import { assertMayLogIn } from "./verified.ts";

/** How the user proved who they are. */
export type LoginMethod = "password" | "otp" | "oauth2" | "totp";

/** What completing a login uses (a `Core` is one). */
export interface LoginServices {
  readonly sessions: Sessions;
  readonly mfa: MfaChallenges;
  readonly totp: TotpEnrollments;
}

/** How a login ends beyond its user and method. */
export interface CompleteOptions {
  /** The `mfa_id` the request carried (mfa.ts `mfaIdOf`): this is a second login. */
  mfaId?: string;
  /** The password generation read before the credential was checked (a password login); else read now. */
  gen?: number;
}

/**
 * Completes a login of `user` of `entity` by `method`: `{token, user}`, or
 * the 401 with `{mfa_id}` of a first login that needs a second, or the
 * error of a refused one.
 *
 * @example
 * ```ts ignore
 * const { token, user } = await completeLogin(core, entity, user, "oauth2", { mfaId: mfaIdOf(body) });
 * ```
 */
export async function completeLogin(
  services: LoginServices,
  entity: Entity,
  user: RecordData,
  method: LoginMethod,
  options: CompleteOptions = {},
): Promise<LoginResult> {
  const auth = authOptions(entity.schema);
  const id = String(user.id);
  assertMayLogIn(entity, user); // `auth.require_verified`
  const { sessions } = services;
  if (options.mfaId !== undefined) {
    const first = await services.mfa.take(entity, options.mfaId, id, method);
    const gen = await sessions.generation(entity, id);
    if (
      first.gen !== gen || (options.gen !== undefined && options.gen !== gen)
    ) {
      throw new MoonbaseError(
        "unauthenticated",
        "Cannot log in: the password changed since the first login; log in again from the first step",
      );
    }
    return await sessions.issueAt(entity, user, gen);
  }
  const needed = auth.mfa.enabled ||
    (auth.totp.enabled && await services.totp.enrolled(entity, id));
  const gen = options.gen ?? await sessions.generation(entity, id);
  if (needed) {
    if (method === "totp") {
      // A TOTP code is a second factor only (login-totp needs an mfa_id).
      throw new MoonbaseError(
        "invalid",
        "Cannot log in: a TOTP code is a second factor; log in by another method first",
      );
    }
    const mfaId = await services.mfa.start(
      entity,
      id,
      method,
      gen,
      auth.mfa.duration,
    );
    throw new MoonbaseError(
      "unauthenticated",
      "Cannot log in: a second factor is required; log in again by another method with this mfa_id",
      { mfa_id: mfaId },
    );
  }
  return await sessions.issueAt(entity, user, gen);
}
