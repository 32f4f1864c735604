/**
 * Listing records: keyset pages in SQL, with optional per-row checks for
 * rules and filters the database cannot run. Per-row work is bounded: a
 * request examines at most {@link MAX_SCAN} rows for its page and as many
 * for `count=true`.
 *
 * A per-row scan also gives the event loop a turn (a timer, so pending
 * I/O is polled) once it has run for {@link SLICE_MS} since the last one:
 * SQLite reads and the checks are synchronous, and one scan of large rows
 * under a costly filter would otherwise hold every other request (health
 * included) until it ends. Scans shorter than a slice never wait.
 *
 * Cursors (see `list_cursor.ts`) are sealed and bound to the query; their
 * values come only from the last row the caller was shown. When a page
 * shows no row before the budget runs out, the cursor keeps the previous
 * position and counts the rows examined since (an OFFSET), so paging always
 * moves forward without revealing anything about the hidden rows.
 *
 * Over 350 lines, one idea: one keyset scan; kept whole because its budget,
 * time slices and cursor positions are the scan's own state.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import {
  type ColumnKind,
  type Dialect,
  physicalName,
  type Row,
  type SqlValue,
  type Storage,
} from "../db/storage.ts";
import { tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import { selectList } from "./crud.ts";
import type { Access } from "./caller_access.ts";
import {
  type CursorContext,
  type CursorPosition,
  type CursorQuery,
  LIBRARY_CURSORS,
  openCursor,
  positionDigest,
  sealCursor,
} from "./list_cursor.ts";
import {
  RANK_KEY,
  searchMatches,
  searchMatchSql,
  searchRankSql,
  type SearchSql,
} from "./search_query.ts";
import {
  afterWhere,
  cursorOf,
  keyKinds,
  type ListOptions,
  orderBy,
  orderKeys,
  type SortKey,
  type SortVia,
  viaColumn,
  type Where,
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

/**
 * Rows one request may examine with a per-row check (rules or filters not
 * compiled to SQL): once for the page, once more for `count=true`.
 */
export const MAX_SCAN = 5_000;
const BATCH = 500;
/** Longest a per-row scan runs before it gives the event loop a turn (ms). */
export const SLICE_MS = 20;

/**
 * The time slices of one per-row scan. A turn is a timer, not
 * `setImmediate`: Deno polls sockets only every few dozen immediates, so a
 * scan yielding through them still held a health check for ~170 turns.
 */
class Pace {
  #since = performance.now();

  /** Resolves after a turn of the event loop when the slice is spent. */
  step(): Promise<void> | undefined {
    if (performance.now() - this.#since < SLICE_MS) return undefined;
    return new Promise((resolve) =>
      setTimeout(() => {
        this.#since = performance.now();
        resolve();
      }, 0)
    );
  }
}

const perRow = new WeakSet<ListResult>();

/**
 * Header of a page that needed a per-row check (absent when the rule and
 * filter ran entirely in SQL).
 */
export const PER_ROW_HEADERS: Readonly<Record<string, string>> = Object
  .freeze({ "X-Moonbase-Checked": `per-row; max-scan=${MAX_SCAN}` });

/** True when the page needed a per-row check in JavaScript (a rule or filter not compiled to SQL). */
export function checkedPerRow(page: ListResult): boolean {
  return perRow.has(page);
}

type Keep = (r: RecordData) => boolean | Promise<boolean>;

/** Reads rows of one list query from a position. */
class Reader {
  readonly #store: Storage;
  readonly #schema: EntitySchema;
  readonly #base: { sql: string; params: SqlValue[] } | undefined;
  readonly #keys: SortKey[];
  /** Relevance order: the rank of a row (a column of an inner query). */
  readonly #rank: SearchSql | undefined;
  /**
   * The rows' condition holds a caller's filter: its statements are planned
   * for their values (`Storage.queryCustomPlan`).
   */
  readonly #filtered: boolean;

  constructor(
    store: Storage,
    schema: EntitySchema,
    base: { sql: string; params: SqlValue[] } | undefined,
    keys: SortKey[],
    rank?: SearchSql,
    filtered = false,
  ) {
    this.#store = store;
    this.#schema = schema;
    this.#base = base;
    this.#keys = keys;
    this.#rank = rank;
    this.#filtered = filtered;
  }

  #query(sql: string, params: SqlValue[]): Promise<Row[]> {
    const store = this.#store;
    return this.#filtered && store.queryCustomPlan
      ? store.queryCustomPlan(sql, params)
      : store.query(sql, params);
  }

  get keys(): SortKey[] {
    return this.#keys;
  }

  rows(pos: CursorPosition, n: number): Promise<Row[]> {
    const conds: string[] = [];
    const params: SqlValue[] = [];
    // Values through relations, read for the cursor (`mb_sort<i>`).
    let extra = "";
    const extraParams: SqlValue[] = [];
    this.#keys.forEach((k, i) => {
      if (!k.via) return;
      extra += `, ${k.via.sql} AS "${viaColumn(i)}"`;
      extraParams.push(...k.via.params as SqlValue[]);
    });
    if (this.#base) {
      conds.push(`(${this.#base.sql})`);
      params.push(...this.#base.params);
    }
    const after = pos.values ? afterWhere(this.#keys, pos.values) : undefined;
    const offset = pos.skip > 0 ? ` OFFSET ${pos.skip}` : "";
    const order = orderBy(this.#keys);
    const tail = ` ORDER BY ${order.sql} LIMIT ${n}${offset}`;
    const rank = this.#rank;
    if (rank) {
      // The rank is a column of the inner query: the order and the keyset
      // condition name it (PostgreSQL has no output names in WHERE).
      const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
      return this.#query(
        `SELECT * FROM (SELECT ${
          selectList(this.#schema)
        }${extra}, ${rank.sql} AS "${RANK_KEY}" FROM ${
          tableOf(this.#schema.name)
        }${where}) AS "mb_ranked"${after ? ` WHERE ${after.sql}` : ""}${tail}`,
        [
          ...extraParams,
          ...rank.params,
          ...params,
          ...after?.params ?? [],
          ...order.params,
        ],
      );
    }
    if (after) {
      conds.push(`(${after.sql})`);
      params.push(...after.params);
    }
    const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
    return this.#query(
      `SELECT ${selectList(this.#schema)}${extra} FROM ${
        tableOf(this.#schema.name)
      }${where}${tail}`,
      [...extraParams, ...params, ...order.params],
    );
  }

  decode(row: Row): RecordData {
    return decodeRow(this.#schema, row, this.#store.dialect);
  }
}

/**
 * Lists a page of the records `access` lets the caller see; `cursor`: the
 * caller and key its cursors are sealed with (default: the library's);
 * `sorts`: the values of the sort keys through relations, by key.
 */
export async function listRecords(
  store: Storage,
  schema: EntitySchema,
  opts: ListOptions,
  access: Access = {},
  cursor: CursorContext = LIBRARY_CURSORS,
  sorts?: ReadonlyMap<string, SortVia>,
  searchRows = false,
): Promise<ListResult> {
  const words = opts.search;
  const byRank = words !== undefined && opts.sort.length === 0;
  if (byRank && searchRows) {
    throw new MoonbaseError(
      "invalid",
      "Cannot search by relevance: the list rule is checked row by row (not compiled to SQL), and hidden records would decide which rows are examined; add sort=-created (or id, created, updated), or write a rule that compiles to SQL",
    );
  }
  const keys: SortKey[] = byRank
    ? [{ field: RANK_KEY, desc: true }, { field: "id", desc: false }]
    : orderKeys(opts.sort).map((k) => {
      if (!k.field.includes(".")) return k;
      const via = sorts?.get(k.field);
      if (!via) {
        throw new MoonbaseError(
          "invalid",
          `Cannot list records: cannot sort by ${k.field.slice(0, 200)} here`,
        );
      }
      return { ...k, via };
    });
  // The match is part of the rows' scope (rowScope), the rank the order's.
  const rank = byRank ? searchRankSql(schema, store.dialect, words) : undefined;
  if (words !== undefined && searchRows && access.keep) {
    // After the rule, in JavaScript, as a filter under such a rule is.
    const rule = access.keep;
    access = {
      ...access,
      keep: async (r) => (await rule(r)) && searchMatches(schema, r, words),
    };
  }
  let kinds: ColumnKind[] | undefined;
  const query: CursorQuery = {
    entityId: schema.id,
    keys,
    filter: opts.filter,
    search: words?.join(" "),
    // Only needed when a cursor is opened or sealed.
    get kinds() {
      return kinds ??= keyKinds(schema, keys);
    },
  };
  const ctx = cursor;
  let start: CursorPosition = opts.after
    ? openCursor(ctx, query, opts.after)
    : { skip: 0 };
  if (start.ref) start = await resolvedPosition(store, schema, query, start);
  const base = rowScope(
    store.dialect,
    schema,
    searchRows ? { ...opts, search: undefined } : opts,
    access,
  );
  // A filter's values decide its best plan (a range on an indexed field:
  // how much of the index it covers); the others' plans do not change.
  const filtered = opts.filter !== undefined && base !== undefined &&
    base.params.length > 0;
  const reader = new Reader(store, schema, base, keys, rank, filtered);
  const found = access.keep
    ? await scanPage(reader, start, opts.limit, access.keep)
    : await sqlPage(reader, start, opts.limit);
  const seal = (pos: CursorPosition) => sealCursor(ctx, query, pos);
  const page: ListResult = {
    items: opts.fields
      ? found.items.map((r) => pick(r, opts.fields!))
      : found.items,
    items_count: found.items.length,
    limit: opts.limit,
    has_more: found.next !== undefined,
    cursor: found.next === undefined ? null : seal(
      found.next.row
        ? { values: cursorOf(keys, found.next.row, query.kinds), skip: 0 }
        : { values: start.values, skip: found.next.skip },
    ),
  };
  if (opts.count) {
    page.total = access.keep
      ? await countKept(store, schema, base, access.keep)
      : Number(
        (await store.query(
          `SELECT COUNT(*) AS n FROM ${tableOf(schema.name)}${
            base ? ` WHERE ${base.sql}` : ""
          }`,
          base?.params ?? [],
        ))[0]?.n ?? 0,
      );
  }
  if (access.keep) perRow.add(page);
  return page;
}

/**
 * A position opened from a cursor that names the record its values came
 * from (they were too long to carry): the values read from that record
 * again, when they are still the ones the cursor was made with (their
 * digest); a 400 when the record has since changed them or is gone. Only
 * the sort columns are read, and only to compare them: nothing of the
 * record reaches the caller.
 */
async function resolvedPosition(
  store: Storage,
  schema: EntitySchema,
  query: CursorQuery,
  pos: CursorPosition,
): Promise<CursorPosition> {
  const { ref } = pos;
  if (!ref) return pos;
  // Only plain columns can be read back (not a relevance rank or a
  // related record's field).
  const plain = (name: string) =>
    name === "id" || name === "created" || name === "updated" ||
    schema.fields.some((f) => f.name === name);
  if (!query.keys.every((k) => plain(k.field))) {
    throw new MoonbaseError(
      "invalid",
      "Cannot use cursor: its sort values were too long to carry and cannot be read again for this sort; list again from the first page, or sort by shorter values",
    );
  }
  const rows = await store.query(
    `SELECT ${
      query.keys.map((k) => `"${physicalName(k.field)}"`).join(", ")
    } FROM ${tableOf(schema.name)} WHERE "id" = ?`,
    [ref.id],
  );
  const values = rows[0] && cursorOf([...query.keys], rows[0], query.kinds);
  if (!values || positionDigest(values) !== ref.digest) {
    throw new MoonbaseError(
      "invalid",
      "Cannot use cursor: the record it continues after has changed its sort values or is gone; list again from the first page",
    );
  }
  return { values, skip: pos.skip };
}

/**
 * The SQL condition of the rows a list with `opts` covers under `access`
 * (before any per-row check), or undefined for every row. Lists and
 * aggregates (`aggregate.ts`) take their rows from here, so a list
 * parameter that selects rows applies to both: `search` (its match,
 * search_query.ts) joins the rule's condition here. (`filter` is in
 * `access` already: the record service compiles it with the caller's
 * rules.)
 */
export function rowScope(
  dialect: Dialect,
  schema: EntitySchema,
  opts: Pick<ListOptions, "filter" | "search">,
  access: Access,
): Where | undefined {
  const conds: Where[] = [];
  if (access.where) {
    conds.push({ sql: access.where.sql, params: [...access.where.params] });
  }
  if (opts.search) {
    const m = searchMatchSql(schema, dialect, opts.search);
    conds.push({ sql: m.sql, params: [...m.params] });
  }
  if (conds.length <= 1) return conds[0];
  return {
    sql: conds.map((c) => `(${c.sql})`).join(" AND "),
    params: conds.flatMap((c) => c.params),
  };
}

/** What a rule or filter that cannot run in SQL is called in a 400. */
export const ROW_BY_ROW =
  "the rule or filter is checked row by row (not compiled to SQL)";

/** Where the next page starts: after a shown row, or (none shown) the start moved on by `skip` rows. */
type Next = { row: Row } | { row?: undefined; skip: number };

interface Found {
  items: RecordData[];
  next?: Next;
}

async function sqlPage(
  reader: Reader,
  start: CursorPosition,
  limit: number,
): Promise<Found> {
  const rows = await reader.rows(start, limit + 1);
  const shown = rows.length > limit ? rows.slice(0, limit) : rows;
  return {
    items: shown.map((r) => reader.decode(r)),
    next: rows.length > limit ? { row: shown[shown.length - 1] } : undefined,
  };
}

/** A page under a per-row check: at most MAX_SCAN rows examined. */
async function scanPage(
  reader: Reader,
  start: CursorPosition,
  limit: number,
  keep: Keep,
): Promise<Found> {
  const items: RecordData[] = [];
  // The reads of one scan are separate statements and writes land between
  // them (the scan's turns, PostgreSQL's round trips): a shown record whose
  // sort key a write moved past the scan's position is met again. Once is
  // enough.
  const shown = new Set<unknown>();
  let lastShown: Row | undefined;
  let examined = 0;
  let pos = start;
  const pace = new Pace();
  while (true) {
    const n = Math.min(BATCH, MAX_SCAN - examined);
    const rows = await reader.rows(pos, n);
    for (const row of rows) {
      await pace.step();
      examined++;
      if (shown.has(row.id)) continue;
      const record = reader.decode(row);
      if (!(await keep(record))) continue;
      if (items.length === limit) return { items, next: { row: lastShown! } };
      items.push(record);
      shown.add(row.id);
      lastShown = row;
    }
    if (rows.length < n) return { items }; // the end of the list
    if (examined >= MAX_SCAN) {
      // Budget spent: resume after the last shown row, or (none shown) after
      // the rows examined so far — never from a hidden row's values.
      return {
        items,
        next: lastShown ? { row: lastShown } : { skip: start.skip + examined },
      };
    }
    // Internal continuation (never sent to the client): after the last row read.
    pos = { values: cursorOf(reader.keys, rows[rows.length - 1]), skip: 0 };
  }
}

/** Counts rows passing a per-row check; 400 past {@link MAX_SCAN} rows. */
async function countKept(
  store: Storage,
  schema: EntitySchema,
  base: { sql: string; params: SqlValue[] } | undefined,
  keep: Keep,
): Promise<number> {
  const reader = new Reader(store, schema, base, [{
    field: "id",
    desc: false,
  }]);
  let n = 0, examined = 0;
  let pos: CursorPosition = { skip: 0 };
  const pace = new Pace();
  while (true) {
    const size = Math.min(BATCH, MAX_SCAN + 1 - examined);
    const rows = await reader.rows(pos, size);
    for (const row of rows) {
      if (++examined > MAX_SCAN) {
        throw new MoonbaseError(
          "invalid",
          `Cannot count records: ${ROW_BY_ROW} and more than ${MAX_SCAN} rows would need checking; use a filter that compiles to SQL, or list without count`,
        );
      }
      await pace.step();
      if (await keep(reader.decode(row))) n++;
    }
    if (rows.length < size) return n;
    pos = { values: [String(rows[rows.length - 1].id)], skip: 0 };
  }
}

function pick(record: RecordData, fields: string[]): RecordData {
  return Object.fromEntries(
    fields.filter((f) => Object.hasOwn(record, f)).map((f) => [f, record[f]]),
  );
}
