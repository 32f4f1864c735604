/**
 * Request counts over time for the dashboard's rate chart
 * (`GET /api/v1/sys/logs/stats`), and one entry by id
 * (`GET /api/v1/sys/logs/:id`). Counting runs in SQL on the log store's own
 * connection (log_read.ts): one index range per bucket on the id (ids begin
 * with the time), so the work is bounded by the bucket count and the rows in
 * range; entries written as blocks are counted from the blocks in range.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { LogStore } from "./store.ts";
import type { LogEntry } from "./types.ts";

/** Most buckets one answer may have. */
export const MAX_BUCKETS = 200;
/** Buckets when the query names none. */
export const DEFAULT_BUCKETS = 60;
/** The range when the query names no start (ending now, or at `end_date`). */
export const DEFAULT_RANGE_MS = 3_600_000;
/** The widest range one answer may cover (a year and a bit). */
export const MAX_RANGE_MS = 400 * 86_400_000;

/** A validated stats query (milliseconds since the epoch). */
export interface StatsQuery {
  start: number;
  end: number;
  buckets: number;
}

/** One bucket: its start time and what happened in it. */
export interface StatsBucket {
  time: string;
  requests: number;
  /** Requests answered 5xx. */
  errors: number;
  /** Requests answered 4xx. */
  warnings: number;
}

/** The stats answer. */
export interface LogStats {
  from: string;
  to: string;
  bucket_seconds: number;
  buckets: StatsBucket[];
}

const KNOWN = new Set(["start_date", "end_date", "buckets"]);

function bad(message: string): never {
  throw new MoonbaseError("invalid", `Cannot count requests: ${message}`);
}

function dateOrFail(v: string, name: string): number {
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) {
    bad(`${name} must be an ISO 8601 date`);
  }
  return t;
}

/**
 * Parses `start_date`, `end_date` and `buckets`; anything unknown or out of
 * range is a 400 in words.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseStatsQuery } from "moonbase/lib/logs/stats.ts";
 * const q = parseStatsQuery(new URLSearchParams("buckets=10"), 3_600_000);
 * assert.ok(q.buckets === 10 && q.start === 0 && q.end === 3_600_000);
 * ```
 */
export function parseStatsQuery(
  p: URLSearchParams,
  now: number = Date.now(),
): StatsQuery {
  for (const k of p.keys()) {
    if (!KNOWN.has(k)) bad(`unknown parameter "${k.slice(0, 64)}"`);
  }
  const b = p.get("buckets");
  let buckets = DEFAULT_BUCKETS;
  if (b !== null && b !== "") {
    if (!/^\d{1,4}$/.test(b) || Number(b) < 1 || Number(b) > MAX_BUCKETS) {
      bad(`buckets must be a whole number from 1 to ${MAX_BUCKETS}`);
    }
    buckets = Number(b);
  }
  const s = p.get("start_date"), e = p.get("end_date");
  const end = e ? dateOrFail(e, "end_date") : now;
  const start = s ? dateOrFail(s, "start_date") : end - DEFAULT_RANGE_MS;
  if (start >= end) bad("start_date must be before end_date");
  if (end - start > MAX_RANGE_MS) {
    bad("the range may cover at most 400 days");
  }
  return { start, end, buckets };
}

/** Bucket widths that read well on a time axis, in seconds. */
const STEPS = [
  1,
  2,
  5,
  10,
  15,
  30,
  60,
  120,
  300,
  600,
  900,
  1800,
  3600,
  7200,
  10800,
  21600,
  43200,
  86400,
];

/**
 * The bucket layout: the smallest readable width (a multiple of a day past
 * one day) that covers the range within `q.buckets` buckets — aligned to
 * that width when the alignment still fits, else starting at the start.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bucketLayout } from "moonbase/lib/logs/stats.ts";
 * const l = bucketLayout({ start: 0, end: 3_600_000, buckets: 60 });
 * assert.ok(l.width === 60_000 && l.from === 0 && l.count === 60);
 * const m = bucketLayout({ start: 30_000, end: 3_630_000, buckets: 60 });
 * assert.ok(m.width === 60_000 && m.from === 30_000 && m.count === 60);
 * ```
 */
export function bucketLayout(
  q: StatsQuery,
): { from: number; width: number; count: number } {
  const fit = (width: number) => {
    for (const from of [Math.floor(q.start / width) * width, q.start]) {
      const count = Math.ceil((q.end - from) / width);
      if (count <= q.buckets) return { from, width, count };
    }
    return undefined;
  };
  for (const s of STEPS) {
    const l = fit(s * 1000);
    if (l) return l;
  }
  for (let days = 2;; days++) {
    const l = fit(days * 86_400_000);
    if (l) return l;
  }
}

/**
 * Counts requests per bucket (log_read.ts `countRequests`: one SQL
 * statement on the log store, then the blocks in range; SQLite: on the
 * log store's reader thread).
 */
export async function requestStats(
  store: LogStore,
  q: StatsQuery,
): Promise<LogStats> {
  const { from, width, count } = bucketLayout(q);
  const counts = await store.countRequests({
    start: q.start,
    end: q.end,
    from,
    width,
    count,
  });
  return {
    from: new Date(from).toISOString(),
    to: new Date(q.end).toISOString(),
    bucket_seconds: width / 1000,
    buckets: counts.map((c, i) => ({
      time: new Date(from + i * width).toISOString(),
      ...c,
    })),
  };
}

/** What a log id looks like (anything else cannot name an entry). */
const LOG_ID = /^[0-9a-f]{12}-[0-9a-f]{6,8}-[A-Za-z0-9]{6}$/;

/** One entry by id; a 404 in words when there is none. */
export async function logEntryById(
  store: LogStore,
  id: string,
): Promise<LogEntry> {
  const found = LOG_ID.test(id) ? await store.entry(id) : undefined;
  if (!found) {
    throw new MoonbaseError(
      "not_found",
      "Cannot find log entry: no entry has this id (it may have been pruned)",
    );
  }
  return found;
}
