/**
 * Every route of Moonbase, in one list.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import type { Router } from "../lib/http/router.ts";
import { adminRoutes } from "./admins.ts";
import { apiKeyRoutes } from "./api_keys.ts";
import { impersonationRoutes } from "./impersonation.ts";
import { KeyAwareRouter } from "./key_refusal.ts";
import { authRoutes } from "./auth.ts";
import { dashboardRoutes } from "./dashboard.ts";
import { fileRoutes } from "./files.ts";
import { logRoutes } from "./logs.ts";
import { oauth2Routes } from "./oauth2.ts";
import { oidcDiscoveryRoutes } from "./oidc_discovery.ts";
import { healthRoutes } from "./health.ts";
import { recordRoutes } from "./records.ts";
import { batchRoutes } from "./batch.ts";
import { backupRoutes } from "./backups.ts";
import { ruleRoutes } from "./rules.ts";
import { realtimeRoutes } from "./realtime.ts";
import { schemaRoutes } from "./schemas.ts";
import { settingsRoutes } from "./settings.ts";
import { signInRoutes } from "./sign_in.ts";
import { accountRoutes } from "./account.ts";
import { openApiRoutes } from "./openapi.ts";

/**
 * Builds the router with all built-in routes.
 *
 * @example
 * ```ts ignore
 * const router = buildRouter(core);
 * ```
 */
export function buildRouter(core: Core): Router<Handler<Core>> {
  // Routes that refuse API keys refuse them first (routes/key_refusal.ts).
  const r = new KeyAwareRouter();
  healthRoutes(r);
  adminRoutes(r);
  apiKeyRoutes(r);
  authRoutes(r);
  signInRoutes(r);
  oauth2Routes(r);
  impersonationRoutes(r);
  dashboardRoutes(r);
  schemaRoutes(r);
  const records = core.records;
  recordRoutes(r, records);
  batchRoutes(r);
  fileRoutes(r, records);
  logRoutes(r);
  ruleRoutes(r);
  realtimeRoutes(r);
  settingsRoutes(r);
  backupRoutes(r);
  accountRoutes(r);
  oidcDiscoveryRoutes(r);
  // The description lists what the router holds when it is asked for.
  openApiRoutes(r, () => r.routes());
  return r;
}
