/**
 * `POST /api/v1/sys/oauth2/discovery {issuer}` (admin only): the
 * dashboard's check of an OpenID Connect issuer, resolved by the server as
 * a sign-in would (lib/auth/oauth2/issuer_check.ts) → `{issuer,
 * authorization_endpoint, token_endpoint, jwks_uri}`, or 502 saying what
 * failed.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { checkIssuer } from "../lib/auth/oauth2/issuer_check.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** Registers the issuer check. */
export function oidcDiscoveryRoutes(r: Router<Handler<Core>>): void {
  const admin = guarded(r, requireAdmin);
  admin.add(
    "POST",
    "/api/v1/sys/oauth2/discovery",
    async (ctx) =>
      json(200, await checkIssuer(ctx.app.oauth2.resolver, await ctx.body())),
  );
}
