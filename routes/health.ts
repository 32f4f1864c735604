/**
 * `GET /api/v1/health`: status, uptime, version, the database's kind
 * (`sqlite` or `postgres`) and its state —
 * `ok`, `unavailable` (cannot be reached, or no answer within a second) or
 * `full` (writes fail for lack of space); 503 unless `ok`.
 *
 * @module
 */

import { type Core, VERSION } from "../lib/core.ts";
import type { DatabaseState } from "../lib/db/storage.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";

const PROBLEM: Record<DatabaseState, string> = {
  ok: "",
  unavailable: "Database is not answering",
  full: "Database cannot save: the disk is full",
};

async function databaseState(core: Core): Promise<DatabaseState> {
  // SQLite with no transaction open answers at once: no timer needed.
  const now = core.storage.stateNow?.();
  if (now !== undefined) return now;
  const state = core.storage.state().catch((): DatabaseState => "unavailable");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<DatabaseState>((r) =>
    timer = setTimeout(() => r("unavailable"), 1000)
  );
  try {
    return await Promise.race([state, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the health route. */
export function healthRoutes(r: Router<Handler<Core>>): void {
  r.add("GET", "/api/v1/health", async ({ app }) => {
    const database = await databaseState(app);
    const up = database === "ok";
    const data = {
      status: up ? "ok" : database === "full" ? "degraded" : "down",
      uptime: Math.floor((Date.now() - app.startedAt) / 1000),
      version: VERSION,
      database,
      // The kind only ("sqlite" | "postgres"), never a connection string.
      database_kind: app.storage.dialect.name,
    };
    const headers: Record<string, string> = { "cache-control": "no-store" };
    if (!up) headers["retry-after"] = "2";
    return json(up ? 200 : 503, data, headers, PROBLEM[database]);
  });
}
