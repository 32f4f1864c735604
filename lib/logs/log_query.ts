/**
 * The logs API's query: its parameters, parsed and checked, and the page it
 * answers with.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { isLevel, LEVELS, type LogEntry } from "./types.ts";

/** Parameters of the logs API. */
export interface LogQuery {
  limit: number;
  after?: string;
  level?: string;
  min_level?: string;
  search?: string;
  start_date?: string;
  end_date?: string;
  type?: string;
}

/** A page of log entries. */
export interface LogPage {
  items: LogEntry[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
}

const KNOWN = new Set([
  "limit",
  "after",
  "level",
  "min_level",
  "search",
  "start_date",
  "end_date",
  "type",
]);

function bad(message: string): never {
  throw new MoonbaseError("invalid", `Cannot read logs: ${message}`);
}

function isoOrFail(v: string, name: string): string {
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) {
    bad(`${name} must be an ISO 8601 date`);
  }
  return new Date(t).toISOString();
}

/**
 * Parses the logs API query; anything unknown or malformed is a 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseLogQuery } from "moonbase/lib/logs/store.ts";
 * const q = parseLogQuery(new URLSearchParams("limit=10&min_level=warn"));
 * assert.ok(q.limit === 10 && q.min_level === "warn");
 * ```
 */
export function parseLogQuery(p: URLSearchParams): LogQuery {
  for (const k of p.keys()) {
    if (!KNOWN.has(k)) bad(`unknown parameter "${k.slice(0, 64)}"`);
  }
  const q: LogQuery = { limit: 50 };
  const limit = p.get("limit");
  if (limit !== null) {
    if (!/^\d{1,5}$/.test(limit) || Number(limit) < 1 || Number(limit) > 1000) {
      bad("limit must be 1-1000");
    }
    q.limit = Number(limit);
  }
  for (const key of ["level", "min_level"] as const) {
    const v = p.get(key);
    if (v !== null && v !== "") {
      if (!isLevel(v)) bad(`${key} must be one of ${LEVELS.join(", ")}`);
      q[key] = v;
    }
  }
  const type = p.get("type");
  if (type !== null && type !== "") {
    if (type !== "request" && type !== "app") {
      bad("type must be request or app");
    }
    q.type = type;
  }
  const after = p.get("after");
  if (after !== null && after !== "") {
    if (!/^[0-9a-f]{12}-[0-9a-f]{6,8}-[A-Za-z0-9]{6}$/.test(after)) {
      bad("after is not a cursor from this list");
    }
    q.after = after;
  }
  const search = p.get("search");
  if (search !== null && search !== "") {
    if (search.length > 200) bad("search is longer than 200 characters");
    q.search = search;
  }
  for (const key of ["start_date", "end_date"] as const) {
    const v = p.get(key);
    if (v !== null && v !== "") q[key] = isoOrFail(v, key);
  }
  return q;
}
