/**
 * `GET /api/v1/sys/logs` (admin only): request and app logs, newest first;
 * `/stats`: request counts over time; `/:id`: one entry.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { json } from "../lib/http/envelope.ts";
import { parseLogQuery } from "../lib/logs/store.ts";
import {
  logEntryById,
  parseStatsQuery,
  requestStats,
} from "../lib/logs/stats.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** What these routes read of the app: the log store. */
export type LogsHost = Pick<Core, "log" | "logs">;

/** Registers the logs route. */
export function logRoutes(r: RouteTarget<LogsHost>): void {
  const admin = guarded(r, requireAdmin);
  admin.add("GET", "/api/v1/sys/logs", async (ctx) => {
    const q = parseLogQuery(ctx.url.searchParams);
    await ctx.app.log.flush();
    return json(200, await ctx.app.logs.query(q));
  });
  admin.add("GET", "/api/v1/sys/logs/stats", async (ctx) => {
    const q = parseStatsQuery(ctx.url.searchParams);
    await ctx.app.log.flush();
    return json(200, await requestStats(ctx.app.logs, q));
  });
  admin.add("GET", "/api/v1/sys/logs/:id", async (ctx) => {
    await ctx.app.log.flush();
    return json(200, await logEntryById(ctx.app.logs, ctx.params.id));
  });
}
