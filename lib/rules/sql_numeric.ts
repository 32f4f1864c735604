/**
 * Numbers computed from record columns, compiled only where SQL gives the
 * very value JavaScript computes:
 *
 * - `text.length`: UTF-16 code units (characters plus one per character
 *   beyond U+FFFF), `undefined` for NULL;
 * - `+ - * /` in IEEE doubles (`CAST(... AS REAL / double precision)`), with
 *   a stored NULL read as 0 like JavaScript; `%` on integers by a non-zero
 *   integer constant; unary minus.
 *
 * Not compiled (the caller falls back to per-row evaluation): string
 * concatenation (`+` with a string or text column), booleans, division or
 * `%` by a column or by zero, and anything whose result could differ: a NaN
 * (SQL has none: SQLite turns it into NULL) or an overflow (PostgreSQL raises
 * an error where JavaScript gives Infinity) — ruled out by bounding every
 * intermediate value; on PostgreSQL values stay within ±1e300 and products
 * and quotients only involve integers, so underflow cannot raise either.
 *
 * @module
 */

import type { Dialect } from "./sql_fragment.ts";
import { type Column, nullOf } from "./sql_column.ts";
import { NotCompilable } from "./sql_fragment.ts";
import { binary, toPrimitive } from "./values.ts";

/** Largest magnitude a PostgreSQL intermediate may reach (no overflow error). */
const PG_LIMIT = 1e300;
/** Text and JSON values hold at most a million characters. */
const MAX_LENGTH = 2_000_000;

const fail = (reason: string): never => {
  throw new NotCompilable(reason);
};

/**
 * `column.length` of a text column in UTF-16 code units, like JavaScript.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textLength } from "moonbase/lib/rules/sql_numeric.ts";
 * const { sql, ...n } = textLength({ sql: '"t"', fieldType: "string", family: "text" }, "sqlite");
 * assert.match(sql, /length\("t"\)/);
 * // NULL for a NULL text, standing for undefined (a rule reads null.length as undefined).
 * assert.deepEqual(n, {
 *   fieldType: "int",
 *   family: "number",
 *   nullValue: undefined,
 *   bound: 2000000,
 *   integral: true,
 * });
 * ```
 */
export function textLength(c: Column, d: Dialect): Column {
  if (c.family !== "text") fail("length of a non-text column");
  let sql: string;
  if (d === "postgres") {
    // Characters beyond U+FFFF count twice (surrogate pairs in JavaScript).
    sql = `(CASE WHEN octet_length(${c.sql}) = char_length(${c.sql}) ` +
      `THEN char_length(${c.sql}) ELSE char_length(${c.sql}) + ` +
      `char_length(regexp_replace(${c.sql}, '[^\\U00010000-\\U0010FFFF]', '', 'g')) END)`;
  } else {
    // SQLite: length() counts characters (text holds no NUL); characters
    // beyond U+FFFF are those whose UTF-8 lead byte is F0-F4.
    const blob = `CAST(${c.sql} AS BLOB)`;
    let stripped = blob;
    for (const b of ["F0", "F1", "F2", "F3", "F4"]) {
      stripped = `replace(${stripped}, X'${b}', X'')`;
    }
    sql = `(CASE WHEN length(${blob}) = length(${c.sql}) ` +
      `THEN length(${c.sql}) ELSE length(${c.sql}) + length(${blob}) - ` +
      `length(CAST(${stripped} AS BLOB)) END)`;
  }
  return {
    sql,
    fieldType: "int",
    family: "number",
    nullValue: undefined,
    bound: MAX_LENGTH,
    integral: true,
  };
}

/** An arithmetic operand: a numeric column/expression, or a value known at compile time. */
export type Operand = { column: Column } | { value: unknown };

interface Num {
  /** SQL of the value (never NULL unless `nan`). */
  sql: string;
  bound: number;
  /** Every value is an integer. */
  integral: boolean;
  /** The SQL type is an integer type. */
  sqlInt: boolean;
  /** SQL NULL stands for NaN (the operand was `undefined`/NaN for that row). */
  nan: boolean;
  constant?: number;
}

function columnNum(c: Column): Num {
  if (c.family !== "number") fail("arithmetic on a non-number column");
  const sqlInt = c.fieldType === "int";
  const bound = c.bound ?? (sqlInt ? 2 ** 53 : Number.MAX_VALUE);
  const integral = c.integral ?? sqlInt;
  const nv = nullOf(c);
  if (nv === null) {
    // A stored NULL is 0 in JavaScript arithmetic.
    const sql = `COALESCE(${c.sql}, 0)`;
    return { sql, bound, integral, sqlInt, nan: false };
  }
  if (nv !== undefined && !Number.isNaN(nv)) fail("unknown null value");
  return { sql: c.sql, bound, integral, sqlInt, nan: true };
}

const TWO_62 = "4611686018427387904";

/**
 * The exact SQL literal of a finite double: an integer, or an integer times
 * a power of two (exact in both databases, no decimal parsing involved).
 */
export function exactNumber(k: number, d: Dialect): string {
  if (Number.isSafeInteger(k)) return String(k === 0 ? 0 : k);
  let m = k, e = 0;
  while (!Number.isInteger(m)) [m, e] = [m * 2, e - 1];
  while (!Number.isSafeInteger(m)) [m, e] = [m / 2, e + 1];
  const real = d === "postgres" ? "double precision" : "REAL";
  let sql = `CAST(${m} AS ${real})`;
  const op = e < 0 ? "/" : "*";
  for (let left = Math.abs(e); left > 0; left -= 62) {
    const factor = left >= 62 ? TWO_62 : String(2n ** BigInt(left));
    sql = `(${sql} ${op} CAST(${factor} AS ${real}))`;
  }
  return sql;
}

function constNum(v: unknown, op: string): Num | "nan" {
  const p = toPrimitive(v);
  if (op === "+" && typeof p === "string") fail("string concatenation");
  if (typeof p === "bigint" || typeof p === "symbol") fail("bigint operand");
  const k = binary("-", p, 0) as number; // ToNumber
  if (Number.isNaN(k)) return "nan";
  if (!Number.isFinite(k) || Math.abs(k) > PG_LIMIT) fail("huge constant");
  if (k !== 0 && Math.abs(k) < 1e-300) fail("tiny constant");
  const integral = Number.isInteger(k);
  return {
    sql: "",
    bound: Math.abs(k),
    integral,
    sqlInt: Number.isSafeInteger(k),
    nan: false,
    constant: k,
  };
}

function asDouble(n: Num, d: Dialect): string {
  if (n.constant !== undefined) return exactNumber(n.constant, d);
  return `CAST(${n.sql} AS ${d === "postgres" ? "double precision" : "REAL"})`;
}

/**
 * `left op right` (op one of `+ - * / %`) where at least one side is a
 * numeric column or computed number. Returns a computed number column, or
 * `{ value }` when the result is known for every row.
 *
 * @throws {NotCompilable} when SQL could compute a different value
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { arithmetic } from "moonbase/lib/rules/sql_numeric.ts";
 * const n = { sql: '"n"', fieldType: "int", family: "number" } as const;
 * assert.deepEqual(arithmetic("*", { column: n }, { value: 2 }, "sqlite"), {
 *   column: {
 *     sql: '(CAST(COALESCE("n", 0) AS REAL) * 2)',
 *     fieldType: "double",
 *     family: "number",
 *     nullValue: null,
 *     bound: 2 ** 54,
 *     integral: true,
 *   },
 * });
 * ```
 */
export function arithmetic(
  op: string,
  left: Operand,
  right: Operand,
  d: Dialect,
): Operand {
  if ("value" in left && "value" in right) {
    return { value: binary(op as "+", left.value, right.value) };
  }
  const a = "column" in left
    ? columnNum(left.column)
    : constNum(left.value, op);
  const b = "column" in right
    ? columnNum(right.column)
    : constNum(right.value, op);
  if (a === "nan" || b === "nan") return { value: NaN }; // NaN op x is NaN
  if (!Number.isFinite(a.bound) || !Number.isFinite(b.bound)) {
    fail("operand may be infinite");
  }
  let column: Column;
  if (op === "%") {
    // Integers by a non-zero integer constant: truncated remainder, like JavaScript.
    if (!a.sqlInt || a.constant !== undefined || !b.sqlInt || !b.constant) {
      fail("remainder other than integer % non-zero integer constant");
    }
    column = {
      sql: `(${a.sql} % ${exactNumber(b.constant!, d)})`,
      fieldType: "int",
      family: "number",
      nullValue: a.nan ? NaN : null,
      bound: Math.min(a.bound, Math.abs(b.constant!)),
      integral: true,
    };
  } else {
    if (op === "/" && !b.constant) fail("division by a column or by zero");
    let bound = op === "*"
      ? a.bound * b.bound
      : op === "/"
      ? a.bound / Math.abs(b.constant!)
      : a.bound + b.bound;
    if (d === "postgres") {
      if (!(bound <= PG_LIMIT)) fail("may overflow on PostgreSQL");
      // Products and quotients of integers by constants ≥ 1e-300 cannot round to 0.
      const exact = (n: Num) => n.integral || n.constant !== undefined;
      if ((op === "*" || op === "/") && (!exact(a) || !exact(b))) {
        fail("may underflow on PostgreSQL");
      }
    } else if (!Number.isFinite(bound)) bound = Infinity; // ±Inf like JavaScript
    column = {
      sql: `(${asDouble(a, d)} ${op} ${asDouble(b, d)})`,
      fieldType: "double",
      family: "number",
      nullValue: a.nan || b.nan ? NaN : null,
      bound,
      integral: op !== "/" && a.integral && b.integral,
    };
  }
  return { column };
}

/**
 * Unary minus of a numeric column or computed number (`-null` is `-0`,
 * which compares like 0).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { negative } from "moonbase/lib/rules/sql_numeric.ts";
 * assert.deepEqual(negative({ sql: '"n"', fieldType: "int", family: "number" }), {
 *   sql: '(-COALESCE("n", 0))',
 *   fieldType: "int",
 *   family: "number",
 *   nullValue: null,
 *   bound: 2 ** 53,
 *   integral: true,
 * });
 * ```
 */
export function negative(c: Column): Column {
  const n = columnNum(c);
  return {
    sql: `(-${n.sql})`,
    fieldType: c.fieldType,
    family: "number",
    nullValue: n.nan ? NaN : null,
    bound: n.bound,
    integral: n.integral,
  };
}
