/**
 * Questions about a parsed expression: does it read the record, the request?
 * (Re-exported by `parser.ts`.)
 *
 * @module
 */

import type { Expr } from "./ast.ts";

/** True when `expr` or one of its sub-expressions satisfies `test`. */
function some(expr: Expr, test: (e: Expr) => boolean): boolean {
  if (test(expr)) return true;
  switch (expr.type) {
    case "member":
      return some(expr.object, test);
    case "unary":
    case "textFunction":
      return some(expr.argument, test);
    case "binary":
    case "logical":
      return some(expr.left, test) || some(expr.right, test);
    case "method":
      return some(expr.object, test) || some(expr.argument, test);
    case "call":
      return expr.args.some((a) => some(a, test));
    case "relation":
      return some(expr.object, test);
    case "quantifier":
      return some(expr.object, test) || some(expr.body, test);
    default:
      return false;
  }
}

/**
 * True when the expression reads the record (`record…`, a bare field in
 * filter mode, or the parameter of a quantifier over the record's
 * relations: `rowParams`, inside one), i.e. its outcome depends on the row.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { readsRecord } from "moonbase/lib/rules/walk.ts";
 * assert.equal(readsRecord(parseExpression("record.a == 1", { mode: "rule" })), true);
 * assert.equal(readsRecord(parseExpression("auth.id != ''", { mode: "rule" })), false);
 * ```
 */
export function readsRecord(
  expr: Expr,
  rowParams: ReadonlySet<string> = NONE,
): boolean {
  switch (expr.type) {
    case "root":
      return expr.name === "record";
    case "field":
      return true;
    case "param":
      return rowParams.has(expr.name);
    case "member":
    case "relation":
      return readsRecord(expr.object, rowParams);
    case "unary":
    case "textFunction":
      return readsRecord(expr.argument, rowParams);
    case "binary":
    case "logical":
      return readsRecord(expr.left, rowParams) ||
        readsRecord(expr.right, rowParams);
    case "method":
      return readsRecord(expr.object, rowParams) ||
        readsRecord(expr.argument, rowParams);
    case "call":
      return expr.args.some((a) => readsRecord(a, rowParams));
    case "quantifier": {
      if (readsRecord(expr.object, rowParams)) return true;
      // Over a list that does not depend on the row, the parameter does not either.
      if (!rowParams.has(expr.param)) return readsRecord(expr.body, rowParams);
      const inner = new Set(rowParams);
      inner.delete(expr.param);
      return readsRecord(expr.body, inner);
    }
    default:
      return false;
  }
}

const NONE: ReadonlySet<string> = new Set();

/**
 * True when the expression reads the request (`req…`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { readsRequest } from "moonbase/lib/rules/walk.ts";
 * assert.equal(readsRequest(parseExpression("req.body.x == 1", { mode: "rule" })), true);
 * assert.equal(readsRequest(parseExpression("record.x == 1", { mode: "rule" })), false);
 * ```
 */
export function readsRequest(expr: Expr): boolean {
  return some(expr, (e) => e.type === "root" && e.name === "req");
}

/** Members of `auth` no caller can change. */
const FIXED_AUTH = new Set(["id", "entity", "type"]);

/**
 * True when the expression reads caller data a user may be able to change:
 * `auth.user…` (their own record), or `auth` as a whole — anything but
 * `auth.id`, `auth.entity` and `auth.type`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { readsCallerData } from "moonbase/lib/rules/walk.ts";
 * const reads = (s: string) => readsCallerData(parseExpression(s, { mode: "rule" }));
 * assert.equal(reads("record.owner == auth.id"), false);
 * assert.equal(reads("record.team == auth.user.team"), true);
 * assert.equal(reads("record.x == auth"), true);
 * ```
 */
export function readsCallerData(expr: Expr): boolean {
  switch (expr.type) {
    case "root":
      return expr.name === "auth";
    case "member":
      return expr.object.type === "root" && expr.object.name === "auth"
        ? !FIXED_AUTH.has(expr.property)
        : readsCallerData(expr.object);
    case "unary":
    case "textFunction":
      return readsCallerData(expr.argument);
    case "binary":
    case "logical":
      return readsCallerData(expr.left) || readsCallerData(expr.right);
    case "method":
      return readsCallerData(expr.object) || readsCallerData(expr.argument);
    case "call":
      return expr.args.some(readsCallerData);
    case "relation":
      return readsCallerData(expr.object);
    case "quantifier":
      return readsCallerData(expr.object) || readsCallerData(expr.body);
    default:
      return false;
  }
}

/**
 * True when the value of `expr` depends on the record alone: no `auth`, no
 * `req`, no helper call (whose answer may change). Its SQL is then the same
 * for every caller and request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isClosed } from "moonbase/lib/rules/walk.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const fields = new Set(["n", "tag", "owner"]);
 * const closed = (s: string) =>
 *   isClosed(parseExpression(s, { mode: "filter", fields }));
 * assert.equal(closed('n >= 2 && tag == "a"'), true);
 * assert.equal(closed("owner == auth.id"), false);
 * const rule = parseExpression('req.method == "GET"', { mode: "rule" });
 * assert.equal(isClosed(rule), false);
 * ```
 */
export function isClosed(expr: Expr): boolean {
  return !some(
    expr,
    (e) =>
      (e.type === "root" && (e.name === "auth" || e.name === "req")) ||
      e.type === "call",
  );
}

/**
 * True when the value of `expr` depends on the record and the caller's
 * fixed members alone (`auth.id`, `auth.entity`, `auth.type`): no `req`, no
 * `auth.user…` or `auth` as a whole, no helper call. Its SQL is then the same
 * for every request of one caller.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readsFixedCallerOnly } from "moonbase/lib/rules/walk.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const fixed = (s: string) =>
 *   readsFixedCallerOnly(parseExpression(s, { mode: "rule" }));
 * assert.equal(fixed("record.owner == auth.id"), true);
 * assert.equal(fixed("record.team == auth.user.team"), false);
 * assert.equal(fixed('req.method == "GET"'), false);
 * ```
 */
export function readsFixedCallerOnly(expr: Expr): boolean {
  return !some(
    expr,
    (e) => (e.type === "root" && e.name === "req") || e.type === "call",
  ) && !readsCallerData(expr);
}
