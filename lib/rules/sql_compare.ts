/**
 * Compiles the comparison operators (`== != === !== < <= > >=`) between
 * record columns, compile-time values and boolean conditions into NULL-free
 * SQL conditions with exactly the JavaScript result the evaluator computes
 * for the decoded row values, or throws {@link NotCompilable}.
 *
 * Method: the result for a NULL column is computed at compile time with the
 * evaluator's own operators; for non-NULL values the JavaScript coercion is
 * resolved against the column's family (text / number / bool) at compile time,
 * leaving a plain SQL comparison of like types.
 *
 * @module
 */

import type { BinaryOperator } from "./ast.ts";
import {
  and,
  type Cond,
  type Dialect,
  not,
  NotCompilable,
  numberParam,
  sql,
  textParam,
  whenNull,
} from "./sql_fragment.ts";
import { type Column, isNull, nullOf } from "./sql_column.ts";
import { binary, toPrimitive } from "./values.ts";

/** The comparison operators. */
export type CompareOperator =
  | "=="
  | "!="
  | "==="
  | "!=="
  | "<"
  | "<="
  | ">"
  | ">=";

const MIRROR: Readonly<Record<CompareOperator, CompareOperator>> = {
  "==": "==",
  "!=": "!=",
  "===": "===",
  "!==": "!==",
  "<": ">",
  "<=": ">=",
  ">": "<",
  ">=": "<=",
};

/**
 * True for the comparison operators.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCompareOperator } from "moonbase/lib/rules/sql_compare.ts";
 * assert.equal(isCompareOperator("<="), true);
 * assert.equal(isCompareOperator("+"), false);
 * ```
 */
export function isCompareOperator(op: BinaryOperator): op is CompareOperator {
  return Object.hasOwn(MIRROR, op);
}

/**
 * The operator giving the same result with swapped operands (`a < b` ⇔ `b > a`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mirror } from "moonbase/lib/rules/sql_compare.ts";
 * assert.equal(mirror("<"), ">");
 * assert.equal(mirror("=="), "==");
 * ```
 */
export function mirror(op: CompareOperator): CompareOperator {
  return MIRROR[op];
}

/** JavaScript result of `a op b` (throws RuleEvalError like the evaluator). */
const js = (op: CompareOperator, a: unknown, b: unknown): boolean =>
  binary(op, a, b) === true;

/** `!=`/`!==` are the negation of `==`/`===`. */
const negated = (op: CompareOperator): boolean => op === "!=" || op === "!==";
const positive = (op: CompareOperator): CompareOperator =>
  op === "!=" ? "==" : op === "!==" ? "===" : op;
const sqlOp = (op: CompareOperator): string =>
  op === "==" || op === "===" ? "=" : op;

/**
 * A condition on a NULL-free boolean SQL value `x` from the results wanted
 * for true and for false.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { byBoolean } from "moonbase/lib/rules/sql_compare.ts";
 * const x = { sql: "x", params: [] };
 * assert.equal(byBoolean(x, true, false), x);
 * assert.deepEqual(byBoolean(x, false, true), { sql: "NOT (x)", params: [] });
 * assert.equal(byBoolean(x, true, true), true);
 * ```
 */
export function byBoolean(x: Cond, ifTrue: boolean, ifFalse: boolean): Cond {
  if (ifTrue === ifFalse) return ifTrue;
  return ifTrue ? x : not(x);
}

/**
 * Strings whose UTF-16 order may differ from UTF-8 byte order against some value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hasHighCodeUnits } from "moonbase/lib/rules/sql_compare.ts";
 * assert.equal(hasHighCodeUnits("😀"), true);
 * assert.equal(hasHighCodeUnits("é"), false);
 * ```
 */
export function hasHighCodeUnits(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0xd800) return true;
  return false;
}

/** Condition for a non-NULL column value `c op v` (op is not `!=`/`!==`). */
function nonNullCompare(
  op: CompareOperator,
  c: Column,
  v: unknown,
  d: Dialect,
): Cond {
  if (c.family === "bool") {
    const ifTrue = js(op, true, v);
    const ifFalse = js(op, false, v);
    if (ifTrue === ifFalse) return ifTrue;
    return { sql: `${c.sql} IS ${ifTrue ? "TRUE" : "FALSE"}`, params: [] };
  }
  if (op === "===") {
    if (c.family === "text") {
      return typeof v === "string"
        ? sql(`${c.sql} = `, textParam(v, d))
        : false;
    }
    return typeof v === "number" && !Number.isNaN(v)
      ? sql(`${c.sql} = `, numberParam(v, c.fieldType, d))
      : false;
  }
  // Loose equality and relations convert an object operand to a primitive
  // first; a nullish operand is never loosely equal to a string or number.
  const p = toPrimitive(v);
  if (op === "==" && (p === null || p === undefined)) return false;
  if (c.family === "text" && typeof p === "string") {
    if (op === "==") return sql(`${c.sql} = `, textParam(p, d));
    // SQLite BINARY and PostgreSQL "C" compare UTF-8 bytes: the same order
    // as UTF-16 code units unless the constant has units ≥ U+D800.
    if (hasHighCodeUnits(p)) {
      throw new NotCompilable("string order differs between UTF-8 and UTF-16");
    }
    const collate = d === "postgres" ? ' COLLATE "C"' : "";
    return sql(`${c.sql}${collate} ${op} `, textParam(p, d));
  }
  // Everything else compares numerically: ToNumber(c) op ToNumber(p).
  if (typeof p === "bigint" || typeof p === "symbol") {
    throw new NotCompilable("bigint or symbol operand");
  }
  const k = Number(p);
  if (Number.isNaN(k)) return false; // NaN compares false with everything
  if (c.family === "text") {
    throw new NotCompilable("string column compared as a number");
  }
  return sql(`${c.sql} ${sqlOp(op)} `, numberParam(k, c.fieldType, d));
}

/**
 * `column op value` where `value` is known at compile time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareColumnConst } from "moonbase/lib/rules/sql_compare.ts";
 * const c = compareColumnConst("!=", { sql: '"t"', fieldType: "string", family: "text" }, "a", "sqlite");
 * assert.deepEqual(c, { sql: '("t" IS NULL OR NOT ("t" = ?))', params: ["a"] });
 * ```
 */
export function compareColumnConst(
  op: CompareOperator,
  c: Column,
  v: unknown,
  d: Dialect,
): Cond {
  const onNull = js(op, nullOf(c), v);
  const base = nonNullCompare(positive(op), c, v, d);
  return whenNull(c, onNull, negated(op) ? not(base) : base);
}

/** A numeric SQL value of a number/bool column with NULL as 0 (JavaScript ToNumber). */
function asNumber(c: Column, d: Dialect): string {
  const value = c.family === "bool" && d === "postgres"
    ? `CAST(${c.sql} AS integer)`
    : c.sql;
  return `COALESCE(${value}, 0)`;
}

/**
 * `a op b` between two columns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareColumns } from "moonbase/lib/rules/sql_compare.ts";
 * const a = { sql: '"a"', fieldType: "string", family: "text" } as const;
 * const b = { sql: '"b"', fieldType: "date", family: "text" } as const;
 * const c = compareColumns("==", a, b, "postgres");
 * assert.deepEqual(c, { sql: '"a" IS NOT DISTINCT FROM "b"', params: [] });
 * ```
 */
export function compareColumns(
  op: CompareOperator,
  a: Column,
  b: Column,
  d: Dialect,
): Cond {
  const numeric = (c: Column) => c.family !== "text";
  if (nullOf(a) !== null || nullOf(b) !== null) {
    throw new NotCompilable("comparison of two computed values");
  }
  if (op === "<" || op === "<=" || op === ">" || op === ">=") {
    if (!numeric(a) || !numeric(b)) {
      throw new NotCompilable("string order of two columns");
    }
    return { sql: `${asNumber(a, d)} ${op} ${asNumber(b, d)}`, params: [] };
  }
  let equal: Cond;
  if (a.family !== b.family && positive(op) === "===") {
    equal = and(isNull(a), isNull(b)); // values of different types: only null === null
  } else if (a.family === b.family || (numeric(a) && numeric(b))) {
    const side = (c: Column) =>
      c.family === "bool" && a.family !== b.family && d === "postgres"
        ? `CAST(${c.sql} AS integer)`
        : c.sql;
    const same = d === "postgres" ? "IS NOT DISTINCT FROM" : "IS";
    equal = { sql: `${side(a)} ${same} ${side(b)}`, params: [] };
  } else {
    throw new NotCompilable(
      "string column loosely compared with a number column",
    );
  }
  return negated(op) ? not(equal) : equal;
}

/**
 * `x op value` where `x` is a NULL-free boolean condition (a JavaScript
 * boolean, such as the result of another comparison or of `!`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareBoolConst } from "moonbase/lib/rules/sql_compare.ts";
 * const x = { sql: "x", params: [] };
 * // true == 1 is true and false == 1 is false: the condition is x itself.
 * assert.equal(compareBoolConst("==", x, 1), x);
 * assert.equal(compareBoolConst("==", x, null), false);
 * ```
 */
export function compareBoolConst(
  op: CompareOperator,
  x: Cond,
  v: unknown,
): Cond {
  return byBoolean(x, js(op, true, v), js(op, false, v));
}

/**
 * `x op y` between two NULL-free boolean conditions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareBools } from "moonbase/lib/rules/sql_compare.ts";
 * const c = compareBools("!==", { sql: "x", params: [] }, { sql: "y", params: [] });
 * assert.deepEqual(c, { sql: "(x) <> (y)", params: [] });
 * ```
 */
export function compareBools(op: CompareOperator, x: Cond, y: Cond): Cond {
  if (typeof x === "boolean") return compareBoolConst(mirror(op), y, x);
  if (typeof y === "boolean") return compareBoolConst(op, x, y);
  const o = negated(op) ? "<>" : sqlOp(op);
  // Both dialects order false before true, like JavaScript's 0 < 1.
  return sql("(", x, `) ${o} (`, y, ")");
}
