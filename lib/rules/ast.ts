/**
 * AST of the rule/filter expression language (a safe subset of JavaScript
 * expressions), its size limits and its syntax error.
 *
 * @module
 */

/** The roots a rule may read: `auth`, `req` and (in rule mode) `record`. */
export type RootName = "auth" | "req" | "record";

/**
 * Binary operators with JavaScript semantics (`&&`/`||` are `logical` nodes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { BinaryOperator } from "moonbase/lib/rules/ast.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const e = parseExpression("record.a !== 1", { mode: "rule" });
 * const op: BinaryOperator | undefined = e.type === "binary" ? e.operator : undefined;
 * assert.equal(op, "!==");
 * ```
 */
export type BinaryOperator =
  | "=="
  | "!="
  | "==="
  | "!=="
  | "<"
  | "<="
  | ">"
  | ">="
  | "+"
  | "-"
  | "*"
  | "/"
  | "%";

/**
 * The only methods a rule may call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { MethodName } from "moonbase/lib/rules/ast.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const e = parseExpression('record.title.startsWith("a")', { mode: "rule" });
 * const m: MethodName | undefined = e.type === "method" ? e.method : undefined;
 * assert.equal(m, "startsWith");
 * ```
 */
export type MethodName = "includes" | "startsWith" | "endsWith";

/**
 * The text functions: `s.toLowerCase()`, `s.toUpperCase()` (JavaScript's
 * results) and `fold(s)` (case- and accent-insensitive form,
 * lib/rules/text_fold.ts). Each gives `undefined` for a value that is not a
 * string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { TextFunction } from "moonbase/lib/rules/ast.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const e = parseExpression("fold(record.title)", { mode: "rule" });
 * const f: TextFunction | undefined = e.type === "textFunction" ? e.name : undefined;
 * assert.equal(f, "fold");
 * ```
 */
export type TextFunction = "toLowerCase" | "toUpperCase" | "fold";

/**
 * An expression node. `pos` is the 0-based offset of the node in the source.
 *
 * - `literal`: a string, number, boolean, `null` or `undefined`;
 * - `root`: `auth`, `req` or `record`;
 * - `field`: a bare record field name (filter mode), read from the scope;
 * - `member`: `object.property` / `object["property"]` (literal keys only);
 * - `unary`, `binary`, `logical`: operators;
 * - `method`: `object.includes(x)`, `.startsWith(x)`, `.endsWith(x)`;
 * - `call`: a helper function `name(args...)`;
 * - `quantifier`: `list.some(c => body)` / `list.every(c => body)` over a
 *   back-relation (the only lists of records), `c` a `param` in `body`;
 * - `param`: the parameter of the enclosing quantifier;
 * - `relation`: a record read through a relation (`relations.ts` binds
 *   them: the parser never makes one): `kind: "forward"` is the record the
 *   relation field `field` of `object` (a record) points at, `"back"` the
 *   records of `entity` whose relation field `field` points at `object`;
 *   `key` is the name as written (`project`, `comments_via_post`).
 * - `textFunction`: `argument.toLowerCase()`, `argument.toUpperCase()`,
 *   `fold(argument)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Expr } from "moonbase/lib/rules/ast.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const e: Expr = {
 *   type: "binary",
 *   pos: 13,
 *   operator: "==",
 *   left: { type: "member", pos: 7, object: { type: "root", pos: 0, name: "record" }, property: "owner" },
 *   right: { type: "literal", pos: 16, value: "x" },
 * };
 * assert.deepEqual(parseExpression('record.owner == "x"', { mode: "rule" }), e);
 * ```
 */
export type Expr =
  | {
    readonly type: "literal";
    readonly pos: number;
    readonly value: string | number | boolean | null | undefined;
  }
  | { readonly type: "root"; readonly pos: number; readonly name: RootName }
  | { readonly type: "field"; readonly pos: number; readonly name: string }
  | {
    readonly type: "member";
    readonly pos: number;
    readonly object: Expr;
    readonly property: string;
  }
  | {
    readonly type: "unary";
    readonly pos: number;
    readonly operator: "!" | "-";
    readonly argument: Expr;
  }
  | {
    readonly type: "binary";
    readonly pos: number;
    readonly operator: BinaryOperator;
    readonly left: Expr;
    readonly right: Expr;
  }
  | {
    readonly type: "logical";
    readonly pos: number;
    readonly operator: "&&" | "||";
    readonly left: Expr;
    readonly right: Expr;
  }
  | {
    readonly type: "method";
    readonly pos: number;
    readonly object: Expr;
    readonly method: MethodName;
    readonly argument: Expr;
  }
  | {
    readonly type: "call";
    readonly pos: number;
    readonly name: string;
    readonly args: readonly Expr[];
  }
  | {
    readonly type: "quantifier";
    readonly pos: number;
    readonly object: Expr;
    readonly method: QuantifierName;
    readonly param: string;
    readonly body: Expr;
  }
  | { readonly type: "param"; readonly pos: number; readonly name: string }
  | RelationNode
  | {
    readonly type: "textFunction";
    readonly pos: number;
    readonly name: TextFunction;
    readonly argument: Expr;
  };

/** `.some(c => …)` (any record passes) and `.every(c => …)` (all do). */
export type QuantifierName = "some" | "every";

/**
 * A read through a relation (see {@link Expr}): bound by `relations.ts`
 * against the entities, for the evaluator and the SQL compiler.
 */
export interface RelationNode {
  readonly type: "relation";
  readonly pos: number;
  /** The record the relation starts from. */
  readonly object: Expr;
  /** The name as written: a relation field, or `<entity>_via_<field>`. */
  readonly key: string;
  /**
   * `forward`: the record a relation field points at; `many`: the records a
   * multiple relation field points at (a list, read by `.some`/`.every`);
   * `back`: the records whose relation field points at `object`.
   */
  readonly kind: "forward" | "many" | "back";
  /** Forward, many: the entity pointed at; back: the entity whose records point here. */
  readonly entity: string;
  /** Forward, many: the relation field of `object`; back: the relation field of `entity`. */
  readonly field: string;
}

/**
 * Size limits enforced by the parser (exceeding one is a {@link RuleSyntaxError}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LIMITS } from "moonbase/lib/rules/ast.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * assert.equal(LIMITS.maxSourceLength, 4096);
 * assert.throws(
 *   () => parseExpression("1".repeat(LIMITS.maxSourceLength + 1), { mode: "rule" }),
 *   /^RuleSyntaxError: Cannot parse rule: longer than 4096 characters at 4096$/,
 * );
 * ```
 */
export const LIMITS: {
  readonly maxSourceLength: number;
  readonly maxDepth: number;
  readonly maxNodes: number;
  readonly maxStringLiteral: number;
} = Object.freeze({
  maxSourceLength: 4096,
  maxDepth: 32,
  maxNodes: 500,
  maxStringLiteral: 1024,
});

/**
 * A rule or filter that cannot be parsed (or breaks a limit). `position` is the
 * 0-based character offset of the problem; the message reads like
 * `Cannot parse rule: unexpected "}" at 12`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuleSyntaxError } from "moonbase/lib/rules/ast.ts";
 * const e = new RuleSyntaxError('unexpected "}"', 12);
 * assert.ok(e instanceof Error);
 * assert.equal(e.message, 'Cannot parse rule: unexpected "}" at 12');
 * assert.equal(e.detail, 'unexpected "}"');
 * assert.equal(e.position, 12);
 * ```
 */
export class RuleSyntaxError extends Error {
  /** 0-based character offset of the problem in the source. */
  readonly position: number;
  /** The message without its prefix and position, e.g. `unexpected "}"`. */
  readonly detail: string;
  /**
   * For a member the entity or the auth entities do not have: the name as
   * written in a rule, e.g. `record.autor` or `auth.user.team`.
   */
  readonly unknown: string | undefined;

  /**
   * @param detail what is wrong, e.g. `unexpected "}"`
   * @param position 0-based character offset
   * @param what `"rule"` or `"filter"`, used in the message
   * @param unknown the unknown member's name (`record.autor`), if that is the problem
   */
  constructor(
    detail: string,
    position: number,
    what = "rule",
    unknown?: string,
  ) {
    super(`Cannot parse ${what}: ${detail} at ${position}`);
    this.name = "RuleSyntaxError";
    this.position = position;
    this.detail = detail;
    this.unknown = unknown;
  }
}
