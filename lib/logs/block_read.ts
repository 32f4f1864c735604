/**
 * Reading request log blocks (block.ts) beside the rows of `mb_logs`: the
 * entries of a logs page, one entry by id, and request counts per time
 * bucket. Blocks are read newest first a few at a time (their `hi`, the
 * id of their newest entry, is indexed) and filtered on their typed
 * arrays; only the entries a page returns become objects.
 *
 * @module
 */

import type { Row, SqlValue } from "../db/storage.ts";
import { type BlockView, decodeBlock } from "./block.ts";
import { logIdFloor } from "./rows.ts";
import type { LogEntry } from "./types.ts";

/** What the block readers need of a storage. */
export interface BlockSource {
  query(sql: string, params?: SqlValue[]): Promise<Row[]>;
}

/** The block table's statement. */
export const BLOCK_TABLE_SQL = (
  blob: string,
  text: string,
  int: string,
): string =>
  `CREATE TABLE IF NOT EXISTS "mb_log_blocks" ("lo" ${text} PRIMARY KEY, "hi" ${text} NOT NULL, "n" ${int} NOT NULL, "data" ${blob} NOT NULL)`;

/** A filter on request entries (block entries are all requests). */
export interface BlockFilter {
  /** Ids below this one only. */
  after?: string;
  /** Times from this ms on. */
  startMs?: number;
  /** Times up to and including this ms. */
  endMs?: number;
  rank?: number;
  minRank?: number;
  /** Folded text (`fold`, lib/rules/text_fold.ts) that "method path status" contains. */
  search?: string;
  /** Ids above this one only (the oldest row of a full page). */
  above?: string;
}

/** Orders log entries newest first (by id). */
export function newestFirst(a: LogEntry, b: LogEntry): number {
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** Milliseconds of block reading before the event loop gets a turn (other requests). */
const TURN_MS = 10;

/** Blocks per read. */
const PAGE = 4;

function matcher(v: BlockView, f: BlockFilter): (i: number) => boolean {
  const afterMs = f.after ? parseInt(f.after.slice(0, 12), 16) : Infinity;
  return (i) => {
    const ms = v.ms[i];
    if (f.startMs !== undefined && ms < f.startMs) return false;
    if (f.endMs !== undefined && ms > f.endMs) return false;
    if (ms > afterMs) return false;
    if (ms === afterMs && !(v.id(i) < f.after!)) return false;
    if (f.rank !== undefined && v.rank[i] !== f.rank) return false;
    if (f.minRank !== undefined && v.rank[i] < f.minRank) return false;
    if (
      f.search !== undefined && !v.searchText(i).includes(f.search)
    ) {
      return false;
    }
    return true;
  };
}

/** Blocks that may hold entries of `f`, newest first, `PAGE` per read. */
async function* blocks(
  db: BlockSource,
  f: BlockFilter,
): AsyncGenerator<{ hi: string; view: BlockView | undefined }> {
  let below: string | undefined, turn = performance.now();
  for (;;) {
    const conds: string[] = [], params: SqlValue[] = [];
    if (below !== undefined) conds.push(`"hi" < ?`), params.push(below);
    if (f.after) conds.push(`"lo" < ?`), params.push(f.after);
    if (f.above) conds.push(`"hi" > ?`), params.push(f.above);
    if (f.startMs !== undefined) {
      conds.push(`"hi" >= ?`), params.push(logIdFloor(f.startMs));
    }
    if (f.endMs !== undefined) {
      conds.push(`"lo" < ?`), params.push(logIdFloor(f.endMs + 1));
    }
    const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
    const found = await db.query(
      `SELECT "hi", "data" FROM "mb_log_blocks"${where} ORDER BY "hi" DESC LIMIT ${PAGE}`,
      params,
    );
    for (const r of found) {
      yield { hi: String(r.hi), view: decodeBlock(r.data) };
      if (performance.now() - turn > TURN_MS) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        turn = performance.now();
      }
    }
    if (found.length < PAGE) return;
    below = String(found[found.length - 1].hi);
  }
}

/**
 * The newest `count` block entries matching `f`, newest first. Blocks are
 * read until the entries found newer than the next block's newest entry
 * number `count`: no unread block can then come before them.
 */
export async function blockEntries(
  db: BlockSource,
  f: BlockFilter,
  count: number,
): Promise<LogEntry[]> {
  // Entries, not views (a view would keep its whole block), and only those
  // that can still make the page: a block's ids share one tag, so they
  // order by time, then sequence.
  let found: LogEntry[] = [];
  for await (const { hi, view } of blocks(db, f)) {
    if (found.length >= count && found[count - 1].id > hi) break;
    if (!view) continue;
    const match = matcher(view, f);
    const hits: number[] = [];
    for (let i = 0; i < view.rows; i++) if (match(i)) hits.push(i);
    const { ms, seq } = view;
    hits.sort((a, b) => ms[b] - ms[a] || seq[b] - seq[a]);
    const last = found.length >= count ? found[count - 1].id : undefined;
    for (const i of hits.slice(0, count)) {
      if (last !== undefined && view.id(i) < last) break;
      found.push(view.entry(i));
    }
    found.sort(newestFirst);
    if (found.length > count) found = found.slice(0, count);
  }
  return found;
}

/** The block entry with this id, if a block holds it. */
export async function blockEntryById(
  db: BlockSource,
  id: string,
): Promise<LogEntry | undefined> {
  const rows = await db.query(
    `SELECT "data" FROM "mb_log_blocks" WHERE "lo" <= ? AND "hi" >= ?`,
    [id, id],
  );
  for (const r of rows) {
    const v = decodeBlock(r.data);
    if (!v) continue;
    for (let i = 0; i < v.rows; i++) if (v.id(i) === id) return v.entry(i);
  }
  return undefined;
}

/** Adds `counts[i]` += 1 for each block entry in bucket `i` (and its 4xx / 5xx). */
export async function countBlockRequests(
  db: BlockSource,
  start: number,
  end: number,
  from: number,
  width: number,
  buckets: { requests: number; errors: number; warnings: number }[],
): Promise<void> {
  for await (
    const { view } of blocks(db, { startMs: start, endMs: end - 1 })
  ) {
    if (!view) continue;
    for (let i = 0; i < view.rows; i++) {
      const ms = view.ms[i];
      if (ms < start || ms >= end) continue;
      const b = buckets[Math.floor((ms - from) / width)];
      if (!b) continue;
      b.requests++;
      const status = view.status[i];
      if (status >= 500) b.errors++;
      else if (status >= 400) b.warnings++;
    }
  }
}
