/**
 * Impersonation: an admin gets a token that acts as a user of an auth
 * entity (`POST /api/v1/auth/<entity>/impersonate/<id> {duration}`).
 *
 * - The token is an ordinary token of the user (rules apply as to the
 *   user, a password change of the user ends it, logout ends it) with one
 *   more claim, `imp` (the admin's id): it cannot be refreshed
 *   (lib/auth/sessions.ts `refresh`), so it ends when `duration` does.
 * - `duration` is in seconds: 3600 when absent or null, at least 60 and at
 *   most 86 400 (a day); anything else is a 400.
 * - Each impersonation is logged with the admin and the user (ids), never
 *   the token (the route writes the line).
 * - It cannot change the user's second factor (`totp/setup`, `confirm`,
 *   `disable`: `refuseImpersonation`): an admin who could enrol a secret of
 *   their own would hold the user's second factor.
 *
 * @module
 */

import { invalidFields, MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Entity } from "../records/entity.ts";
import type { LoginResult, Sessions } from "./sessions.ts";

/**
 * 403 when `claims` are an impersonation token's: for the routes that
 * change the user's second factor, which only the user may.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refuseImpersonation } from "moonbase/lib/auth/impersonation.ts";
 * refuseImpersonation({}, "set up TOTP");
 * assert.throws(() => refuseImpersonation({ imp: "a1" }, "set up TOTP"), { code: "forbidden" });
 * ```
 */
export function refuseImpersonation(
  claims: { imp?: string },
  action: string,
): void {
  if (claims.imp !== undefined) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot ${action}: an impersonation token cannot change the user's second factor; the user does it after logging in themselves`,
    );
  }
}

/** Lifetime of an impersonation token when the body names none (s). */
export const IMPERSONATION_DEFAULT = 3600;
/** The shortest and the longest lifetime (s). */
export const IMPERSONATION_MIN = 60;
export const IMPERSONATION_MAX = 86_400;

/**
 * The lifetime a body asks for, or 400 on `duration`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { impersonationTtl } from "moonbase/lib/auth/impersonation.ts";
 * assert.equal(impersonationTtl({}), 3600);
 * assert.equal(impersonationTtl({ duration: 600 }), 600);
 * assert.throws(() => impersonationTtl({ duration: 86_401 }), { code: "invalid" });
 * assert.throws(() => impersonationTtl({ duration: "600" }), { code: "invalid" });
 * ```
 */
export function impersonationTtl(body: Record<string, unknown>): number {
  const d = body.duration;
  if (d === undefined || d === null) return IMPERSONATION_DEFAULT;
  if (
    typeof d !== "number" || !Number.isInteger(d) || d < IMPERSONATION_MIN ||
    d > IMPERSONATION_MAX
  ) {
    throw invalidFields({
      duration: {
        code: "invalid",
        message:
          `Must be a whole number of seconds from ${IMPERSONATION_MIN} to ${IMPERSONATION_MAX} (default ${IMPERSONATION_DEFAULT})`,
      },
    }, "Cannot impersonate: invalid fields");
  }
  return d;
}

/**
 * Issues an impersonation token for user `id` of `entity` to `admin`
 * (an admin caller), with its lifetime in seconds; 404 when there is no
 * such user.
 */
export async function impersonate(
  sessions: Sessions,
  entity: Entity,
  id: string,
  admin: AuthValue,
  body: Record<string, unknown>,
): Promise<{ result: LoginResult; ttl: number }> {
  if (admin.type !== "admin") {
    throw new MoonbaseError("forbidden", "Cannot impersonate: admins only");
  }
  const ttl = impersonationTtl(body);
  const user = id.length <= 200 ? await entity.read(id) : undefined;
  if (!user) {
    throw new MoonbaseError(
      "not_found",
      `Cannot impersonate: no user ${
        JSON.stringify(id.slice(0, 80))
      } in ${entity.name}`,
    );
  }
  const result = await sessions.issue(entity, user, { ttl, imp: admin.id });
  return { result, ttl };
}
