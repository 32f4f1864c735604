/**
 * Aggregates over an entity's records in one SQL statement, grouped by
 * fields and date buckets: `count`, `sum`, `avg`, `min`, `max`. The rows
 * are the ones `where` (the caller's list rule and filter, compiled to
 * SQL) selects; nothing is checked row by row here, so a hidden row is
 * never read, let alone counted.
 *
 * The answer is the same on SQLite and PostgreSQL for the same data:
 *
 * - Keys are decoded like record values (bool as true/false, numbers as
 *   numbers); date buckets are computed from the stored ISO 8601 UTC text
 *   by the same integer arithmetic on both: `day` "2026-11-28", `week` the
 *   date of the week's Monday (ISO 8601 weeks) "2026-11-23", `month`
 *   "2026-11", `year` "2026".
 * - An int sum is exact (summed in two halves that cannot overflow, added
 *   here as a BigInt); past 2^53 − 1 it is a 400 (a JSON number would not
 *   hold it exactly). A double sum is the database's, rounded to
 *   {@link DIGITS} significant digits: the databases add in different
 *   orders, which moves the last bits.
 * - `avg` is the sum divided by the number of values (NULLs are no
 *   values), here, rounded to {@link DIGITS} significant digits.
 * - `min`/`max` of a date compare its text byte by byte (PostgreSQL:
 *   `COLLATE "C"`), which orders ISO 8601 UTC times.
 * - Groups are ordered here by their keys (null first, false before true,
 *   numbers by value, text by UTF-16 code units), never by a collation.
 *
 * At most {@link MAX_GROUPS} groups: one more is a 400.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Dialect, Row, SqlValue, Storage } from "../db/storage.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import type {
  AggregateField,
  AggregateQuery,
  Bucket,
  GroupTerm,
} from "./aggregate_query.ts";
import type { Where } from "./list_query.ts";
import type { Access } from "./caller_access.ts";
import { ROW_BY_ROW } from "./list.ts";

/** Most groups one answer holds. */
export const MAX_GROUPS = 1000;
/** Significant digits of a double sum and of every average. */
export const DIGITS = 12;

/** One group of an aggregate answer. */
export interface AggregateGroup {
  key: Record<string, unknown>;
  count?: number;
  sum?: Record<string, number>;
  avg?: Record<string, number | null>;
  min?: Record<string, unknown>;
  max?: Record<string, unknown>;
}

/** An aggregate answer. */
export interface AggregateResult {
  groups: AggregateGroup[];
}

/** Half of an int sum: values split at 2^26 so no partial sum overflows. */
const HALF = 67_108_864;

/** A value rounded to {@link DIGITS} significant digits. */
export function rounded(n: number): number {
  return Number(n.toPrecision(DIGITS));
}

/**
 * SQL of a date bucket over the ISO 8601 text in `col`; a value that does
 * not start with `YYYY-MM-DD` falls in the null bucket. `week` is a day
 * number (days since 1970-01-01 of the week's Monday) that
 * {@link dayText} turns into its date.
 */
export function bucketSql(dialect: Dialect, col: string, b: Bucket): string {
  const dated = dialect.name === "postgres"
    ? `${col} ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}'`
    : `${col} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'`;
  const part = (from: number, n: number) => `substr(${col}, ${from}, ${n})`;
  if (b !== "week") {
    const n = b === "day" ? 10 : b === "month" ? 7 : 4;
    return `CASE WHEN ${dated} THEN ${part(1, n)} END`;
  }
  // Days from civil (H. Hinnant), with the year moved 400 years on so that
  // every operand stays positive (integer division truncates on both
  // databases); 400 Gregorian years are 146097 days, a whole number of weeks.
  const int = (from: number, n: number) => `CAST(${part(from, n)} AS INTEGER)`;
  const m = int(6, 2), d = int(9, 2);
  const y = `(${int(1, 4)} + 400 - CASE WHEN ${m} <= 2 THEN 1 ELSE 0 END)`;
  const era = `(${y} / 400)`;
  const yoe = `(${y} - ${era} * 400)`;
  const doy = `((153 * ((${m} + 9) % 12) + 2) / 5 + ${d} - 1)`;
  const days =
    `(${era} * 146097 + ${yoe} * 365 + ${yoe} / 4 - ${yoe} / 100 + ${doy})`;
  // `days` of 1970-01-01 (a Thursday) is 865565; a Monday's is 5 modulo 7.
  return `CASE WHEN ${dated} THEN ${days} - (${days} + 2) % 7 - 865565 END`;
}

/**
 * The date (`YYYY-MM-DD`, UTC) `days` days after 1970-01-01.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dayText } from "moonbase/lib/records/aggregate.ts";
 * assert.equal(dayText(0), "1970-01-01");
 * assert.equal(dayText(-1), "1969-12-31");
 * ```
 */
export function dayText(days: number): string {
  const d = new Date(days * 86_400_000);
  const y = d.getUTCFullYear();
  const year = y < 0
    ? `-${String(-y).padStart(4, "0")}`
    : String(y).padStart(4, "0");
  return `${year}-${String(d.getUTCMonth() + 1).padStart(2, "0")}-${
    String(d.getUTCDate()).padStart(2, "0")
  }`;
}

/** The statement of an aggregate and how to read its rows. */
export interface AggregateSql {
  sql: string;
  params: SqlValue[];
}

/** The distinct fields the figures read, in order: `a<i>` names their columns. */
function figureFields(query: AggregateQuery): string[] {
  return [
    ...new Set(
      [...query.sum, ...query.avg, ...query.min, ...query.max].map((f) =>
        f.name
      ),
    ),
  ];
}

/** The SELECT of `query` over `schema`'s rows matching `where`. */
export function aggregateSql(
  dialect: Dialect,
  schema: EntitySchema,
  query: AggregateQuery,
  where: Where | undefined,
): AggregateSql {
  const cols: string[] = [];
  query.group.forEach((g, i) => {
    const col = columnOf(g.field);
    cols.push(`${g.bucket ? bucketSql(dialect, col, g.bucket) : col} AS g${i}`);
  });
  cols.push("COUNT(*) AS n");
  const fields = figureFields(query);
  const a = (f: AggregateField) => `a${fields.indexOf(f.name)}`;
  const summed = new Set<string>();
  for (const f of [...query.sum, ...query.avg]) {
    if (summed.has(f.name)) continue;
    summed.add(f.name);
    const col = columnOf(f.name);
    if (f.kind === "int") {
      cols.push(
        `SUM(${col} / ${HALF}) AS ${a(f)}_hi`,
        `SUM(${col} % ${HALF}) AS ${a(f)}_lo`,
      );
    } else cols.push(`SUM(${col}) AS ${a(f)}_sum`);
    cols.push(`COUNT(${col}) AS ${a(f)}_n`);
  }
  for (const [fn, list] of [["min", query.min], ["max", query.max]] as const) {
    for (const f of list) {
      const col = columnOf(f.name);
      const text = f.kind === "text" && dialect.name === "postgres";
      cols.push(
        `${fn.toUpperCase()}(${col}${text ? ` COLLATE "C"` : ""}) AS ${
          a(f)
        }_${fn}`,
      );
    }
  }
  const group = query.group.length
    ? ` GROUP BY ${query.group.map((_, i) => i + 1).join(", ")}`
    : "";
  return {
    sql: `SELECT ${cols.join(", ")} FROM ${tableOf(schema.name)}${
      where ? ` WHERE ${where.sql}` : ""
    }${group} LIMIT ${MAX_GROUPS + 1}`,
    params: where ? [...where.params] : [],
  };
}

function big(v: unknown): bigint {
  if (v === null || v === undefined) return 0n;
  return BigInt(typeof v === "number" ? v : String(v));
}

function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}

function keyOf(dialect: Dialect, g: GroupTerm, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (g.bucket === "week") return dayText(num(v));
  if (g.bucket) return String(v);
  return dialect.decode(g.kind, v);
}

const LARGEST = BigInt(Number.MAX_SAFE_INTEGER);

/** One answer row as a group. */
function groupOf(
  dialect: Dialect,
  query: AggregateQuery,
  fields: string[],
  row: Row,
): AggregateGroup {
  const key: Record<string, unknown> = {};
  query.group.forEach((g, i) => key[g.key] = keyOf(dialect, g, row[`g${i}`]));
  const out: AggregateGroup = { key };
  if (query.count) out.count = num(row.n);
  const a = (f: AggregateField) => `a${fields.indexOf(f.name)}`;
  /** The exact sum of an int field, the database's of a double field. */
  const sum = (f: AggregateField): number | bigint => {
    if (f.kind === "int") {
      return big(row[`${a(f)}_hi`]) * BigInt(HALF) + big(row[`${a(f)}_lo`]);
    }
    const s = row[`${a(f)}_sum`];
    return s === null || s === undefined ? 0 : num(s);
  };
  if (query.sum.length) {
    out.sum = {};
    for (const f of query.sum) {
      const s = sum(f);
      if (typeof s === "bigint" && (s > LARGEST || s < -LARGEST)) {
        throw new MoonbaseError(
          "invalid",
          `Cannot aggregate records: the sum of ${f.name} is beyond ${Number.MAX_SAFE_INTEGER}, the largest integer a JSON number holds exactly; sum fewer rows (filter), or ask for avg`,
        );
      }
      out.sum[f.name] = typeof s === "bigint" ? Number(s) : rounded(s);
    }
  }
  if (query.avg.length) {
    out.avg = {};
    for (const f of query.avg) {
      const n = num(row[`${a(f)}_n`]);
      out.avg[f.name] = n === 0 ? null : rounded(Number(sum(f)) / n);
    }
  }
  for (const [fn, list] of [["min", query.min], ["max", query.max]] as const) {
    if (!list.length) continue;
    const values: Record<string, unknown> = {};
    for (const f of list) {
      const v = row[`${a(f)}_${fn}`];
      values[f.name] = v === null || v === undefined
        ? null
        : dialect.decode(f.kind, v);
    }
    out[fn] = values;
  }
  return out;
}

/** Orders key values: null, false, true, numbers, text (code units). */
function compareValues(a: unknown, b: unknown): number {
  const rank = (v: unknown) =>
    v === null ? 0 : typeof v === "boolean" ? 1 : typeof v === "number" ? 2 : 3;
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1) return Number(a) - Number(b);
  if (ra === 2) return (a as number) - (b as number);
  if (ra === 3) return a! < b! ? -1 : a! > b! ? 1 : 0;
  return 0;
}

/**
 * The SQL condition of `access` (undefined: every row); 400 when part of
 * it is a per-row check: aggregates run in SQL only, and a row they cannot
 * check there is never read.
 */
export function sqlOnly(access: Access): Where | undefined {
  if (access.keep) {
    throw new MoonbaseError(
      "invalid",
      `Cannot aggregate records: ${ROW_BY_ROW}, and aggregates run in SQL only; use a filter that compiles to SQL, or a list rule that does`,
    );
  }
  return access.where;
}

/**
 * Runs `query` over the rows of `schema` that `where` selects; 400 past
 * {@link MAX_GROUPS} groups.
 */
export async function aggregateRecords(
  store: Storage,
  schema: EntitySchema,
  query: AggregateQuery,
  where: Where | undefined,
): Promise<AggregateResult> {
  const { sql, params } = aggregateSql(store.dialect, schema, query, where);
  const rows = await store.query(sql, params);
  if (rows.length > MAX_GROUPS) {
    throw new MoonbaseError(
      "invalid",
      `Cannot aggregate records: more than ${MAX_GROUPS} groups; group by fewer fields or a coarser bucket (created:month rather than created:day), or narrow the rows with filter`,
    );
  }
  const fields = figureFields(query);
  const groups = rows.map((r) => groupOf(store.dialect, query, fields, r));
  const terms = query.group.map((g) => g.key);
  groups.sort((x, y) => {
    for (const k of terms) {
      const c = compareValues(x.key[k], y.key[k]);
      if (c !== 0) return c;
    }
    return 0;
  });
  return { groups };
}
