/**
 * Every route of Moonbase, in one list.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import { Router } from "../lib/http/router.ts";
import { adminRoutes } from "./admins.ts";
import { authRoutes } from "./auth.ts";
import { dashboardRoutes } from "./dashboard.ts";
import { fileRoutes } from "./files.ts";
import { logRoutes } from "./logs.ts";
import { healthRoutes } from "./health.ts";
import { recordRoutes } from "./records.ts";
import { ruleRoutes } from "./rules.ts";
import { realtimeRoutes } from "./realtime.ts";
import { schemaRoutes } from "./schemas.ts";
import { settingsRoutes } from "./settings.ts";

/**
 * Builds the router with all built-in routes.
 *
 * @example
 * ```ts ignore
 * const router = buildRouter(core);
 * ```
 */
export function buildRouter(core: Core): Router<Handler<Core>> {
  const r = new Router<Handler<Core>>();
  healthRoutes(r);
  adminRoutes(r);
  authRoutes(r);
  dashboardRoutes(r);
  schemaRoutes(r);
  const records = core.records;
  recordRoutes(r, records);
  fileRoutes(r, records);
  logRoutes(r);
  ruleRoutes(r);
  realtimeRoutes(r);
  settingsRoutes(r);
  return r;
}
