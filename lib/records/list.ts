/**
 * Listing records: keyset pages in SQL, with optional per-row checks for
 * rules the database cannot run (bounded scan).
 *
 * @module
 */

import type { Row, SqlValue, Storage } from "../db/storage.ts";
import { tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import { type OpOptions, selectList } from "./crud.ts";
import {
  afterWhere,
  cursorOf,
  encodeCursor,
  type ListOptions,
  orderBy,
  orderKeys,
} from "./list_query.ts";

/** A page of records. */
export interface ListResult {
  items: RecordData[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

/** Rows a page may scan when a per-row check hides rows. */
export const MAX_SCAN = 10_000;

/** Counts rows passing a per-row check, in id-ordered batches (exact, no row held twice). */
async function countKept(
  store: Storage,
  schema: EntitySchema,
  base: string,
  params: SqlValue[],
  keep: (r: RecordData) => boolean | Promise<boolean>,
): Promise<number> {
  let n = 0, after: string | undefined;
  const table = tableOf(schema.name);
  while (true) {
    const cond = after === undefined
      ? base
      : `${base ? `${base} AND` : " WHERE"} "id" > ?`;
    const rows = await store.query(
      `SELECT ${
        selectList(schema)
      } FROM ${table}${cond} ORDER BY "id" LIMIT 1000`,
      after === undefined ? params : [...params, after],
    );
    for (const row of rows) {
      if (await keep(decodeRow(schema, row, store.dialect))) n++;
    }
    if (rows.length < 1000) return n;
    after = String(rows[rows.length - 1].id);
  }
}

/** Lists a page of records. */
export async function listRecords(
  store: Storage,
  schema: EntitySchema,
  opts: ListOptions,
  hooks: OpOptions = {},
): Promise<ListResult> {
  const keys = orderKeys(opts.sort);
  const conds: string[] = [];
  const params: SqlValue[] = [];
  if (hooks.where) {
    conds.push(`(${hooks.where.sql})`);
    params.push(...hooks.where.params);
  }
  const base = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
  const baseParams = [...params];
  if (opts.after) {
    const w = afterWhere(keys, opts.after);
    conds.push(`(${w.sql})`);
    params.push(...w.params);
  }
  const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
  const table = tableOf(schema.name);
  const items: RecordData[] = [];
  let last: Row | undefined;
  let lastHidden = false;
  let hasMore = false;
  // Per-row checks (rules the database cannot run) may drop rows: scan a bounded number of batches.
  let scanned = 0;
  let cursorWhere = where, cursorParams = params;
  while (true) {
    const batch = opts.limit + 1;
    const rows = await store.query(
      `SELECT ${selectList(schema)} FROM ${table}${cursorWhere} ORDER BY ${
        orderBy(keys)
      } LIMIT ${batch}`,
      cursorParams,
    );
    for (const row of rows) {
      const record = decodeRow(schema, row, store.dialect);
      if (hooks.keep && !(await hooks.keep(record))) {
        last = row;
        lastHidden = true;
        continue;
      }
      if (items.length === opts.limit) {
        hasMore = true;
        break;
      }
      items.push(record);
      last = row;
      lastHidden = false;
    }
    scanned += rows.length;
    if (hasMore || rows.length < batch || !hooks.keep || !last) break;
    if (scanned >= MAX_SCAN) {
      // Bounded work per page: stop here and let the client continue from the last scanned row.
      hasMore = true;
      break;
    }
    const w = afterWhere(keys, cursorOf(keys, last));
    cursorWhere = base ? `${base} AND (${w.sql})` : ` WHERE ${w.sql}`;
    cursorParams = [...baseParams, ...w.params];
  }
  const page: ListResult = {
    items: opts.fields ? items.map((r) => pick(r, opts.fields!)) : items,
    items_count: items.length,
    limit: opts.limit,
    has_more: hasMore,
    cursor: hasMore && last
      ? encodeCursor(cursorOf(keys, last), lastHidden)
      : null,
  };
  if (opts.count && hooks.keep) {
    page.total = await countKept(store, schema, base, baseParams, hooks.keep);
  } else if (opts.count) {
    const rows = await store.query(
      `SELECT COUNT(*) AS n FROM ${table}${base}`,
      baseParams,
    );
    page.total = Number(rows[0]?.n ?? 0);
  }
  return page;
}

function pick(record: RecordData, fields: string[]): RecordData {
  return Object.fromEntries(
    fields.filter((f) => Object.hasOwn(record, f)).map((f) => [f, record[f]]),
  );
}
