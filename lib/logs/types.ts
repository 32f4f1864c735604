/**
 * Log entries and levels.
 *
 * @module
 */

/** Levels, least to most severe. */
export const LEVELS = ["trace", "debug", "info", "warn", "error"] as const;

/** A level name. */
export type Level = typeof LEVELS[number];

/** A level's rank (trace 0 … error 4). */
export function levelRank(level: Level): number {
  return LEVELS.indexOf(level);
}

/** True when `v` names a level. */
export function isLevel(v: unknown): v is Level {
  return typeof v === "string" && (LEVELS as readonly string[]).includes(v);
}

/** One log entry (what the logs API returns). */
export interface LogEntry {
  id: string;
  time: string;
  level: Level;
  type: "request" | "app";
  message: string;
  method: string | null;
  path: string | null;
  status: number | null;
  duration_ms: number | null;
  ip: string | null;
  auth_id: string | null;
  auth_entity: string | null;
  request_id: string | null;
  data: Record<string, unknown> | null;
}
