/**
 * A path into a `json` field (`record.meta.a.b`) and the SQL that reads it on
 * both databases: the JSON type at the path as JavaScript sees it (missing,
 * null, true, false, number, string, array, object) and tests of the number
 * or string there against a value known at compile time. sql_json.ts builds
 * the operations (truthiness, comparisons, `.includes`) from these.
 *
 * Storage assumptions: SQLite keeps the field as JSON text and reads its
 * numbers to the doubles `JSON.parse` gives (true of SQLite 3.53's
 * conversion for the shortest forms `JSON.stringify` writes, and checked by
 * sql_json_test.ts); PostgreSQL keeps `jsonb`, whose numbers are the exact
 * decimals written (JavaScript's shortest forms, or integers), so decimal
 * order and equality are the order and equality of the doubles.
 *
 * Paths: keys made of `[A-Za-z_$][A-Za-z0-9_$]*` (at most 64), except
 * `length` and `__proto__` (their JavaScript meaning differs); others are
 * not compiled.
 *
 * @module
 */

import type { Column } from "./sql_column.ts";
import {
  and,
  type Cond,
  type Dialect,
  NotCompilable,
  sql,
  textParam,
} from "./sql_fragment.ts";

/**
 * A value read from a `json` column: the column's SQL and the keys below it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type JsonRef, jsonMember } from "moonbase/lib/rules/sql_json_path.ts";
 * const r: JsonRef = { column: '"meta"', path: ["a", "b"] };
 * assert.deepEqual(jsonMember(jsonMember({ column: '"meta"', path: [] }, "a"), "b"), r);
 * ```
 */
export interface JsonRef {
  readonly column: string;
  readonly path: readonly string[];
  /**
   * The column holds a JSON array of strings or SQL NULL (a multiple
   * relation's list of ids), never another JSON value: its `.length`
   * compiles ({@link listLength}).
   */
  readonly list?: boolean;
}

/** The types of a JSON value at a path, as JavaScript sees them. */
export type Kind =
  | "missing"
  | "null"
  | "true"
  | "false"
  | "number"
  | "string"
  | "array"
  | "object";

const KEY = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;

/**
 * `ref.key`, or NotCompilable for keys that are not plain names.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonMember } from "moonbase/lib/rules/sql_json_path.ts";
 * assert.deepEqual(jsonMember({ column: '"m"', path: [] }, "a"), { column: '"m"', path: ["a"] });
 * ```
 */
export function jsonMember(ref: JsonRef, key: string): JsonRef {
  if (!KEY.test(key) || key === "length" || key === "__proto__") {
    throw new NotCompilable(`json key ${key}`);
  }
  return { column: ref.column, path: [...ref.path, key] };
}

export const sqlitePath = (ref: JsonRef): string =>
  `'$${ref.path.map((k) => `."${k}"`).join("")}'`;
/** PostgreSQL: the jsonb value at the path (NULL when missing). */
export const pgValue = (ref: JsonRef): string =>
  ref.path.reduce((s, k) => `(${s} -> '${k}')`, ref.column);

const NAMES: Record<Dialect, Record<Kind, readonly string[]>> = {
  sqlite: {
    missing: ["missing"],
    null: ["null"],
    true: ["true"],
    false: ["false"],
    number: ["integer", "real"],
    string: ["text"],
    array: ["array"],
    object: ["object"],
  },
  postgres: {
    missing: ["missing"],
    null: ["null"],
    true: ["true"],
    false: ["false"],
    number: ["number"],
    string: ["string"],
    array: ["array"],
    object: ["object"],
  },
};

/** SQL naming the kind of the value (never NULL; a NULL column is JSON null at the root). */
function kindKey(ref: JsonRef, d: Dialect): string {
  const none = ref.path.length === 0 ? "null" : "missing";
  if (d === "sqlite") {
    return `COALESCE(json_type(${ref.column}, ${sqlitePath(ref)}), '${none}')`;
  }
  const v = pgValue(ref);
  return `COALESCE(CASE jsonb_typeof(${v}) WHEN 'boolean' THEN ${v} #>> '{}' ` +
    `ELSE jsonb_typeof(${v}) END, '${none}')`;
}

/** The value's kind is one of `kinds`. */
export function kindIn(ref: JsonRef, kinds: readonly Kind[], d: Dialect): Cond {
  // A root value is never missing (a NULL column is JSON null).
  const valid = kinds.filter((k) => ref.path.length > 0 || k !== "missing");
  if (valid.length === 0) return false;
  if (new Set(valid).size === (ref.path.length === 0 ? 7 : 8)) return true;
  const list = valid.flatMap((k) => NAMES[d][k]).map((n) => `'${n}'`);
  return { sql: `${kindKey(ref, d)} IN (${list.join(", ")})`, params: [] };
}

/** `CASE WHEN <kind> THEN <test> ELSE false END`: `test` only runs on that kind. */
export function onKind(ref: JsonRef, kind: Kind, test: Cond, d: Dialect): Cond {
  const is = kindIn(ref, [kind], d);
  if (typeof test === "boolean" || typeof is === "boolean") {
    return and(is, test);
  }
  const no = d === "postgres" ? "FALSE" : "0";
  return sql("(CASE WHEN ", is, " THEN ", test, ` ELSE ${no} END)`);
}

/** The string at the path (only meaningful for the string kind). */
export const jsonText = (ref: JsonRef, d: Dialect): string =>
  d === "sqlite"
    ? `(${ref.column} ->> ${sqlitePath(ref)})`
    : `(${pgValue(ref)} #>> '{}')`;

/** A JSON number compared with a finite double `k`. */
export function numberTest(
  ref: JsonRef,
  op: "=" | "<" | "<=" | ">" | ">=",
  k: number,
  d: Dialect,
): Cond {
  if (!Number.isFinite(k)) throw new NotCompilable("non-finite number");
  let test: Cond;
  if (d === "postgres") {
    // Exact decimals of shortest forms: decimal order is double order.
    test = sql(
      `CAST(${jsonText(ref, d)} AS numeric) ${op} CAST(`,
      textParam(String(k === 0 ? 0 : k), d),
      " AS numeric)",
    );
  } else {
    // SQLite reads a number's text to the double JSON.parse gives (checked
    // by sql_json_test.ts) — integer text within ±2^63 to an exact integer,
    // which CAST rounds to that double (23193437918487570 is not exact).
    test = {
      sql: `CAST(${jsonText(ref, d)} AS REAL) ${op} ?`,
      params: [k === 0 ? 0 : k],
    };
  }
  return onKind(ref, "number", test, d);
}

/** The JSON string at the path equals (or is ordered against) `s`. */
export function stringTest(
  ref: JsonRef,
  op: "=" | "<" | "<=" | ">" | ">=",
  s: string,
  d: Dialect,
): Cond {
  const collate = d === "postgres" && op !== "=" ? ' COLLATE "C"' : "";
  const test = sql(`${jsonText(ref, d)}${collate} ${op} `, textParam(s, d));
  return onKind(ref, "string", test, d);
}

/**
 * `.length` of a multiple relation's list ({@link JsonRef} `list`): the
 * number of ids; SQL NULL (a NULL column: `null.length` reads `undefined`)
 * otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listLength } from "moonbase/lib/rules/sql_json_path.ts";
 * const n = listLength({ column: '"tags"', path: [], list: true }, "sqlite");
 * assert.equal(n.sql, `(CASE WHEN json_type("tags") = 'array' THEN json_array_length("tags") END)`);
 * ```
 */
export function listLength(ref: JsonRef, d: Dialect): Column {
  if (!ref.list || ref.path.length > 0) {
    throw new NotCompilable("length of a json value");
  }
  const c = ref.column;
  const sql = d === "sqlite"
    ? `(CASE WHEN json_type(${c}) = 'array' THEN json_array_length(${c}) END)`
    : `(CASE WHEN jsonb_typeof(${c}) = 'array' THEN jsonb_array_length(${c}) END)`;
  return {
    sql,
    fieldType: "int",
    family: "number",
    nullValue: undefined,
    bound: 2_000_000,
    integral: true,
  };
}
