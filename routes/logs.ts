/**
 * `GET /api/v1/sys/logs` (admin only): request and app logs, newest first.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { parseLogQuery } from "../lib/logs/store.ts";
import { requireAdmin } from "./guards.ts";

/** Registers the logs route. */
export function logRoutes(r: Router<Handler<Core>>): void {
  r.add("GET", "/api/v1/sys/logs", async (ctx) => {
    await requireAdmin(ctx);
    const q = parseLogQuery(ctx.url.searchParams);
    await ctx.app.log.flush();
    return json(200, await ctx.app.logs.query(q));
  });
}
