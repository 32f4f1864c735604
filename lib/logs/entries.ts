/**
 * Log entries as the logger makes them (application entries with secrets
 * scrubbed, ids and times stamped) and as the console shows them.
 *
 * @module
 */

import { isoOf, logId } from "./rows.ts";
import type { Level, LogEntry } from "./types.ts";

const SECRET_KEY = /pass|secret|token|authorization|hash|cookie/i;

const COLORS: Record<Level, string> = {
  trace: "\x1b[90m",
  debug: "\x1b[36m",
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
};

/** Removes secret-looking keys (recursively) from log data. */
export function scrub(
  data: Record<string, unknown> | undefined,
): Record<string, unknown> | null {
  if (!data) return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    if (SECRET_KEY.test(k)) continue;
    out[k] = v && typeof v === "object" && !Array.isArray(v)
      ? scrub(v as Record<string, unknown>)
      : v;
  }
  return out;
}

/** An application entry (secret-looking keys of `data` removed). */
export function appEntry(
  level: Level,
  message: string,
  data: Record<string, unknown> | undefined,
): Omit<LogEntry, "id" | "time"> {
  return {
    level,
    type: "app",
    message,
    method: null,
    path: null,
    status: null,
    duration_ms: null,
    ip: null,
    auth_id: null,
    auth_entity: null,
    request_id: null,
    data: scrub(data),
  };
}

/**
 * The entry with its id, and its time unless it has one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { appEntry, stamped } from "moonbase/lib/logs/entries.ts";
 * const e = stamped({ ...appEntry("info", "m", undefined), time: "2026-01-01T00:00:00.000Z" });
 * assert.ok(e.id.startsWith((Date.parse(e.time)).toString(16).padStart(12, "0")));
 * ```
 */
export function stamped(
  entry: Omit<LogEntry, "id" | "time"> & { time?: string },
): LogEntry {
  const e = entry as LogEntry;
  if (e.time) {
    const ms = Date.parse(e.time);
    e.id = logId(Number.isNaN(ms) ? Date.now() : ms);
  } else {
    const ms = Date.now();
    e.time = isoOf(ms);
    e.id = logId(ms);
  }
  return e;
}

export function pretty(e: LogEntry, color: boolean): string {
  const level = e.level.toUpperCase().padEnd(5);
  const head = `${color ? `${COLORS[e.level]}${level}\x1b[0m` : level} ${
    e.time.slice(11, 23)
  }`;
  if (e.type === "request") {
    const error = e.data?.error;
    return `${head} ${e.method} ${e.path} ${e.status} ${
      e.duration_ms?.toFixed(1)
    }ms ${e.ip ?? ""}${e.auth_id ? ` ${e.auth_entity}/${e.auth_id}` : ""}${
      typeof error === "string" ? ` — ${error}` : ""
    }`;
  }
  return `${head} ${e.message}${e.data ? " " + JSON.stringify(e.data) : ""}`;
}
