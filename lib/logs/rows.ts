/**
 * Log rows as stored (`mb_logs` columns in order), log ids, and the rows
 * of packed request entries (packed.ts): a request's row is made by the
 * writer, which keeps the request path free of per-entry objects. A request
 * row stores its time, level name and message
 * as empty strings: they follow from its id, level rank, method, path and
 * status, and are made again when the row is read (`rowEntry`), so the
 * writer binds and stores a third fewer bytes per request.
 *
 * @module
 */

import { randomToken } from "../ids.ts";
import { type Level, levelRank, LEVELS, type LogEntry } from "./types.ts";
import { type PackedChunk, readChunk } from "./packed.ts";

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

/** This process's id tag (a writer thread is given it with each batch). */
export const INSTANCE = randomToken(6).replace(/[^A-Za-z0-9]/g, "0").slice(
  0,
  6,
);
// Process-wide on purpose: log ids are unique and ordered per process (one tag).
let seq = 0, lastMs = -1, lastHead = "";

/**
 * The next sequence number of a log id: one sequence for every entry of the
 * process, so entries of the same millisecond keep the order they came in.
 */
export function nextSeq(): number {
  return seq = (seq + 1) % 0x100000000;
}

/**
 * The id of the entry of `ms`, sequence `n`, written by the process tagged
 * `instance`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { logIdOf } from "moonbase/lib/logs/rows.ts";
 * assert.ok(logIdOf(255, 16, "abcdef") === "0000000000ff-00000010-abcdef");
 * ```
 */
export function logIdOf(ms: number, n: number, instance: string): string {
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
 * import assert from "node:assert/strict";
 * import { logId, logIdFloor } from "moonbase/lib/logs/rows.ts";
 * const id = logId(1_700_000_000_000);
 * assert.ok(id.startsWith(logIdFloor(1_700_000_000_000)));
 * ```
 */
export function logId(ms: number = Date.now()): string {
  return logIdOf(ms, nextSeq(), INSTANCE);
}

let isoMs = -1, iso = ""; // a pure cache of the last conversion

/**
 * The ISO time of `ms` (the last one is cached: entries come in bursts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isoOf } from "moonbase/lib/logs/rows.ts";
 * assert.ok(isoOf(0) === "1970-01-01T00:00:00.000Z");
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
 * import assert from "node:assert/strict";
 * import { logIdFloor } from "moonbase/lib/logs/rows.ts";
 * assert.ok(logIdFloor(0) === "000000000000");
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
 * import assert from "node:assert/strict";
 * import { entryRow, LOG_COLUMNS } from "moonbase/lib/logs/rows.ts";
 * const row = entryRow({
 *   id: "x", time: "2026-01-01T00:00:00.000Z", level: "warn", type: "app",
 *   message: "m", method: null, path: null, status: null, duration_ms: null,
 *   ip: null, auth_id: null, auth_entity: null, request_id: null,
 *   data: { a: 1 },
 * });
 * assert.ok(row.length === LOG_COLUMNS.length && row[3] === 3);
 * assert.ok(row[14] === '{"a":1}');
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
 * Appends the stored rows of packed request entries to `out` (ids are made
 * here, with the tag of the process that packed them; time, level name and
 * message are left empty for `rowEntry` to make).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rowEntry, unpackRequests, type LogRow } from "moonbase/lib/logs/rows.ts";
 * import { chunkOf } from "moonbase/lib/logs/packed.ts";
 * const out: LogRow[] = [];
 * const packed = chunkOf([[0, 7, 2, "GET", "/x", 200, 1.5, "::1", null, null, "r1"]]);
 * unpackRequests(packed, out, "abcdef");
 * assert.ok(out[0][0] === "000000000000-00000007-abcdef");
 * assert.ok(out[0][5] === "" && out[0][3] === 2);
 * const e = rowEntry(out[0]);
 * assert.ok(e.message === "GET /x 200" && e.level === "info");
 * assert.ok(e.time === "1970-01-01T00:00:00.000Z");
 * ```
 */
export function unpackRequests(
  packed: PackedChunk,
  out: LogRow[],
  instance: string = INSTANCE,
): void {
  requestParams(packed, instance, (p) => {
    // The row of REQUEST_ROW_SQL: its ten parameters among the shared values.
    for (let i = 0; i < p.length; i += 10) {
      out.push([
        p[i],
        "",
        "",
        p[i + 1],
        "request",
        "",
        ...p.slice(i + 2, i + 10),
        null,
      ] as LogRow);
    }
  });
}

/**
 * One request row of an INSERT: its ten parameters (`requestParams`) and the
 * values every request row shares, written as literals.
 */
export const REQUEST_ROW_SQL =
  "(?, '', '', ?, 'request', '', ?, ?, ?, ?, ?, ?, ?, ?, NULL)";

/**
 * Calls `each` with the parameters of up to `per` packed entries at a time,
 * for as many `REQUEST_ROW_SQL` rows (the same array each time, refilled):
 * no row arrays in between.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestParams } from "moonbase/lib/logs/rows.ts";
 * import { chunkOf } from "moonbase/lib/logs/packed.ts";
 * const packed = chunkOf([[0, 7, 2, "GET", "/x", 200, 1.5, "::1", null, null, "r1"]]);
 * const seen: unknown[][] = [];
 * requestParams(packed, "abcdef", (p) => seen.push([...p]));
 * assert.ok(seen.length === 1 && seen[0].length === 10);
 * assert.ok(seen[0][0] === "000000000000-00000007-abcdef");
 * assert.ok(seen[0][1] === 2 && seen[0][9] === "r1" && seen[0][7] === null);
 * ```
 */
export function requestParams(
  packed: PackedChunk,
  instance: string,
  each: (params: unknown[]) => void,
  per = 100,
): void {
  const params: unknown[] = [];
  readChunk(packed, (n, i, s) => {
    params.push(
      logIdOf(n[i], n[i + 1], instance),
      n[i + 2],
      s[0],
      s[1],
      n[i + 3],
      n[i + 4],
      s[2],
      s[3],
      s[4],
      s[5],
    );
    if (params.length === per * 10) {
      each(params);
      params.length = 0;
    }
  });
  if (params.length > 0) each(params);
}

/**
 * The message of a request entry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestMessage } from "moonbase/lib/logs/rows.ts";
 * assert.ok(requestMessage("GET", "/x", 404) === "GET /x 404");
 * ```
 */
export function requestMessage(
  method: unknown,
  path: unknown,
  status: unknown,
): string {
  return `${method} ${String(path).slice(0, 300)} ${status}`;
}

function numberOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

/**
 * A stored row as the entry the logs API returns (a request row's time,
 * level name and message are made from its other columns).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { entryRow, rowEntry } from "moonbase/lib/logs/rows.ts";
 * const e = {
 *   id: "x", time: "2026-01-01T00:00:00.000Z", level: "warn" as const,
 *   type: "app" as const, message: "m", method: null, path: null,
 *   status: null, duration_ms: null, ip: null, auth_id: null,
 *   auth_entity: null, request_id: null, data: { a: 1 },
 * };
 * assert.ok(JSON.stringify(rowEntry(entryRow(e))) === JSON.stringify(e));
 * ```
 */
export function rowEntry(r: Readonly<LogRow>): LogEntry {
  const id = String(r[0]), rank = Number(r[3]), data = r[14];
  const request = r[4] === "request";
  return {
    id,
    time: r[1] ? String(r[1]) : isoOf(parseInt(id.slice(0, 12), 16)),
    level: (r[2] || (LEVELS[rank] ?? "info")) as Level,
    type: r[4] as LogEntry["type"],
    message: request && r[5] === ""
      ? requestMessage(r[6], r[7], r[8])
      : String(r[5]),
    method: r[6] as string | null,
    path: r[7] as string | null,
    status: numberOrNull(r[8]),
    duration_ms: numberOrNull(r[9]),
    ip: r[10] as string | null,
    auth_id: r[11] as string | null,
    auth_entity: r[12] as string | null,
    request_id: r[13] as string | null,
    data: typeof data === "string" ? JSON.parse(data) : null,
  };
}
