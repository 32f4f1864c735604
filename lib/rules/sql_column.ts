/**
 * The record columns a rule compares in SQL: a column's value family (text,
 * number, bool) by its declared field type, the JavaScript value its SQL NULL
 * stands for, and its NULL test and truthiness as NULL-free conditions
 * (sql_fragment.ts).
 *
 * @module
 */

import { type Cond, type Frag, whenNull } from "./sql_fragment.ts";

/** How a column's values are stored and decoded. */
export type Family = "text" | "number" | "bool";

/**
 * A record column: its SQL expression, declared field type and value family.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type Column, isNull } from "moonbase/lib/rules/sql_column.ts";
 * const c: Column = { sql: '"age"', fieldType: "int", family: "number" };
 * assert.deepEqual(isNull(c), { sql: '"age" IS NULL', params: [] });
 * ```
 */
export interface Column {
  readonly sql: string;
  readonly fieldType: string;
  readonly family: Family;
  /**
   * The JavaScript value SQL NULL stands for: `null` for a stored column
   * (the default), `undefined` for `.length` of a NULL text column, `NaN`
   * for arithmetic on such a length.
   */
  readonly nullValue?: unknown;
  /** Computed numbers: an upper bound of the absolute value (finite). */
  readonly bound?: number;
  /** Computed numbers: every value is an integer (in an integer SQL type). */
  readonly integral?: boolean;
  /** Never NULL (a count). */
  readonly notNull?: boolean;
  /**
   * `fold(<text column>)`: compared byte-wise (PostgreSQL: `COLLATE "C"` is
   * part of `sql`), so a `fold(<field>)` index serves `==` and, as a range,
   * `startsWith` (sql_methods.ts).
   */
  readonly folded?: boolean;
}

/**
 * The JavaScript value a column's SQL NULL stands for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nullOf } from "moonbase/lib/rules/sql_column.ts";
 * assert.equal(nullOf({ sql: '"a"', fieldType: "int", family: "number" }), null);
 * assert.equal(nullOf({ sql: "0", fieldType: "int", family: "number", nullValue: 0 }), 0);
 * ```
 */
export function nullOf(c: Column): unknown {
  return Object.hasOwn(c, "nullValue") ? c.nullValue : null;
}

const FAMILIES: Readonly<Record<string, Family>> = {
  string: "text",
  text: "text",
  email: "text",
  url: "text",
  select: "text",
  date: "text",
  relation: "text",
  file: "text",
  int: "number",
  double: "number",
  bool: "bool",
};

/**
 * The family of a declared field type, or undefined when values of that type
 * are not compared in SQL (json, files, unknown types).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { familyOf } from "moonbase/lib/rules/sql_column.ts";
 * assert.equal(familyOf("date"), "text");
 * assert.equal(familyOf("json"), undefined);
 * ```
 */
export function familyOf(fieldType: string): Family | undefined {
  return Object.hasOwn(FAMILIES, fieldType) ? FAMILIES[fieldType] : undefined;
}

const SQL_FUNCTIONS = {
  toLowerCase: "mb_lower",
  toUpperCase: "mb_upper",
  fold: "mb_fold",
} as const;

/**
 * A text function of a text column (the SQL twins of the JavaScript
 * functions: lib/db/sqlite_text.ts, lib/db/pg_text.ts). NULL stands for
 * `undefined`, as the functions give for a non-string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textFunctionColumn } from "moonbase/lib/rules/sql_column.ts";
 * const t = { sql: '"t"', fieldType: "string", family: "text" } as const;
 * assert.equal(textFunctionColumn("fold", t, "sqlite").sql, 'mb_fold("t")');
 * assert.equal(textFunctionColumn("fold", t, "postgres").sql, '(mb_fold("t") COLLATE "C")');
 * assert.equal(textFunctionColumn("toLowerCase", t, "postgres").sql, 'mb_lower("t")');
 * ```
 */
export function textFunctionColumn(
  name: keyof typeof SQL_FUNCTIONS,
  c: Column,
  d: "sqlite" | "postgres",
): Column {
  const call = `${SQL_FUNCTIONS[name]}(${c.sql})`;
  const folded = name === "fold";
  return {
    sql: folded && d === "postgres" ? `(${call} COLLATE "C")` : call,
    fieldType: "string",
    family: "text",
    nullValue: undefined,
    ...(folded ? { folded } : {}),
  };
}

/**
 * `column IS NULL`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isNull } from "moonbase/lib/rules/sql_column.ts";
 * const c = isNull({ sql: '"a"', fieldType: "int", family: "number" });
 * assert.deepEqual(c, { sql: '"a" IS NULL', params: [] });
 * ```
 */
export function isNull(c: Column): Frag {
  return { sql: `${c.sql} IS NULL`, params: [] };
}

/**
 * JavaScript truthiness of a column value as a NULL-free condition.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { columnTruthy } from "moonbase/lib/rules/sql_column.ts";
 * const c = columnTruthy({ sql: '"t"', fieldType: "string", family: "text" });
 * assert.deepEqual(c, { sql: `("t" IS NOT NULL AND "t" <> '')`, params: [] });
 * ```
 */
export function columnTruthy(c: Column): Cond {
  if (c.family === "bool") return { sql: `${c.sql} IS TRUE`, params: [] };
  const zero = c.family === "text" ? "''" : "0";
  return whenNull(c, false, { sql: `${c.sql} <> ${zero}`, params: [] });
}
