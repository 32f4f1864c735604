/**
 * Reads of `json` fields (`record.meta.a.b`) compiled to SQL on both
 * databases, for the operations whose JavaScript result SQL can decide
 * exactly from the JSON type at the path and its value:
 *
 * - truthiness, `===`/`!==` with any value known at compile time,
 *   `== null`/`!= null`;
 * - `==`/`!=` and `< <= > >=` with a value known at compile time, exactly for
 *   missing, null, booleans, numbers and (for string comparisons) strings; the
 *   JavaScript conversions of objects and arrays (joined text, or an error
 *   for an object with its own `toString`) and of strings to numbers
 *   (`Number(" 0x10 ")`) have no SQL equivalent: such rows are *unsure*;
 * - `.includes(x)` of a JSON array (SameValueZero on a primitive `x`) or a
 *   JSON string.
 *
 * A comparison yields a condition exact on every row outside its `unsure`
 * condition. The path, the JSON type at it and the storage assumptions are
 * sql_json_path.ts's.
 *
 * @module
 */

import type { CompareOperator } from "./sql_compare.ts";
import { hasHighCodeUnits } from "./sql_compare.ts";
import {
  and,
  type Cond,
  type Dialect,
  not,
  NotCompilable,
  or,
  sql,
  textParam,
} from "./sql_fragment.ts";
import {
  type JsonRef,
  jsonText,
  type Kind,
  kindIn,
  numberTest,
  onKind,
  pgValue,
  sqlitePath,
  stringTest,
} from "./sql_json_path.ts";
import { binary, toPrimitive, toString } from "./values.ts";

/** A condition exact outside `unsure` (the rows SQL cannot decide). */
export interface JsonCond {
  readonly cond: Cond;
  readonly unsure: Cond;
}

const FIXED: readonly [Kind, unknown][] = [
  ["missing", undefined],
  ["null", null],
  ["true", true],
  ["false", false],
];

/** Truthiness: not missing, null, false, 0 or "". */
export function jsonTruthy(ref: JsonRef, d: Dialect): Cond {
  return or(
    kindIn(ref, ["true", "array", "object"], d),
    or(
      and(kindIn(ref, ["number"], d), not(numberTest(ref, "=", 0, d))),
      and(kindIn(ref, ["string"], d), not(stringTest(ref, "=", "", d))),
    ),
  );
}

/** Per kind: a known result, an SQL test, or "unsure". */
type Outcome = Cond | "unsure";

const positive = (op: CompareOperator): CompareOperator =>
  op === "!=" ? "==" : op === "!==" ? "===" : op;
const isObject = (v: unknown) =>
  (typeof v === "object" && v !== null) || typeof v === "function";

/** Number and string outcomes of `x op v` (op positive). */
function valueOutcomes(
  ref: JsonRef,
  op: CompareOperator,
  v: unknown,
  d: Dialect,
): { number: Outcome; string: Outcome; object: Outcome } {
  if (op === "===") {
    return {
      number: typeof v === "number" && Number.isFinite(v)
        ? numberTest(ref, "=", v, d)
        : false,
      string: typeof v === "string" ? stringTest(ref, "=", v, d) : false,
      object: false, // a row's value is never the same object
    };
  }
  if (op === "==") {
    if (v === null || v === undefined) {
      return { number: false, string: false, object: false };
    }
    const p = toPrimitive(v); // throws like the evaluator would for every row
    if (typeof p === "bigint" || typeof p === "symbol") {
      throw new NotCompilable("bigint or symbol");
    }
    const k = Number(p);
    return {
      number: Number.isFinite(k) ? numberTest(ref, "=", k, d) : false,
      string: typeof p === "string" ? stringTest(ref, "=", p, d) : "unsure",
      // Object == object compares identity; else the row's object converts.
      object: isObject(v) ? false : "unsure",
    };
  }
  // Relations: both sides to primitives, strings compare by code units,
  // anything else as numbers.
  const p = toPrimitive(v);
  if (typeof p === "bigint" || typeof p === "symbol") {
    throw new NotCompilable("bigint or symbol");
  }
  const rel = op as "<" | "<=" | ">" | ">=";
  const k = Number(p);
  let number: Outcome;
  if (Number.isNaN(k)) number = false;
  else if (Number.isFinite(k)) number = numberTest(ref, rel, k, d);
  else number = binary(op, 0, k) === true; // every JSON number is finite
  let string: Outcome = "unsure"; // Number(string) has no SQL equivalent
  if (p === undefined) string = false; // NaN
  else if (typeof p === "string" && !hasHighCodeUnits(p)) {
    string = stringTest(ref, rel, p, d);
  }
  // The row's object or array converts (and may throw: an own `toString`).
  return { number, string, object: "unsure" };
}

/**
 * `ref op v` for a value `v` known at compile time.
 *
 * @throws {NotCompilable} (or the evaluator's error) when no row could be decided
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareJson } from "moonbase/lib/rules/sql_json.ts";
 * const r = compareJson("===", { column: '"m"', path: ["k"] }, null, "sqlite");
 * assert.deepEqual(r, {
 *   cond: { sql: `COALESCE(json_type("m", '$."k"'), 'missing') IN ('null')`, params: [] },
 *   unsure: false,
 * });
 * ```
 */
export function compareJson(
  op: CompareOperator,
  ref: JsonRef,
  v: unknown,
  d: Dialect,
): JsonCond {
  const pos = positive(op);
  const out = new Map<Kind, Outcome>();
  for (const [kind, value] of FIXED) {
    out.set(kind, binary(pos, value, v) === true);
  }
  const values = valueOutcomes(ref, pos, v, d);
  out.set("number", values.number);
  out.set("string", values.string);
  out.set("array", values.object);
  out.set("object", values.object);
  let cond: Cond = false;
  const unsure: Kind[] = [];
  const known: Kind[] = [];
  for (const [kind, o] of out) {
    if (o === "unsure") unsure.push(kind);
    else if (o === true) known.push(kind);
    else if (o !== false) cond = or(cond, o); // tests check their kind themselves
  }
  cond = or(kindIn(ref, known, d), cond);
  return {
    cond: pos === op ? cond : not(cond),
    unsure: kindIn(ref, unsure, d),
  };
}

/**
 * `ref.includes(a)` for `a` known at compile time: SameValueZero membership
 * for a JSON array, substring for a JSON string, `undefined` (falsy)
 * otherwise. The result is exact (only its truthiness is used).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonIncludes } from "moonbase/lib/rules/sql_json.ts";
 * const c = jsonIncludes({ column: '"m"', path: ["tags"] }, "x", "postgres");
 * assert.ok(typeof c !== "boolean");
 * assert.match(c.sql, /@> jsonb_build_array\(\?::text\)/); // an array element
 * assert.match(c.sql, /strpos\(/); // or a substring of a string
 * assert.deepEqual(c.params, ["x", "x"]);
 * ```
 */
export function jsonIncludes(ref: JsonRef, a: unknown, d: Dialect): Cond {
  const s = toString(a); // the string receiver converts its argument
  const inString = s === "" ? true : sql(
    d === "postgres"
      ? `strpos(${jsonText(ref, d)}, `
      : `instr(${jsonText(ref, d)}, `,
    textParam(s, d),
    ") > 0",
  );
  let member: Cond;
  if (typeof a === "number" && Number.isNaN(a)) member = false;
  else if (a === undefined || isObject(a)) member = false; // JSON holds neither
  else if (typeof a === "number" && !Number.isFinite(a)) member = false;
  else if (d === "postgres") {
    const one = typeof a === "string"
      ? sql("jsonb_build_array(", textParam(a, d), ")")
      : typeof a === "number"
      ? sql("jsonb_build_array(CAST(", textParam(String(a), d), " AS numeric))")
      : { sql: `'[${JSON.stringify(a)}]'::jsonb`, params: [] };
    // Top-level containment of a scalar in an array: some element equals it.
    member = sql(`${pgValue(ref)} @> `, one);
  } else {
    const each = `json_each(${ref.column}, ${sqlitePath(ref)})`;
    const test: Cond = typeof a === "string"
      ? sql("e.type = 'text' AND e.value = ", textParam(a, d))
      : typeof a === "number"
      ? {
        sql: "e.type IN ('integer', 'real') AND CAST(e.value AS REAL) = ?",
        params: [a === 0 ? 0 : a],
      }
      : { sql: `e.type = '${String(a)}'`, params: [] };
    member = sql(`EXISTS (SELECT 1 FROM ${each} AS e WHERE `, test, ")");
  }
  return or(
    onKind(ref, "array", member, d),
    onKind(ref, "string", inString, d),
  );
}
