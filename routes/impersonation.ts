/**
 * `POST /api/v1/auth/<entity>/impersonate/<id> {duration}`: an admin gets
 * `{token, user}` acting as the user (lib/auth/impersonation.ts). Logged
 * with the admin and the user, never the token.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { impersonate } from "../lib/auth/impersonation.ts";
import { authEntity } from "./auth.ts";
import { requireAdmin } from "./guards.ts";

/** Registers the impersonation route. */
export function impersonationRoutes(r: Router<Handler<Core>>): void {
  r.add("POST", "/api/v1/auth/:entity/impersonate/:id", async (ctx) => {
    // The entity first, as on every auth route (`404 Route Not Found`).
    const entity = authEntity(ctx.app, ctx.params.entity);
    const admin = await requireAdmin(ctx);
    const body = await readJsonObject(
      ctx.req,
      ctx.app.config.maxBodySize,
      ctx.app.bodies,
    );
    const { result, ttl } = await impersonate(
      ctx.app.sessions,
      entity,
      ctx.params.id,
      admin,
      body,
    );
    ctx.app.log.info("impersonation", {
      admin: admin.id,
      entity: entity.name,
      user: result.user.id,
      duration: ttl,
      ip: ctx.ip,
    });
    return json(200, result);
  });
}
