/**
 * Evaluator of parsed rules/filters with JavaScript semantics over plain
 * JSON-like scope data. It walks the AST (never `eval`), can only read own
 * data properties, calls only the helpers it is given, and is bounded by the
 * AST size limits and {@link MAX_STRING_LENGTH}.
 *
 * Deviations from JavaScript, all in the "harmless" direction:
 * - reading a property of `null`/`undefined` (or of anything that is not a
 *   string, array or plain object) gives `undefined` instead of throwing, and
 *   inherited members (`constructor`, `toString`…) are never visible;
 * - `.includes/.startsWith/.endsWith` on a value that has no such method give
 *   `undefined` instead of throwing;
 * - converting an object that JavaScript would convert by calling one of its
 *   own functions throws a {@link RuleEvalError} instead of calling it.
 *
 * @module
 */

import type { Expr } from "./ast.ts";
import {
  binary,
  getMember,
  isPlainArray,
  negate,
  RuleEvalError,
  toString,
  truthy,
} from "./values.ts";

export { MAX_STRING_LENGTH, RuleEvalError } from "./values.ts";

/**
 * What an expression can read. Rule mode: `{auth, req, record}`. Filter mode:
 * the record's fields as bare names plus `auth`, i.e. `{...record, auth}`
 * (a field named `auth` is not reachable from a filter). Only own data
 * properties of the scope are read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type RuleScope, test } from "moonbase/lib/rules/evaluate.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const rule: RuleScope = { auth: { id: "" }, req: { method: "GET" }, record: { title: "x" } };
 * assert.equal(test(parseExpression('record.title == "x"', { mode: "rule" }), rule), true);
 * const filter: RuleScope = { title: "x", auth: { id: "" } };
 * const fields = new Set(["title"]);
 * assert.equal(test(parseExpression('title == "x"', { mode: "filter", fields }), filter), true);
 * ```
 */
export interface RuleScope {
  readonly auth?: unknown;
  readonly req?: unknown;
  readonly record?: unknown;
  /** Filter mode: the record's fields. */
  readonly [field: string]: unknown;
}

/**
 * Helper functions callable from rules (`name(args…)`), e.g. exported by
 * scripts. They must be synchronous: a helper returning a promise is an error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { evaluate, type RuleHelpers } from "moonbase/lib/rules/evaluate.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const helpers: RuleHelpers = new Map([["double", (x: unknown) => Number(x) * 2]]);
 * const e = parseExpression("double(record.n)", { mode: "rule", helpers: new Set(helpers.keys()) });
 * assert.equal(evaluate(e, { record: { n: 21 } }, helpers), 42);
 * ```
 */
export type RuleHelpers = ReadonlyMap<string, (...args: unknown[]) => unknown>;

/**
 * `object.method(argument)`: `includes`/`startsWith`/`endsWith` on strings
 * (the argument converted with `ToString`), `includes` on arrays
 * (SameValueZero). On any other receiver the call gives `undefined` instead of
 * throwing a TypeError (like optional chaining).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callMethod } from "moonbase/lib/rules/evaluate.ts";
 * assert.equal(callMethod("hello", "startsWith", "he"), true);
 * assert.equal(callMethod(["a", 1], "includes", 1), true);
 * assert.equal(callMethod(null, "includes", "x"), undefined);
 * ```
 */
export function callMethod(
  object: unknown,
  method: string,
  argument: unknown,
): unknown {
  if (typeof object === "string") {
    const s = toString(argument);
    if (method === "includes") return object.includes(s);
    if (method === "startsWith") return object.startsWith(s);
    if (method === "endsWith") return object.endsWith(s);
    return undefined;
  }
  if (method !== "includes" || !isPlainArray(object)) return undefined;
  const array = object;
  for (let i = 0; i < array.length; i++) {
    const e = getMember(array, String(i));
    if (e === argument || (e !== e && argument !== argument)) return true;
  }
  return false;
}

function callHelper(
  name: string,
  args: unknown[],
  helpers: RuleHelpers | undefined,
): unknown {
  const fn = helpers?.get(name);
  if (typeof fn !== "function") {
    throw new RuleEvalError(`unknown helper "${name}"`);
  }
  let result: unknown;
  try {
    result = fn(...args);
  } catch (e) {
    throw new RuleEvalError(
      `helper "${name}" failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  const then = typeof result === "object" && result !== null
    ? Reflect.get(result, "then")
    : undefined;
  if (result instanceof Promise || typeof then === "function") {
    throw new RuleEvalError(
      `helper "${name}" returned a promise; helpers must be synchronous`,
    );
  }
  return result;
}

function evalNode(
  e: Expr,
  scope: RuleScope,
  helpers: RuleHelpers | undefined,
): unknown {
  switch (e.type) {
    case "literal":
      return e.value;
    case "root":
      return getMember(scope, e.name);
    case "field":
      return getMember(scope, e.name);
    case "member":
      return getMember(evalNode(e.object, scope, helpers), e.property);
    case "unary": {
      const v = evalNode(e.argument, scope, helpers);
      return e.operator === "!" ? !truthy(v) : negate(v);
    }
    case "binary": {
      const left = evalNode(e.left, scope, helpers);
      return binary(e.operator, left, evalNode(e.right, scope, helpers));
    }
    case "logical": {
      const left = evalNode(e.left, scope, helpers);
      if (e.operator === "&&" ? !truthy(left) : truthy(left)) return left;
      return evalNode(e.right, scope, helpers);
    }
    case "method": {
      const object = evalNode(e.object, scope, helpers);
      return callMethod(object, e.method, evalNode(e.argument, scope, helpers));
    }
    case "call":
      return callHelper(
        e.name,
        e.args.map((a) => evalNode(a, scope, helpers)),
        helpers,
      );
  }
}

/**
 * Evaluates an expression and returns its JavaScript value.
 *
 * @throws {RuleEvalError} when the rule cannot be evaluated (helper failure,
 * string growth past {@link MAX_STRING_LENGTH}, unconvertible value…)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { evaluate } from "moonbase/lib/rules/evaluate.ts";
 * const e = parseExpression('record.title + "!"', { mode: "rule" });
 * assert.equal(evaluate(e, { record: { title: "hi" } }), "hi!");
 * ```
 */
export function evaluate(
  expr: Expr,
  scope: RuleScope,
  helpers?: RuleHelpers,
): unknown {
  try {
    return evalNode(expr, scope, helpers);
  } catch (e) {
    if (e instanceof RuleEvalError) throw e;
    // e.g. a RangeError from a runaway stack: still only an evaluation failure.
    throw new RuleEvalError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * Evaluates an expression as a condition: true when its value is JavaScript
 * truthy. Never throws — any evaluation error means `false` (deny).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { test } from "moonbase/lib/rules/evaluate.ts";
 * const e = parseExpression("record.owner == auth.id", { mode: "rule" });
 * assert.equal(test(e, { auth: { id: "u1" }, record: { owner: "u1" } }), true);
 * assert.equal(test(e, { auth: { id: "u1" }, record: { owner: "u2" } }), false);
 * ```
 */
export function test(
  expr: Expr,
  scope: RuleScope,
  helpers?: RuleHelpers,
): boolean {
  try {
    return truthy(evalNode(expr, scope, helpers));
  } catch {
    // A condition that fails denies (callers that log failures use evaluate()).
    return false;
  }
}
