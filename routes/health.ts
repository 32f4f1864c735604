/**
 * `GET /api/v1/health`: status, uptime, version, the database's kind
 * (`sqlite` or `postgres`) and its state —
 * `ok`, `unavailable` (cannot be reached, or no answer within a second) or
 * `full` (writes fail for lack of space); 503 unless `ok`. `files` is the
 * file store's state (`ok` or `unavailable`: an S3 store that did not
 * answer lately; from what its requests saw, never a request per call): a
 * store that is down makes the status `degraded`, still 200 (every request
 * but a file's is served, and the other instances share that store).
 * `backups` is the backup store's state, the same way (`--backups s3://…`;
 * a folder is always `ok`).
 * The database's state comes from `Storage.stateNow` when it knows (SQLite:
 * a `SELECT 1` at once; PostgreSQL: any answer of the last second), else
 * from a ping.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import { type Core, VERSION } from "../lib/core.ts";
import type { DatabaseState } from "../lib/db/storage.ts";
import type { Context } from "../lib/http/context.ts";

/** What these routes read of the app: the database and uptime. */
export type HealthHost = Pick<
  Core,
  "startedAt" | "storage" | "files" | "backups"
>;

const PROBLEM: Record<DatabaseState, string> = {
  ok: "",
  unavailable: "Database is not answering",
  full: "Database cannot save: the disk is full",
};

/**
 * The database's state, within a second (at once when the storage knows it
 * now: SQLite with no transaction open, PostgreSQL within a second of an
 * answer).
 */
function databaseState(
  core: HealthHost,
): DatabaseState | Promise<DatabaseState> {
  const now = core.storage.stateNow?.();
  if (now !== undefined) return now;
  return timed(core);
}

async function timed(core: HealthHost): Promise<DatabaseState> {
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

function answer(ctx: Context<HealthHost>, database: DatabaseState): Response {
  const { app } = ctx;
  const up = database === "ok";
  const files = app.files.backend.state();
  const backups = app.backups.place.state();
  const data = {
    status: up
      ? files === "ok" && backups === "ok" ? "ok" : "degraded"
      : database === "full"
      ? "degraded"
      : "down",
    uptime: Math.floor((Date.now() - app.startedAt) / 1000),
    version: VERSION,
    database,
    // The kind only ("sqlite" | "postgres"), never a connection string.
    database_kind: app.storage.dialect.name,
    files,
    // The kind only ("local" | "s3"), never the bucket or its endpoint.
    files_kind: app.files.backend.name === "local" ? "local" : "s3",
    backups,
    // The kind only ("local" | "s3"), never the bucket or its endpoint.
    backups_kind: app.backups.place.name === "local" ? "local" : "s3",
  };
  return up
    ? ctx.json(200, data, NO_STORE)
    : ctx.json(503, data, DOWN, PROBLEM[database]);
}

const NO_STORE = { "cache-control": "no-store" };
const DOWN = { "cache-control": "no-store", "retry-after": "2" };

/** Registers the health route. */
export function healthRoutes(r: RouteTarget<HealthHost>): void {
  r.add("GET", "/api/v1/health", (ctx) => {
    const state = databaseState(ctx.app);
    return typeof state === "string"
      ? answer(ctx, state)
      : state.then((s) => answer(ctx, s));
  });
}
