/**
 * Logins under the per-IP rate limit, shared by the user and admin login
 * routes: every answer carries the `X-RateLimit-*` headers.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import type { Context } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import { rateHeaders, rateLimited } from "../lib/auth/rate_limit.ts";

/** What these routes read of the app: the login throttle and the log. */
export type LoginHost = Pick<Core, "limiter" | "log">;

/**
 * Counts one attempt of the client address against the login limit: the
 * `X-RateLimit-*` headers, or the 429.
 */
async function countAttempt(
  ctx: Context<LoginHost>,
  entity: string,
): Promise<Record<string, string>> {
  const state = await ctx.app.limiter.hit(`login:${ctx.ip}`);
  const headers = rateHeaders(state);
  const log = ctx.app.log;
  if (!state.allowed) {
    if (state.firstRefusal) {
      log.warn("login rate limit hit", {
        ip: ctx.ip,
        entity,
        request_id: ctx.requestId,
      });
    }
    throw rateLimited("log in", "attempts", state);
  }
  return headers;
}

/** Adds the `X-RateLimit-*` headers to an error. */
function withHeaders(
  err: MoonbaseError,
  headers: Record<string, string>,
): MoonbaseError {
  return new MoonbaseError(err.code, err.message, err.data, {
    ...err.headers,
    ...headers,
  });
}

/**
 * Runs a step of a login that is no login itself (`request-otp`) under the
 * login rate limit: it answers 200 with `result`.
 */
export async function limitedRequest(
  ctx: Context<LoginHost>,
  step: () => Promise<Record<string, unknown>>,
): Promise<Response> {
  const headers = await countAttempt(ctx, String(ctx.params.entity));
  try {
    return json(200, await step(), headers);
  } catch (err) {
    if (err instanceof MoonbaseError) throw withHeaders(err, headers);
    throw err;
  }
}

/** Runs a login under the rate limit; every answer carries the X-RateLimit headers. */
export async function limitedLogin(
  ctx: Context<LoginHost>,
  login: () => Promise<{ user: Record<string, unknown> }>,
  entity: string,
): Promise<Response> {
  const headers = await countAttempt(ctx, entity);
  const log = ctx.app.log;
  try {
    const result = await login();
    log.info(entity === "mb_admins" ? "admin login" : "login", {
      entity,
      user: result.user.id,
      ip: ctx.ip,
    });
    return json(200, result, headers);
  } catch (err) {
    if (err instanceof MoonbaseError) {
      if (err.data?.mfa_id !== undefined) {
        log.info("login needs a second factor", { entity, ip: ctx.ip });
      } else if (err.code === "unauthenticated") {
        log.warn("failed login", { entity, ip: ctx.ip });
      }
      throw withHeaders(err, headers);
    }
    throw err;
  }
}
