/**
 * `GET /api/v1/health`: status, uptime, version and a database check
 * (503 when the database does not answer within a second).
 *
 * @module
 */

import { type Core, VERSION } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";

async function databaseUp(core: Core): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((r) =>
    timer = setTimeout(() => r(false), 1000)
  );
  try {
    return await Promise.race([
      core.storage.ping().then(() => true, () => false),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the health route. */
export function healthRoutes(r: Router<Handler<Core>>): void {
  r.add("GET", "/api/v1/health", async ({ app }) => {
    const up = await databaseUp(app);
    const data = {
      status: up ? "ok" : "down",
      uptime: Math.floor((Date.now() - app.startedAt) / 1000),
      version: VERSION,
      database: up ? "ok" : "down",
    };
    return json(
      up ? 200 : 503,
      data,
      { "cache-control": "no-store" },
      up ? "" : "Database is not answering",
    );
  });
}
