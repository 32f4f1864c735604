/**
 * `POST /api/v1/sys/oauth2/discovery {issuer}` (admin only): the
 * dashboard's check of an OpenID Connect issuer, fetched by the server
 * (lib/auth/oidc_discovery.ts) → `{issuer, authorization_endpoint,
 * token_endpoint, jwks_uri}`, or 502 saying what failed.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { checkDiscovery } from "../lib/auth/oidc_discovery.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** Registers the discovery check. */
export function oidcDiscoveryRoutes(r: Router<Handler<Core>>): void {
  const admin = guarded(r, requireAdmin);
  admin.add(
    "POST",
    "/api/v1/sys/oauth2/discovery",
    async (ctx) => json(200, await checkDiscovery(await ctx.body())),
  );
}
