/**
 * OAuth2 / OpenID Connect sign-in: `POST /api/v1/auth/<entity>/login-oauth2
 * {provider, code, code_verifier, redirect_url[, state]}` → 200 `{token,
 * user, meta: {is_new}}`, under the login rate limit. The work is
 * lib/auth/oauth2/service.ts; the login completes in `completeLogin` (a
 * second factor when one is needed: 401 `{mfa_id}`; as a second login it
 * carries `mfa_id`).
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { RouteTarget } from "../lib/http/route_group.ts";
import { inRequest } from "../lib/http/request_scope.ts";
import { completeLogin } from "../lib/auth/complete_login.ts";
import { mfaIdOf } from "../lib/auth/mfa.ts";
import { countingMfa } from "../lib/auth/sign_in.ts";
import { oauth2Options } from "../lib/auth/oauth2/options.ts";
import { authEntity, type AuthHost } from "./auth.ts";
import { limitedLogin } from "./login_limit.ts";

/** What these routes read of the app. */
export type OAuth2Host = AuthHost & Pick<Core, "oauth2">;

/** Registers `login-oauth2`. */
export function oauth2Routes(r: RouteTarget<OAuth2Host>): void {
  r.add(
    "POST",
    "/api/v1/auth/:entity/login-oauth2",
    (ctx) =>
      limitedLogin(ctx, async () => {
        const entity = authEntity(ctx.app, ctx.params.entity);
        const body = await ctx.body();
        // As a second login it carries the first's mfa_id (each attempt
        // counts against it).
        const mfaId = mfaIdOf(body);
        // A new user is a sign-up: counted against this client's address.
        const { user, isNew } = await countingMfa(
          ctx.app,
          entity,
          mfaId,
          () =>
            inRequest(
              ctx,
              () => ctx.app.oauth2.login(entity, oauth2Options(entity), body),
            ),
        );
        const done = await completeLogin(ctx.app, entity, user, "oauth2", {
          mfaId,
        });
        return { ...done, meta: { is_new: isNew } };
      }, ctx.params.entity),
  );
}
