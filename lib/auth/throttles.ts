/**
 * Throttles besides the login route's (`routes/auth.ts`):
 *
 * - sign-ups: creating a record of an auth entity (a sign-up when its `add`
 *   rule lets guests in) is limited per client IP like logins, with the
 *   same headers; admins are not limited;
 * - a PATCH that checks `oldPassword` counts as a login attempt, so a stolen
 *   token cannot be used to guess the password;
 * - the account routes (`request-*`, `confirm-*` of verification, password
 *   reset and email change) are limited per client IP to `ACCOUNT_LIMIT` a
 *   minute, with the same headers; a confirm that checks a password also
 *   counts as a login attempt (`passwordCheckThrottle`).
 *
 * @module
 */

import type { Entity } from "../records/entity.ts";
import {
  type LoginLimiter,
  rateHeaders,
  rateLimited,
  SIGNUP_LIMIT,
} from "./rate_limit.ts";
import type { AuthValue } from "../caller.ts";

/**
 * Counts one sign-up from `ip` and returns the `X-RateLimit-*` headers for
 * the answer, or undefined when no limit applies (not an auth entity, or an
 * admin). Throws a 429 with `Retry-After` past `SIGNUP_LIMIT` a minute.
 *
 * @example
 * ```ts ignore
 * const headers = await signupThrottle(core.limiter, ctx.ip, users, auth);
 * ```
 */
export async function signupThrottle(
  limiter: LoginLimiter,
  ip: string,
  entity: Entity,
  auth: AuthValue,
  onFirstRefusal?: () => void,
): Promise<Record<string, string> | undefined> {
  if (entity.type !== "auth" || auth.type === "admin") return undefined;
  const state = await limiter.hit(`signup:${ip}`, SIGNUP_LIMIT);
  const headers = rateHeaders(state);
  if (!state.allowed) {
    if (state.firstRefusal) onFirstRefusal?.();
    throw rateLimited("sign up", "sign-ups", state);
  }
  return headers;
}

/** Account route calls (request and confirm) allowed per window and IP. */
export const ACCOUNT_LIMIT = 10;

/**
 * Counts one call of an account route from `ip` and returns the
 * `X-RateLimit-*` headers for the answer; a 429 with `Retry-After` past
 * `ACCOUNT_LIMIT` a minute.
 */
export async function accountThrottle(
  limiter: LoginLimiter,
  ip: string,
  action: string,
  onFirstRefusal?: () => void,
): Promise<Record<string, string>> {
  const state = await limiter.hit(`account:${ip}`, ACCOUNT_LIMIT);
  if (!state.allowed) {
    if (state.firstRefusal) onFirstRefusal?.();
    throw rateLimited(action, "requests", state);
  }
  return rateHeaders(state);
}

/** Counts a check of the current password as a login attempt from `ip` (429 past the limit). */
export async function passwordCheckThrottle(
  limiter: LoginLimiter,
  ip: string,
): Promise<void> {
  const state = await limiter.hit(`login:${ip}`);
  if (!state.allowed) {
    throw rateLimited("check the password", "attempts", state);
  }
}
