/**
 * Sign-in by mailed code, the second factor and TOTP enrolment, under
 * `/api/v1/auth/<entity>/` (lib/auth/otp.ts, mfa.ts, totp_enrollment.ts,
 * sign_in.ts): `request-otp`, `login-otp`, `login-totp`, and with the
 * user's own bearer token (not an impersonation token) `totp/setup`,
 * `totp/confirm`, `totp/disable`. The logins and `request-otp` are under
 * the login rate limit; each user's TOTP confirmations and disables under
 * one of their own.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import type { Context } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Entity } from "../lib/records/entity.ts";
import { otpLogin, totpLogin } from "../lib/auth/sign_in.ts";
import { rateLimited } from "../lib/auth/rate_limit.ts";
import { refuseImpersonation } from "../lib/auth/impersonation.ts";
import { authOptions } from "../lib/schema/auth_options.ts";
import { authEntity, type AuthHost } from "./auth.ts";
import { limitedLogin, limitedRequest } from "./login_limit.ts";

/** What these routes read of the app: the auth routes' and the settings (the TOTP issuer). */
export type SignInHost = AuthHost & Pick<Core, "settings">;

/**
 * The caller as a user of `entity`, by their own token (401 for a guest,
 * 403 for anyone else and for an impersonation token).
 */
async function ownUser(
  ctx: Context<SignInHost>,
  entity: Entity,
  action: string,
): Promise<{ id: string; email: string }> {
  const header = ctx.req.headers.get("authorization");
  if (header === null || header === "") {
    throw new MoonbaseError(
      "unauthenticated",
      `Cannot ${action}: log in first and send the token as Authorization: Bearer <token>`,
    );
  }
  const session = await ctx.app.sessions.session(header);
  if (session.entity.id !== entity.id) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot ${action}: only a user of ${entity.name}, with their own token, can`,
    );
  }
  refuseImpersonation(session.claims, action);
  if (!authOptions(entity.schema).totp.enabled) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot ${action}: TOTP is not enabled for ${entity.name} (an admin sets auth.totp.enabled in the schema)`,
    );
  }
  return {
    id: String(session.user.id),
    email: String(session.user.email ?? ""),
  };
}

/** Counts one TOTP confirmation or disable of a user (5 a minute). */
async function limitTotp(
  ctx: Context<SignInHost>,
  entity: Entity,
  userId: string,
  action: string,
): Promise<void> {
  const state = await ctx.app.limiter.hit(`totp:${entity.id}:${userId}`);
  if (!state.allowed) throw rateLimited(action, "attempts", state);
}

/** Registers the routes. */
export function signInRoutes(r: RouteTarget<SignInHost>): void {
  r.add(
    "POST",
    "/api/v1/auth/:entity/request-otp",
    (ctx) =>
      limitedRequest(ctx, async () => {
        const entity = authEntity(ctx.app, ctx.params.entity);
        const { email } = await ctx.body();
        return { otp_id: await ctx.app.otp.request(entity, email) };
      }),
  );
  r.add(
    "POST",
    "/api/v1/auth/:entity/login-otp",
    (ctx) =>
      limitedLogin(ctx, async () => {
        const entity = authEntity(ctx.app, ctx.params.entity);
        return await otpLogin(ctx.app, entity, await ctx.body());
      }, ctx.params.entity),
  );
  r.add(
    "POST",
    "/api/v1/auth/:entity/login-totp",
    (ctx) =>
      limitedLogin(ctx, async () => {
        const entity = authEntity(ctx.app, ctx.params.entity);
        return await totpLogin(ctx.app, entity, await ctx.body());
      }, ctx.params.entity),
  );
  r.add("POST", "/api/v1/auth/:entity/totp/setup", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    const user = await ownUser(ctx, entity, "set up TOTP");
    const issuer = (await ctx.app.settings.current()).app.name;
    return json(
      200,
      await ctx.app.totp.setup(entity, user.id, user.email, issuer),
    );
  });
  r.add("POST", "/api/v1/auth/:entity/totp/confirm", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    const user = await ownUser(ctx, entity, "confirm TOTP");
    const { code } = await ctx.body();
    await limitTotp(ctx, entity, user.id, "confirm TOTP");
    await ctx.app.totp.confirm(entity, user.id, code);
    ctx.app.log.info("totp enabled", { entity: entity.name, user: user.id });
    return noContent();
  });
  r.add("POST", "/api/v1/auth/:entity/totp/disable", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    const user = await ownUser(ctx, entity, "disable TOTP");
    const { code } = await ctx.body();
    await limitTotp(ctx, entity, user.id, "disable TOTP");
    await ctx.app.totp.disable(entity, user.id, code);
    ctx.app.log.info("totp disabled", { entity: entity.name, user: user.id });
    return noContent();
  });
}
