/**
 * The log store's reads over any source of rows: a page of entries (rows
 * and blocks merged newest first), request counts per time bucket, one
 * entry by id. On SQLite they run on a thread of their own
 * (reader_worker.ts, its own connection to the log file), so an admin's
 * search over millions of entries holds up no request; on PostgreSQL the
 * statements run in the database and the blocks are read here in short
 * slices (block_read.ts).
 *
 * @module
 */

import type { Row, SqlValue } from "../db/storage.ts";
import { LOG_COLUMNS, logIdFloor, type LogRow, rowEntry } from "./rows.ts";
import { isLevel, levelRank, type LogEntry } from "./types.ts";
import type { LogPage, LogQuery } from "./log_query.ts";
import { foldText } from "../rules/text_fold.ts";
import {
  blockEntries,
  blockEntryById,
  type BlockFilter,
  countBlockRequests,
  newestFirst,
} from "./block_read.ts";

/** Where log reads get their rows. */
export interface LogSource {
  /** PostgreSQL (its text search is written differently: see `readPage`). */
  readonly pg: boolean;
  query(sql: string, params?: SqlValue[]): Promise<Row[]>;
}

/** Reads a page, newest first. */
export async function readPage(src: LogSource, q: LogQuery): Promise<LogPage> {
  const conds: string[] = [];
  const params: SqlValue[] = [];
  const add = (sql: string, ...values: SqlValue[]) => {
    conds.push(sql);
    params.push(...values);
  };
  // One filter for rows (SQL below) and blocks (block_read.ts).
  const f: BlockFilter = { after: q.after };
  if (q.level && isLevel(q.level)) f.rank = levelRank(q.level);
  if (q.min_level && isLevel(q.min_level)) {
    f.minRank = levelRank(q.min_level);
  }
  if (q.start_date) f.startMs = Date.parse(q.start_date);
  if (q.end_date) f.endMs = Date.parse(q.end_date);
  if (q.search) f.search = foldText(q.search);
  if (f.after) add(`"id" < ?`, f.after);
  // Request rows store no level name: filter on the rank.
  if (f.rank !== undefined) add(`"level_n" = ?`, f.rank);
  if (f.minRank !== undefined) add(`"level_n" >= ?`, f.minRank);
  if (q.type) add(`"type" = ?`, q.type);
  if (f.startMs !== undefined) add(`"id" >= ?`, logIdFloor(f.startMs));
  if (f.endMs !== undefined) add(`"id" < ?`, logIdFloor(f.endMs + 1));
  if (f.search) {
    // Folded as blocks are (block_read.ts): mb_fold is fold
    // (lib/rules/text_fold.ts), registered on every SQLite connection that
    // reads logs (reader_worker.ts) and a function on PostgreSQL.
    const has = (x: string) =>
      src.pg
        ? `strpos(mb_fold(${x}), ?::text) > 0`
        : `instr(mb_fold(${x}), ?) > 0`;
    // A request row's message is made from its method, path and status.
    add(
      `(${
        has(
          `CASE WHEN "message" = '' AND "type" = 'request' THEN "method" || ' ' || "path" || ' ' || "status" ELSE "message" END`,
        )
      } OR ${has(`COALESCE("path", '')`)})`,
      f.search,
      f.search,
    );
  }
  const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
  const rows = await src.query(
    `SELECT * FROM "mb_logs"${where} ORDER BY "id" DESC LIMIT ${q.limit + 1}`,
    params,
  );
  let all = rows.map((r) =>
    rowEntry(LOG_COLUMNS.map((c) => r[c] as LogRow[number]))
  );
  if (q.type !== "app") {
    // Rows fill the page down to their oldest: older block entries cannot count.
    if (rows.length > q.limit) f.above = all[all.length - 1].id;
    const more = await blockEntries(src, f, q.limit + 1);
    if (more.length > 0) {
      all = all.concat(more).sort(newestFirst);
    }
  }
  const has_more = all.length > q.limit;
  const items = all.slice(0, q.limit);
  return {
    items,
    items_count: items.length,
    limit: q.limit,
    has_more,
    cursor: has_more && items.length ? items[items.length - 1].id : null,
  };
}

/** Request counts of one bucket. */
export interface BucketCounts {
  requests: number;
  /** Requests answered 5xx. */
  errors: number;
  /** Requests answered 4xx. */
  warnings: number;
}

/** A time range cut into `count` buckets of `width` ms from `from`. */
export interface CountRange {
  start: number;
  end: number;
  from: number;
  width: number;
  count: number;
}

/**
 * Counts requests per bucket: one SQL statement over the rows (ids begin
 * with the time, so a bucket is an id range on the primary key), then the
 * blocks in range from their numbers.
 */
export async function countRequests(
  src: LogSource,
  r: CountRange,
): Promise<BucketCounts[]> {
  const values: string[] = [];
  const params: SqlValue[] = [];
  for (let i = 0; i < r.count; i++) {
    const lo = Math.max(r.start, r.from + i * r.width);
    const hi = Math.min(r.end, r.from + (i + 1) * r.width);
    values.push("(CAST(? AS INTEGER), ?, ?)");
    params.push(i, logIdFloor(lo), logIdFloor(hi));
  }
  const sql = `WITH "b" ("i", "lo", "hi") AS (VALUES ${values.join(", ")}) ` +
    `SELECT "b"."i" AS "i", COUNT("l"."id") AS "requests", ` +
    `SUM(CASE WHEN "l"."status" >= 500 THEN 1 ELSE 0 END) AS "errors", ` +
    `SUM(CASE WHEN "l"."status" >= 400 AND "l"."status" < 500 THEN 1 ELSE 0 END) AS "warnings" ` +
    `FROM "b" LEFT JOIN "mb_logs" "l" ON "l"."id" >= "b"."lo" AND "l"."id" < "b"."hi" AND "l"."type" = 'request' ` +
    `GROUP BY "b"."i" ORDER BY "b"."i"`;
  const found = await src.query(sql, params);
  const byIndex = new Map(found.map((row) => [Number(row.i), row]));
  const buckets: BucketCounts[] = [];
  for (let i = 0; i < r.count; i++) {
    const row = byIndex.get(i);
    buckets.push({
      requests: Number(row?.requests ?? 0),
      errors: Number(row?.errors ?? 0),
      warnings: Number(row?.warnings ?? 0),
    });
  }
  // Request entries written as blocks: counted from their numbers.
  await countBlockRequests(src, r.start, r.end, r.from, r.width, buckets);
  return buckets;
}

/** The entry with this id (a row or a block's), if there is one. */
export async function entryById(
  src: LogSource,
  id: string,
): Promise<LogEntry | undefined> {
  const rows = await src.query(`SELECT * FROM "mb_logs" WHERE "id" = ?`, [id]);
  const r = rows[0];
  if (r) return rowEntry(LOG_COLUMNS.map((c) => r[c] as LogRow[number]));
  return await blockEntryById(src, id);
}
