/**
 * The account routes that go through a mailed link, under
 * `/api/v1/auth/<entity>/` (all POST): `request-verification`,
 * `confirm-verification`, `request-password-reset`,
 * `confirm-password-reset`, `request-email-change` (bearer) and
 * `confirm-email-change`; and the pages the links open,
 * `/mb/auth/<entity>/confirm-verification|reset-password|confirm-email-change`
 * with their script and style sheet. The flows live in
 * lib/auth/account_mail.ts, the pages in lib/auth/account_pages.ts.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Entity } from "../lib/records/entity.ts";
import {
  accountThrottle,
  passwordCheckThrottle,
} from "../lib/auth/throttles.ts";
import {
  ACCOUNT_PAGE_HEADERS,
  ACCOUNT_PAGE_SCRIPT,
  ACCOUNT_PAGE_STYLE,
  accountPageHtml,
  isAccountPage,
} from "../lib/auth/account_pages.ts";
import { authEntity, type AuthHost } from "./auth.ts";

/** What these routes read of the app: the auth routes' host, the flows, the app's name. */
export type AccountHost = AuthHost & Pick<Core, "accounts" | "settings">;

type Step = (
  ctx: Context<AccountHost>,
  entity: Entity,
  body: Record<string, unknown>,
) => Promise<void> | void;

/**
 * An account route: the entity (the identical 404), the per-IP limit, the
 * JSON body, the step; 204 with the `X-RateLimit-*` headers.
 */
function accountRoute(action: string, step: Step): Handler<AccountHost> {
  return async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    const headers = await accountThrottle(
      ctx.app.limiter,
      ctx.ip,
      action,
      () =>
        ctx.app.log.warn("account rate limit hit", {
          ip: ctx.ip,
          entity: entity.name,
          request_id: ctx.requestId,
        }),
    );
    try {
      await step(ctx, entity, await ctx.body());
    } catch (err) {
      if (err instanceof MoonbaseError) {
        throw new MoonbaseError(err.code, err.message, err.data, {
          ...err.headers,
          ...headers,
        });
      }
      throw err;
    }
    return new Response(null, { status: 204, headers });
  };
}

/** The signed-in user of `entity` (a token of another entity: 403). */
async function signedIn(ctx: Context<AccountHost>, entity: Entity) {
  const s = await ctx.app.sessions.session(
    ctx.req.headers.get("authorization"),
  );
  if (s.entity.id !== entity.id) {
    throw new MoonbaseError(
      "forbidden",
      `Cannot request email change: sign in as a user of ${entity.name}`,
    );
  }
  return s.user;
}

function asset(body: string, type: string): Handler<AccountHost> {
  return () =>
    new Response(body, {
      headers: { "content-type": type, ...ACCOUNT_PAGE_HEADERS },
    });
}

/** Registers the account routes and pages. */
export function accountRoutes(r: RouteTarget<AccountHost>): void {
  const flows = (ctx: Context<AccountHost>) => ctx.app.accounts;
  const api = "/api/v1/auth/:entity";
  r.add(
    "POST",
    `${api}/request-verification`,
    accountRoute(
      "request verification",
      (ctx, entity, body) => flows(ctx).requestVerification(entity, body),
    ),
  );
  r.add(
    "POST",
    `${api}/confirm-verification`,
    accountRoute(
      "confirm verification",
      (ctx, entity, body) => flows(ctx).confirmVerification(entity, body),
    ),
  );
  r.add(
    "POST",
    `${api}/request-password-reset`,
    accountRoute(
      "request password reset",
      (ctx, entity, body) => flows(ctx).requestPasswordReset(entity, body),
    ),
  );
  r.add(
    "POST",
    `${api}/confirm-password-reset`,
    accountRoute(
      "reset password",
      (ctx, entity, body) => flows(ctx).confirmPasswordReset(entity, body),
    ),
  );
  r.add(
    "POST",
    `${api}/request-email-change`,
    accountRoute("request email change", async (ctx, entity, body) => {
      const user = await signedIn(ctx, entity);
      flows(ctx).requestEmailChange(entity, user, body);
    }),
  );
  r.add(
    "POST",
    `${api}/confirm-email-change`,
    accountRoute(
      "change email",
      (ctx, entity, body) =>
        flows(ctx).confirmEmailChange(
          entity,
          body,
          () => passwordCheckThrottle(ctx.app.limiter, ctx.ip),
        ),
    ),
  );
  r.add("GET", "/mb/auth/:entity/:page", async (ctx) => {
    const entity = authEntity(ctx.app, ctx.params.entity);
    const page = ctx.params.page;
    if (!isAccountPage(page)) {
      throw new MoonbaseError("not_found", "Route Not Found");
    }
    const settings = await ctx.app.settings.current();
    return new Response(accountPageHtml(page, entity.name, settings.app.name), {
      headers: {
        "content-type": "text/html; charset=utf-8",
        ...ACCOUNT_PAGE_HEADERS,
      },
    });
  });
  r.add(
    "GET",
    "/mb/assets/account.js",
    asset(ACCOUNT_PAGE_SCRIPT, "text/javascript; charset=utf-8"),
  );
  r.add(
    "GET",
    "/mb/assets/account.css",
    asset(ACCOUNT_PAGE_STYLE, "text/css; charset=utf-8"),
  );
}
