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

import type { Expr, RelationNode, TextFunction } from "./ast.ts";
import { foldText } from "./text_fold.ts";
import {
  ABSENT,
  binary,
  getMember,
  isPlainArray,
  negate,
  RuleEvalError,
  toString,
  truthy,
} from "./values.ts";

export { ABSENT, MAX_STRING_LENGTH, RuleEvalError } from "./values.ts";

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
 * The records a rule reads through relations, loaded before it is
 * evaluated (lib/records/rule_relations.ts loads them; the evaluator never
 * waits). `get` answers what relation `node` of `parent` (a record the
 * evaluator met) holds: the related record or {@link ABSENT} (forward), the
 * related records (back); it throws a {@link RuleEvalError} for one it did
 * not load (the rule then denies).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { evaluate, type Related } from "moonbase/lib/rules/evaluate.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { bindRelations } from "moonbase/lib/rules/relations.ts";
 * const tasks = { name: "tasks", fieldNames: ["id", "project"],
 *   field: (n: string) => n === "project" ? { type: "relation", target: "projects" } : n === "id" ? { type: "string" } : undefined };
 * const projects = { name: "projects", fieldNames: ["id", "owner"],
 *   field: (n: string) => n === "id" || n === "owner" ? { type: "string" } : undefined };
 * const shapes = { record: tasks, entity: (n: string) => n === "projects" ? projects : undefined, back: () => undefined };
 * const e = bindRelations(parseExpression("record.project.owner == auth.id", { mode: "rule" }), shapes);
 * const task = { id: "t1", project: "p1" };
 * const related: Related = { get: (parent) => parent === task ? { id: "p1", owner: "u1" } : undefined };
 * assert.equal(evaluate(e, { auth: { id: "u1" }, record: task }, undefined, related), true);
 * ```
 */
export interface Related {
  get(parent: object, node: RelationNode): unknown;
}

/** What one evaluation reads besides the AST. */
interface Env {
  readonly scope: RuleScope;
  readonly helpers: RuleHelpers | undefined;
  readonly related: Related | undefined;
  /** Values of the quantifier parameters in scope. */
  readonly params: ReadonlyMap<string, unknown>;
}

const NO_PARAMS: ReadonlyMap<string, unknown> = new Map();
const NO_RECORDS: readonly unknown[] = Object.freeze([]);

/** What a relation of `parent` holds (see {@link Related}). */
function relationOf(
  node: RelationNode,
  parent: unknown,
  related: Related | undefined,
): unknown {
  // No record to start from (none, or a relation that points at none).
  if (
    parent === ABSENT || typeof parent !== "object" || parent === null ||
    Array.isArray(parent)
  ) return node.kind === "forward" ? ABSENT : NO_RECORDS;
  const got = related?.get(parent, node);
  if (got === undefined) {
    throw new RuleEvalError(
      `the records of ${node.key} were not loaded`,
    );
  }
  return got;
}

/** `list.some(p => body)` / `.every(…)`; undefined on anything but a list. */
function quantify(
  e: Extract<Expr, { type: "quantifier" }>,
  env: Env,
): unknown {
  const list = evalNode(e.object, env);
  if (!isPlainArray(list)) return undefined;
  const params = new Map(env.params);
  const inner: Env = { ...env, params };
  for (let i = 0; i < list.length; i++) {
    params.set(e.param, getMember(list, String(i)));
    const ok = truthy(evalNode(e.body, inner));
    if (e.method === "some" ? ok : !ok) return e.method === "some";
  }
  return e.method === "every";
}

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

/**
 * `s.toLowerCase()`, `s.toUpperCase()` or `fold(s)`: JavaScript's result for
 * a string, `undefined` for anything else (JavaScript would throw a
 * TypeError for the methods; `fold(null)` is not `"null"`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyText } from "moonbase/lib/rules/evaluate.ts";
 * assert.equal(applyText("toUpperCase", "straße"), "STRASSE");
 * assert.equal(applyText("fold", "Émile"), "emile");
 * assert.equal(applyText("fold", null), undefined);
 * ```
 */
export function applyText(name: TextFunction, value: unknown): unknown {
  if (typeof value !== "string") return undefined;
  if (name === "toLowerCase") return value.toLowerCase();
  if (name === "toUpperCase") return value.toUpperCase();
  return foldText(value);
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

function evalNode(e: Expr, env: Env): unknown {
  switch (e.type) {
    case "literal":
      return e.value;
    case "root":
      return getMember(env.scope, e.name);
    case "field":
      return getMember(env.scope, e.name);
    case "param":
      return env.params.get(e.name);
    case "member":
      return getMember(evalNode(e.object, env), e.property);
    case "relation":
      return relationOf(e, evalNode(e.object, env), env.related);
    case "quantifier":
      return quantify(e, env);
    case "unary": {
      const v = evalNode(e.argument, env);
      return e.operator === "!" ? !truthy(v) : negate(v);
    }
    case "binary": {
      const left = evalNode(e.left, env);
      return binary(e.operator, left, evalNode(e.right, env));
    }
    case "logical": {
      const left = evalNode(e.left, env);
      if (e.operator === "&&" ? !truthy(left) : truthy(left)) return left;
      return evalNode(e.right, env);
    }
    case "method": {
      const object = evalNode(e.object, env);
      return callMethod(object, e.method, evalNode(e.argument, env));
    }
    case "textFunction":
      return applyText(e.name, evalNode(e.argument, env));
    case "call":
      return callHelper(
        e.name,
        e.args.map((a) => evalNode(a, env)),
        env.helpers,
      );
  }
}

function envOf(
  scope: RuleScope,
  helpers: RuleHelpers | undefined,
  related: Related | undefined,
): Env {
  return { scope, helpers, related, params: NO_PARAMS };
}

/**
 * Evaluates an expression and returns its JavaScript value; `related`:
 * the records it reads through relations (a bound expression).
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
  related?: Related,
): unknown {
  try {
    return evalNode(expr, envOf(scope, helpers, related));
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
  related?: Related,
): boolean {
  try {
    return truthy(evalNode(expr, envOf(scope, helpers, related)));
  } catch {
    // A condition that fails denies (callers that log failures use evaluate()).
    return false;
  }
}
