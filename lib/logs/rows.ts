/**
 * Log rows as stored (`mb_logs` columns in order), log ids, and packed
 * request entries: a request adds eleven plain values to one flat array and
 * its row (id, time, level name, message) is made later, by the writer.
 * This keeps the request path free of per-entry objects.
 *
 * @module
 */

import { randomToken } from "../ids.ts";
import { type Level, levelRank, LEVELS, type LogEntry } from "./types.ts";

/** The `mb_logs` columns, in row order. */
export const LOG_COLUMNS = [
  "id",
  "time",
  "level",
  "level_n",
  "type",
  "message",
  "method",
  "path",
  "status",
  "duration_ms",
  "ip",
  "auth_id",
  "auth_entity",
  "request_id",
  "data",
] as const;

/** One stored row, values in `LOG_COLUMNS` order. */
export type LogRow = (string | number | null)[];

/**
 * Packed request entries: per entry, in this order, the time in ms, its
 * sequence number (`nextSeq()`), the level's rank, method, path, status,
 * duration in ms, client IP, auth id, auth entity and request id.
 */
export type PackedRequests = (string | number | null)[];

/** Values per entry in `PackedRequests`. */
export const PACKED_FIELDS = 11;

/** This process's id tag (a writer thread is given it with each batch). */
export const INSTANCE = randomToken(6).replace(/[^A-Za-z0-9]/g, "0").slice(
  0,
  6,
);
let seq = 0, lastMs = -1, lastHead = "";

/**
 * The next sequence number of a log id: one sequence for every entry of the
 * process, so entries of the same millisecond keep the order they came in.
 */
export function nextSeq(): number {
  return seq = (seq + 1) % 0x100000000;
}

function idOf(ms: number, n: number, instance: string): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastHead = ms.toString(16).padStart(12, "0");
  }
  return `${lastHead}-${n.toString(16).padStart(8, "0")}-${instance}`;
}

/**
 * A log id that sorts by time: 12 hex digits of the entry's milliseconds, a
 * sequence, and this thread's random tag (cheaper than a UUID per entry;
 * time filters and pruning use id ranges, so no time index).
 *
 * @example
 * ```ts
 * import { logId, logIdFloor } from "moonbase/lib/logs/rows.ts";
 * const id = logId(1_700_000_000_000);
 * console.assert(id.startsWith(logIdFloor(1_700_000_000_000)));
 * ```
 */
export function logId(ms: number = Date.now()): string {
  return idOf(ms, nextSeq(), INSTANCE);
}

let isoMs = -1, iso = "";

/**
 * The ISO time of `ms` (the last one is cached: entries come in bursts).
 *
 * @example
 * ```ts
 * import { isoOf } from "moonbase/lib/logs/rows.ts";
 * console.assert(isoOf(0) === "1970-01-01T00:00:00.000Z");
 * ```
 */
export function isoOf(ms: number): string {
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}

/**
 * The smallest log id of a moment (for range conditions).
 *
 * @example
 * ```ts
 * import { logIdFloor } from "moonbase/lib/logs/rows.ts";
 * console.assert(logIdFloor(0) === "000000000000");
 * ```
 */
export function logIdFloor(ms: number): string {
  return ms.toString(16).padStart(12, "0");
}

/**
 * The stored row of an entry.
 *
 * @example
 * ```ts
 * import { entryRow, LOG_COLUMNS } from "moonbase/lib/logs/rows.ts";
 * const row = entryRow({
 *   id: "x", time: "2026-01-01T00:00:00.000Z", level: "warn", type: "app",
 *   message: "m", method: null, path: null, status: null, duration_ms: null,
 *   ip: null, auth_id: null, auth_entity: null, request_id: null,
 *   data: { a: 1 },
 * });
 * console.assert(row.length === LOG_COLUMNS.length && row[3] === 3);
 * console.assert(row[14] === '{"a":1}');
 * ```
 */
export function entryRow(e: LogEntry): LogRow {
  return [
    e.id,
    e.time,
    e.level,
    levelRank(e.level),
    e.type,
    e.message,
    e.method,
    e.path,
    e.status,
    e.duration_ms,
    e.ip,
    e.auth_id,
    e.auth_entity,
    e.request_id,
    e.data ? JSON.stringify(e.data) : null,
  ];
}

/**
 * Appends the rows of packed request entries to `out` (ids are made here,
 * with the tag of the process that packed them).
 *
 * @example
 * ```ts
 * import { unpackRequests, type LogRow } from "moonbase/lib/logs/rows.ts";
 * const out: LogRow[] = [];
 * const packed = [0, 7, 2, "GET", "/x", 200, 1.5, "::1", null, null, "r1"];
 * unpackRequests(packed, out, "abcdef");
 * console.assert(out[0][0] === "000000000000-00000007-abcdef");
 * console.assert(out[0][5] === "GET /x 200" && out[0][2] === "info");
 * ```
 */
export function unpackRequests(
  packed: Readonly<PackedRequests>,
  out: LogRow[],
  instance: string = INSTANCE,
): void {
  for (let i = 0; i + PACKED_FIELDS <= packed.length; i += PACKED_FIELDS) {
    const ms = packed[i] as number, rank = packed[i + 2] as number;
    const method = packed[i + 3], path = packed[i + 4] as string;
    const status = packed[i + 5];
    out.push([
      idOf(ms, packed[i + 1] as number, instance),
      isoOf(ms),
      LEVELS[rank] ?? "info",
      rank,
      "request",
      `${method} ${path.slice(0, 300)} ${status}`,
      method,
      path,
      status,
      packed[i + 6],
      packed[i + 7],
      packed[i + 8],
      packed[i + 9],
      packed[i + 10],
      null,
    ]);
  }
}

/** A stored row as the entry the logs API returns. */
export function rowEntry(r: Readonly<LogRow>): LogEntry {
  const data = r[14];
  return {
    id: r[0] as string,
    time: r[1] as string,
    level: r[2] as Level,
    type: r[4] as LogEntry["type"],
    message: r[5] as string,
    method: r[6] as string | null,
    path: r[7] as string | null,
    status: r[8] as number | null,
    duration_ms: r[9] as number | null,
    ip: r[10] as string | null,
    auth_id: r[11] as string | null,
    auth_entity: r[12] as string | null,
    request_id: r[13] as string | null,
    data: typeof data === "string" ? JSON.parse(data) : null,
  };
}
