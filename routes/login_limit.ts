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

/** Runs a login under the rate limit; every answer carries the X-RateLimit headers. */
export async function limitedLogin(
  ctx: Context<LoginHost>,
  login: () => Promise<{ user: Record<string, unknown> }>,
  entity: string,
): Promise<Response> {
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
      if (err.code === "unauthenticated") {
        log.warn("failed login", { entity, ip: ctx.ip });
      }
      throw new MoonbaseError(err.code, err.message, err.data, {
        ...err.headers,
        ...headers,
      });
    }
    throw err;
  }
}
