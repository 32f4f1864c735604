/**
 * The compiler's view of a sub-expression: a value known at compile time, a
 * record column, a JavaScript boolean computed in SQL, or a value of which
 * only the JavaScript truthiness is known in SQL — and the comparison of two
 * such values. JSON comparisons may leave rows *unsure* (see `sql_json.ts`):
 * a `bool`/`truthy` value then carries the condition selecting them, and its
 * `cond` is exact only outside it.
 *
 * @module
 */

import {
  compareBoolConst,
  compareBools,
  compareColumnConst,
  compareColumns,
  type CompareOperator,
  mirror,
} from "./sql_compare.ts";
import { type Cond, type Dialect, NotCompilable, or } from "./sql_fragment.ts";
import { type Column, columnTruthy } from "./sql_column.ts";
import { compareJson, jsonTruthy } from "./sql_json.ts";
import type { JsonRef } from "./sql_json_path.ts";
import { binary, truthy } from "./values.ts";

/**
 * A compiled sub-expression.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boolean, type Compiled } from "moonbase/lib/rules/sql_value.ts";
 * const c: Compiled = { kind: "bool", cond: { sql: '"a" IS NULL', params: [] } };
 * assert.deepEqual(boolean({ sql: '"a" IS NULL', params: [] }), c);
 * ```
 */
export type Compiled =
  /** Value known at compile time. */
  | { readonly kind: "const"; readonly value: unknown }
  /** A record column (nullable). */
  | { readonly kind: "column"; readonly column: Column }
  /** A value read from a json column. */
  | { readonly kind: "json"; readonly json: JsonRef }
  /** A JavaScript boolean: the NULL-free condition is its value. */
  | { readonly kind: "bool"; readonly cond: Cond; readonly unsure?: Cond }
  /** Some value whose JavaScript truthiness is the condition. */
  | { readonly kind: "truthy"; readonly cond: Cond; readonly unsure?: Cond };

/**
 * A JavaScript boolean; a condition known at compile time becomes a constant
 * (unless some rows are unsure).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boolean } from "moonbase/lib/rules/sql_value.ts";
 * assert.deepEqual(boolean(true), { kind: "const", value: true });
 * assert.deepEqual(boolean({ sql: "x", params: [] }), { kind: "bool", cond: { sql: "x", params: [] } });
 * ```
 */
export function boolean(cond: Cond, unsure: Cond = false): Compiled {
  if (unsure !== false) return { kind: "bool", cond, unsure };
  return typeof cond === "boolean"
    ? { kind: "const", value: cond }
    : { kind: "bool", cond };
}

/**
 * The rows on which a compiled value's condition may differ from JavaScript
 * (`false`: none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unsureOf } from "moonbase/lib/rules/sql_value.ts";
 * assert.equal(unsureOf({ kind: "const", value: 1 }), false);
 * ```
 */
export function unsureOf(c: Compiled): Cond {
  return (c.kind === "bool" || c.kind === "truthy") && c.unsure !== undefined
    ? c.unsure
    : false;
}

/**
 * The JavaScript truthiness of a compiled value, as a NULL-free condition.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { truthyCond } from "moonbase/lib/rules/sql_value.ts";
 * assert.equal(truthyCond({ kind: "const", value: "0" }, "sqlite"), true);
 * assert.equal(truthyCond({ kind: "const", value: "" }, "sqlite"), false);
 * ```
 */
export function truthyCond(c: Compiled, d: Dialect): Cond {
  switch (c.kind) {
    case "const":
      return truthy(c.value);
    case "column":
      return columnTruthy(c.column);
    case "json":
      return jsonTruthy(c.json, d);
    default:
      return c.cond;
  }
}

/**
 * `left op right` for two compiled values.
 *
 * @throws {NotCompilable} when the comparison cannot be compiled exactly
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compareValues } from "moonbase/lib/rules/sql_value.ts";
 * const column = { sql: '"n"', fieldType: "int", family: "number" } as const;
 * const c = compareValues("<", { kind: "const", value: 5 }, { kind: "column", column }, "sqlite");
 * assert.deepEqual(c, { kind: "bool", cond: { sql: '("n" IS NOT NULL AND "n" > ?)', params: [5] } });
 * ```
 */
export function compareValues(
  op: CompareOperator,
  left: Compiled,
  right: Compiled,
  d: Dialect,
): Compiled {
  if (left.kind === "const" && right.kind === "const") {
    return { kind: "const", value: binary(op, left.value, right.value) };
  }
  // Put the row-dependent side first: `v < x` is `x > v` in JavaScript.
  if (
    left.kind === "const" ||
    (left.kind === "column" && right.kind === "bool") ||
    (left.kind !== "json" && right.kind === "json")
  ) {
    return compareValues(mirror(op), right, left, d);
  }
  if (left.kind === "json" && right.kind === "const") {
    const r = compareJson(op, left.json, right.value, d);
    return boolean(r.cond, r.unsure);
  }
  if (left.kind === "column" && right.kind === "const") {
    return boolean(compareColumnConst(op, left.column, right.value, d));
  }
  if (left.kind === "column" && right.kind === "column") {
    return boolean(compareColumns(op, left.column, right.column, d));
  }
  if (left.kind === "bool" && right.kind === "const") {
    return boolean(
      compareBoolConst(op, left.cond, right.value),
      unsureOf(left),
    );
  }
  if (left.kind === "bool" && right.kind === "bool") {
    return boolean(
      compareBools(op, left.cond, right.cond),
      or(unsureOf(left), unsureOf(right)),
    );
  }
  throw new NotCompilable(`comparison of ${left.kind} and ${right.kind}`);
}
