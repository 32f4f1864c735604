/**
 * Parser of the rule/filter expression language: a recursive-descent parser
 * over a {@link TokenStream} producing an {@link Expr}. Every name is
 * resolved at parse time (roots, filter fields, helpers, methods), so an
 * expression that parses can only read scope data.
 *
 * Longer than ~350 lines: the grammar is one recursive descent over one
 * token stream (each precedence level calls the next); member and method
 * resolution run inside it, on the parser's state.
 *
 * @module
 */

import {
  type BinaryOperator,
  type Expr,
  LIMITS,
  type MethodName,
  type QuantifierName,
  RuleSyntaxError,
  type TextFunction,
} from "./ast.ts";
import { type Token, TokenStream } from "./lexer.ts";
import {
  AUTH_MEMBERS,
  type KnownNames,
  memberProblem,
  REQ_MEMBERS,
  unknownName,
} from "./names.ts";

/**
 * How to parse: `mode: "rule"` knows the roots `auth`, `req`, `record`;
 * `mode: "filter"` knows `auth` and the bare names in `fields`. `helpers` are
 * the callable helper function names (both modes). `names` (rule mode): the
 * members `record.<name>` and `auth.user.<name>` may read, and `auth.<name>`
 * is one of `id`, `entity`, `type`, `user`; without it any member parses (a
 * stored rule is served as saved).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type ParseOptions, parseExpression } from "moonbase/lib/rules/parser.ts";
 * const options: ParseOptions = { mode: "filter", fields: new Set(["title"]) };
 * assert.equal(parseExpression('title == "x"', options).type, "binary");
 * assert.throws(() => parseExpression('body == "x"', options), /unknown name "body" at 0/);
 * ```
 */
export interface ParseOptions {
  mode: "rule" | "filter";
  fields?: ReadonlySet<string>;
  helpers?: ReadonlySet<string>;
  names?: KnownNames;
}

const METHODS: ReadonlySet<string> = new Set<MethodName>([
  "includes",
  "startsWith",
  "endsWith",
]);
const QUANTIFIERS: ReadonlySet<string> = new Set<QuantifierName>([
  "some",
  "every",
]);
/** Names a quantifier's parameter may not take. */
const RESERVED: ReadonlySet<string> = new Set(["auth", "req", "record"]);
/** Methods without an argument: the text functions of a string. */
const CASE_METHODS: ReadonlySet<string> = new Set<TextFunction>([
  "toLowerCase",
  "toUpperCase",
]);
const LITERALS: ReadonlyMap<string, boolean | null | undefined> = new Map<
  string,
  boolean | null | undefined
>([["true", true], ["false", false], ["null", null], ["undefined", undefined]]);
/** Binary operator precedence levels, loosest first. */
const LEVELS: readonly (readonly (BinaryOperator | "&&" | "||")[])[] = [
  ["||"],
  ["&&"],
  ["==", "!=", "===", "!=="],
  ["<", "<=", ">", ">="],
  ["+", "-"],
  ["*", "/", "%"],
];

/** True for property names that could reach prototypes or internals. */
function isForbiddenProperty(name: string): boolean {
  return name.startsWith("__") || name === "constructor" ||
    name === "prototype";
}

class Parser extends TokenStream {
  #depth = 0;
  #nodes = 0;
  #options: ParseOptions;
  /** The parameters of the quantifiers around the current position, innermost last. */
  #params: string[] = [];

  constructor(source: string, options: ParseOptions) {
    super(source, options.mode === "filter" ? "filter" : "rule");
    this.#options = options;
  }

  node<T extends Expr>(n: T): T {
    if (++this.#nodes > LIMITS.maxNodes) {
      this.fail(`expression has more than ${LIMITS.maxNodes} nodes`, n.pos);
    }
    return n;
  }

  /** Runs `f` one nesting level deeper, enforcing the depth limit. */
  nested<T>(pos: number, f: () => T): T {
    if (++this.#depth > LIMITS.maxDepth) {
      this.fail(`expression nested deeper than ${LIMITS.maxDepth} levels`, pos);
    }
    const result = f();
    this.#depth--;
    return result;
  }

  parseAll(): Expr {
    const e = this.parseOr();
    if (this.peek.kind !== "eof") this.unexpected();
    return e;
  }

  parseOr(): Expr {
    return this.parseBinary(0);
  }

  parseBinary(level: number): Expr {
    if (level === LEVELS.length) return this.parseUnary();
    let left = this.parseBinary(level + 1);
    for (;;) {
      const t = this.peek;
      const op = LEVELS[level].find((o) => t.kind === "punct" && t.value === o);
      if (op === undefined) return left;
      this.next();
      const right = this.parseBinary(level + 1);
      const pos = t.pos;
      left = this.node(
        op === "&&" || op === "||"
          ? { type: "logical", pos, operator: op, left, right }
          : { type: "binary", pos, operator: op, left, right },
      );
    }
  }

  parseUnary(): Expr {
    const t = this.peek;
    if (t.kind === "punct" && (t.value === "!" || t.value === "-")) {
      this.next();
      const argument = this.nested(t.pos, () => this.parseUnary());
      return this.node({
        type: "unary",
        pos: t.pos,
        operator: t.value,
        argument,
      });
    }
    return this.parsePostfix(this.parsePrimary());
  }

  parsePrimary(): Expr {
    const t = this.next();
    if (t.kind === "number" || t.kind === "string") {
      return this.node({ type: "literal", pos: t.pos, value: t.value });
    }
    if (t.kind === "punct" && t.value === "(") {
      const inner = this.nested(t.pos, () => this.parseOr());
      this.expect(")");
      return inner;
    }
    if (t.kind !== "name") return this.unexpected(t);
    const name = t.value;
    if (LITERALS.has(name)) {
      return this.node({
        type: "literal",
        pos: t.pos,
        value: LITERALS.get(name),
      });
    }
    if (this.#nextIsCall()) {
      return name === "fold" ? this.parseFold(t) : this.parseCall(t);
    }
    if (this.#params.includes(name)) {
      return this.node({ type: "param", pos: t.pos, name });
    }
    const { mode, fields } = this.#options;
    if (
      name === "auth" ||
      (mode === "rule" && (name === "req" || name === "record"))
    ) {
      return this.node({ type: "root", pos: t.pos, name });
    }
    if (mode === "filter" && fields?.has(name) && !isForbiddenProperty(name)) {
      return this.node({ type: "field", pos: t.pos, name });
    }
    return this.fail(
      unknownName(
        name,
        "",
        mode === "filter"
          ? [...fields ?? []].filter((f) => !isForbiddenProperty(f))
          : [],
      ),
      t.pos,
    );
  }

  /** Whether a `(` follows; a lexical error after the name is reported later. */
  #nextIsCall(): boolean {
    try {
      return this.isPunct("(");
    } catch {
      // Read again as the next token, the same error is thrown with its position.
      return false;
    }
  }

  /** `fold(x)`: built in (a helper of that name is never called). */
  parseFold(t: Token): Expr {
    const open = this.expect("(");
    if (this.isPunct(")")) this.fail("fold() needs one argument", open.pos);
    const argument = this.nested(open.pos, () => this.parseOr());
    if (this.isPunct(",")) {
      this.fail("fold() takes one argument", this.peek.pos);
    }
    this.expect(")");
    return this.node({
      type: "textFunction",
      pos: t.pos,
      name: "fold",
      argument,
    });
  }

  parseCall(t: Token): Expr {
    const name = String(t.value);
    if (!this.#options.helpers?.has(name)) {
      this.fail(`unknown function ${JSON.stringify(name)}`, t.pos);
    }
    const open = this.expect("(");
    const args: Expr[] = [];
    this.nested(open.pos, () => {
      while (!this.isPunct(")")) {
        args.push(this.parseOr());
        if (!this.isPunct(")")) this.expect(",");
      }
    });
    this.expect(")");
    return this.node({ type: "call", pos: t.pos, name, args });
  }

  parsePostfix(object: Expr): Expr {
    for (;;) {
      const t = this.peek;
      if (t.kind !== "punct") return object;
      if (t.value === "." || t.value === "?.") {
        this.next();
        if (t.value === "?." && this.isPunct("[")) continue;
        const name = this.next();
        if (name.kind !== "name") this.unexpected(name);
        if (this.isPunct("(") && QUANTIFIERS.has(name.value)) {
          object = this.parseQuantifier(object, name.value, name.pos);
        } else if (this.isPunct("(")) {
          object = this.parseMethod(object, name.value, name.pos);
        } else {
          object = this.member(object, name.value, name.pos);
        }
      } else if (t.value === "[") {
        this.next();
        const key = this.next();
        if (key.kind !== "string" && key.kind !== "number") {
          this.fail(
            "only a string or number literal may appear inside [ ]",
            key.pos,
          );
        }
        this.expect("]");
        object = this.member(object, String(key.value), key.pos);
      } else if (t.value === "(") {
        return this.fail(
          'unexpected "(": only helpers, fold and includes/startsWith/endsWith/some/every/toLowerCase/toUpperCase can be called',
          t.pos,
        );
      } else {
        return object;
      }
    }
  }

  member(object: Expr, property: string, pos: number): Expr {
    if (isForbiddenProperty(property)) {
      this.fail(`forbidden property ${JSON.stringify(property)}`, pos);
    }
    const known = this.#knownMembers(object);
    if (known && !known.names.has(property)) {
      throw new RuleSyntaxError(
        unknownName(property, known.prefix, known.names),
        pos,
        this.#options.mode,
        `${known.prefix}.${property.slice(0, 64)}`,
      );
    }
    const field = this.#recordField(object);
    const problem = field &&
      memberProblem(`record.${field.name}`, field.type, property);
    if (problem) {
      throw new RuleSyntaxError(
        problem,
        pos,
        this.#options.mode,
        `record.${field.name}.${property.slice(0, 64)}`,
      );
    }
    return this.node({ type: "member", pos, object, property });
  }

  /** The field `object` is (`record.<field>`), when `names` gives its type. */
  #recordField(object: Expr): { name: string; type: string } | undefined {
    const types = this.#options.names?.types;
    if (
      !types || object.type !== "member" || object.object.type !== "root" ||
      object.object.name !== "record"
    ) return undefined;
    const type = types.get(object.property);
    return type === undefined ? undefined : { name: object.property, type };
  }

  /**
   * The members `object` may have, when `names` says (`record`, `auth`,
   * `auth.user`, `req`, `req.body`).
   */
  #knownMembers(
    object: Expr,
  ): { prefix: string; names: ReadonlySet<string> } | undefined {
    const names = this.#options.names;
    if (!names) return undefined;
    if (object.type === "root") {
      if (object.name === "record") {
        return { prefix: "record", names: names.record };
      }
      if (object.name === "auth") {
        return { prefix: "auth", names: AUTH_MEMBERS };
      }
      return { prefix: "req", names: REQ_MEMBERS };
    }
    if (object.type !== "member" || object.object.type !== "root") {
      return undefined;
    }
    const root = object.object.name;
    if (root === "auth" && object.property === "user") {
      return { prefix: "auth.user", names: names.user };
    }
    if (root === "req" && object.property === "body" && names.body) {
      return { prefix: "req.body", names: names.body };
    }
    return undefined;
  }

  /**
   * `object.some(c => body)` / `.every(c => body)` (`(c) => body` too):
   * `c` names each record of the list in `body`.
   */
  parseQuantifier(object: Expr, name: string, pos: number): Expr {
    const open = this.expect("(");
    const paren = this.isPunct("(");
    if (paren) this.next();
    const p = this.next();
    if (p.kind !== "name") {
      return this.fail(
        `${name}() takes a function: ${name}(c => <condition on c>)`,
        p.pos,
      );
    }
    if (
      RESERVED.has(p.value) || LITERALS.has(p.value) ||
      isForbiddenProperty(p.value) || this.#options.helpers?.has(p.value)
    ) {
      this.fail(
        `${JSON.stringify(p.value)} cannot name the parameter of ${name}()`,
        p.pos,
      );
    }
    if (paren) this.expect(")");
    if (!this.isPunct("=>")) {
      this.fail(
        `${name}() takes a function: ${name}(${p.value} => <condition on ${p.value}>)`,
        this.peek.pos,
      );
    }
    this.next();
    this.#params.push(p.value);
    const body = this.nested(open.pos, () => this.parseOr());
    this.#params.pop();
    if (this.isPunct(",")) {
      this.fail(`${name}() takes one function`, this.peek.pos);
    }
    this.expect(")");
    return this.node({
      type: "quantifier",
      pos,
      object,
      method: name as QuantifierName,
      param: p.value,
      body,
    });
  }

  parseMethod(object: Expr, name: string, pos: number): Expr {
    if (CASE_METHODS.has(name)) {
      this.expect("(");
      if (!this.isPunct(")")) {
        this.fail(`${name}() takes no argument`, this.peek.pos);
      }
      this.expect(")");
      return this.node({
        type: "textFunction",
        pos,
        name: name as TextFunction,
        argument: object,
      });
    }
    if (!METHODS.has(name)) {
      this.fail(`unknown method ${JSON.stringify(name)}`, pos);
    }
    const open = this.expect("(");
    if (this.isPunct(")")) this.fail(`${name}() needs one argument`, open.pos);
    const argument = this.nested(open.pos, () => this.parseOr());
    if (this.isPunct(",")) {
      this.fail(`${name}() takes one argument`, this.peek.pos);
    }
    this.expect(")");
    return this.node({
      type: "method",
      pos,
      object,
      method: name as MethodName,
      argument,
    });
  }
}

/**
 * Parses a rule (or, with `mode: "filter"`, a list filter) into an AST.
 *
 * @throws {RuleSyntaxError} with the 0-based position of the problem
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const e = parseExpression("record.owner == auth.id && !record.hidden", { mode: "rule" });
 * assert.equal(e.type, "logical");
 * assert.throws(
 *   () => parseExpression("globalThis", { mode: "rule" }),
 *   { name: "RuleSyntaxError", message: 'Cannot parse rule: unknown name "globalThis" at 0' },
 * );
 * ```
 */
export function parseExpression(source: string, options: ParseOptions): Expr {
  if (source.length > LIMITS.maxSourceLength) {
    const what = options.mode === "filter" ? "filter" : "rule";
    throw new RuleSyntaxError(
      `longer than ${LIMITS.maxSourceLength} characters`,
      LIMITS.maxSourceLength,
      what,
    );
  }
  return new Parser(source, options).parseAll();
}

export { readsCallerData, readsRecord, readsRequest } from "./walk.ts";
