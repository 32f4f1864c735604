/**
 * Entity-scoped authentication (`/api/v1/auth/:entity/…`) and its legacy non-scoped forms,
 * with the login rate limit on every login route.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { json } from "../lib/http/envelope.ts";
import { isExposed } from "../lib/records/access.ts";
import type { Entity } from "../lib/records/entity.ts";
import { authMethods } from "../lib/auth/methods.ts";
import { oauth2Options } from "../lib/auth/oauth2/options.ts";
import { passwordLogin, type SignInServices } from "../lib/auth/sign_in.ts";
import type { Core } from "../lib/core.ts";
import { type AdminsHost, setupAdmin } from "./admins.ts";
import { limitedLogin } from "./login_limit.ts";

/**
 * What these routes read of the app: auth entities and sessions (and
 * first-admin setup), the OAuth2 providers' links, and what a login
 * completes with (second factors).
 */
export type AuthHost = AdminsHost & SignInServices & Pick<Core, "oauth2">;

/** The one answer for an auth route whose entity cannot be used (no probing). */
function routeNotFound(): MoonbaseError {
  return new MoonbaseError("not_found", "Route Not Found");
}

/** The auth entity named in a path, or the identical 404. */
export function authEntity(core: AuthHost, name: unknown): Entity {
  const e = typeof name === "string" ? core.schemas.byName(name) : undefined;
  if (!isExposed(e, name, "auth")) throw routeNotFound();
  return e;
}

/**
 * The entity of a legacy refresh/logout comes from the token and passes the
 * same checks as the scoped path `/api/v1/auth/<entity>/…` would: an admin
 * token gets the same `404 Route Not Found` as `/api/v1/auth/mb_admins/…`
 * (admins use `/api/v1/sys/admins/refresh|logout`).
 */
async function legacyEntity(
  core: AuthHost,
  header: string | null,
): Promise<Entity> {
  const { entity } = await core.sessions.session(header);
  return authEntity(core, entity.name);
}

/** Registers the auth routes. */
export function authRoutes(r: RouteTarget<AuthHost>): void {
  r.add("GET", "/api/v1/auth/:entity/methods", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    // `?redirect_url=`: put into each auth_url and bound to its verifier.
    const redirect = ctx.url.searchParams.get("redirect_url") ?? "";
    return json(
      200,
      await authMethods(
        entity,
        (e) => ctx.app.oauth2.links(e, oauth2Options(e), redirect),
      ),
    );
  });
  r.add(
    "POST",
    "/api/v1/auth/:entity/login",
    (ctx) =>
      limitedLogin(ctx, async () => {
        const entity = authEntity(ctx.app, ctx.params.entity);
        const body = await ctx.body();
        return await passwordLogin(ctx.app, entity, body);
      }, ctx.params.entity),
  );
  r.add("POST", "/api/v1/auth/:entity/refresh", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    return json(
      200,
      await ctx.app.sessions.refresh(
        ctx.req.headers.get("authorization"),
        entity,
      ),
    );
  });
  r.add("POST", "/api/v1/auth/:entity/logout", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    await ctx.app.sessions.logout(ctx.req.headers.get("authorization"), entity);
    return json(200, null);
  });
  // Legacy non-scoped forms: the entity comes from the body or the token.
  r.add("POST", "/api/v1/auth/login", (ctx) =>
    limitedLogin(ctx, async () => {
      const body = await ctx.body();
      const { entity: name, ...credentials } = body;
      return await passwordLogin(
        ctx.app,
        authEntity(ctx.app, name),
        credentials,
      );
    }, "legacy"));
  r.add("POST", "/api/v1/auth/refresh", async (ctx) => {
    const header = ctx.req.headers.get("authorization");
    const entity = await legacyEntity(ctx.app, header);
    return json(200, await ctx.app.sessions.refresh(header, entity));
  });
  r.add("POST", "/api/v1/auth/logout", async (ctx) => {
    const header = ctx.req.headers.get("authorization");
    const entity = await legacyEntity(ctx.app, header);
    await ctx.app.sessions.logout(header, entity);
    return json(200, null);
  });
  r.add("POST", "/api/v1/auth/setup/admin", setupAdmin);
}
