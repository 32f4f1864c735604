/**
 * API keys, admin only: `POST /api/v1/sys/api-keys` (201, the key shown
 * once), `GET /api/v1/sys/api-keys` (never a key), `DELETE
 * /api/v1/sys/api-keys/<id>` (204). What a key is and how it is checked:
 * lib/auth/api_keys.ts.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Handler } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** Registers the API key routes. */
export function apiKeyRoutes(r: Router<Handler<Core>>): void {
  const admin = guarded(r, requireAdmin);
  admin.add("POST", "/api/v1/sys/api-keys", async (ctx) => {
    const body = await readJsonObject(
      ctx.req,
      ctx.app.config.maxBodySize,
      ctx.app.bodies,
    );
    const made = await ctx.app.apiKeys.create(body);
    const by = await ctx.auth();
    ctx.app.log.info("api key created", {
      id: made.id,
      entity: made.entity,
      user: made.user_id,
      admin: by.id,
    });
    return json(201, made);
  });
  admin.add(
    "GET",
    "/api/v1/sys/api-keys",
    async (ctx) => json(200, await ctx.app.apiKeys.list()),
  );
  admin.add("DELETE", "/api/v1/sys/api-keys/:id", async (ctx) => {
    if (!(await ctx.app.apiKeys.remove(ctx.params.id))) {
      throw new MoonbaseError(
        "not_found",
        `Cannot delete API key: no key ${
          JSON.stringify(ctx.params.id.slice(0, 80))
        }`,
      );
    }
    ctx.app.log.info("api key deleted", {
      id: ctx.params.id,
      admin: (await ctx.auth()).id,
    });
    return noContent();
  });
}
