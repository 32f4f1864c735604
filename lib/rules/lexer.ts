/**
 * Lexer of the rule/filter expression language: turns source text into tokens
 * (numbers, strings, names, punctuators). Anything outside the safe subset
 * (template literals, regex literals, comments, `=`, `?`, `;`…) is a
 * {@link RuleSyntaxError} with its position.
 *
 * @module
 */

import { LIMITS, RuleSyntaxError } from "./ast.ts";

/** Punctuators and operators the grammar knows. */
const PUNCTUATORS = [
  "===",
  "!==",
  "==",
  "=>",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "?.",
  "<",
  ">",
  "!",
  "+",
  "-",
  "*",
  "/",
  "%",
  "(",
  ")",
  "[",
  "]",
  ".",
  ",",
] as const;

/** The complaint about a lone `=` (no assignment in the language). */
export const SINGLE_EQUALS = 'unexpected "=" (to compare, write "==")';

/**
 * A token. `pos` is the 0-based offset of its first character, `end` the
 * offset just after it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type Token, tokenize } from "moonbase/lib/rules/lexer.ts";
 * const t: Token = { kind: "name", value: "auth", pos: 0, end: 4 };
 * assert.deepEqual(tokenize("auth")[0], t);
 * ```
 */
export type Token =
  | { kind: "number"; value: number; pos: number; end: number }
  | { kind: "string"; value: string; pos: number; end: number }
  | { kind: "name"; value: string; pos: number; end: number }
  | { kind: "punct"; value: string; pos: number; end: number }
  | { kind: "eof"; value: ""; pos: number; end: number };

const isDigit = (c: string): boolean => c >= "0" && c <= "9";
const isNameStart = (c: string): boolean =>
  (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_" || c === "$";
const isNamePart = (c: string): boolean => isNameStart(c) || isDigit(c);
const isSpace = (c: string): boolean =>
  c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\v" ||
  c === "\f" || c === "\u00a0" || c === "\ufeff";
const isLineBreak = (c: string): boolean =>
  c === "\n" || c === "\r" || c === "\u2028" || c === "\u2029";

/** Quotes a piece of source for an error message. */
function quote(text: string): string {
  return JSON.stringify(text.length > 20 ? text.slice(0, 20) + "…" : text);
}

/**
 * A lazy token stream over `source` with the cursor operations of a
 * recursive-descent parser. Tokens are scanned on demand, so the first error
 * reported is the first in source order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TokenStream } from "moonbase/lib/rules/lexer.ts";
 * const s = new TokenStream("auth.id");
 * assert.deepEqual(s.next(), { kind: "name", value: "auth", pos: 0, end: 4 });
 * assert.ok(s.isPunct("."));
 * assert.equal(s.next().value, ".");
 * ```
 */
export class TokenStream {
  readonly #source: string;
  readonly #what: string;
  #pos = 0;
  #peeked: Token | undefined;

  /**
   * @param source the expression text
   * @param what `"rule"` or `"filter"`, used in error messages
   */
  constructor(source: string, what = "rule") {
    this.#source = source;
    this.#what = what;
  }

  /** Throws a {@link RuleSyntaxError} at `pos`. */
  fail(detail: string, pos: number): never {
    throw new RuleSyntaxError(detail, pos, this.#what);
  }

  /** The next token, not consumed. */
  get peek(): Token {
    this.#peeked ??= this.#scan();
    return this.#peeked;
  }

  /** Consumes and returns the next token (`eof` stays). */
  next(): Token {
    const t = this.peek;
    if (t.kind !== "eof") this.#peeked = undefined;
    return t;
  }

  /** True when the next token is the punctuator `value`. */
  isPunct(value: string): boolean {
    return this.peek.kind === "punct" && this.peek.value === value;
  }

  /** Consumes the punctuator `value` or fails. */
  expect(value: string): Token {
    if (!this.isPunct(value)) this.unexpected();
    return this.next();
  }

  /** Fails on token `t` (default: the next one). */
  unexpected(t: Token = this.peek): never {
    if (t.kind === "eof") this.fail("unexpected end of expression", t.pos);
    const text = t.kind === "string" || t.kind === "number" ? t.kind : t.value;
    return this.fail(`unexpected ${JSON.stringify(text)}`, t.pos);
  }

  #scan(): Token {
    const source = this.#source;
    const fail = (detail: string, pos: number) => this.fail(detail, pos);
    let i = this.#pos;
    while (
      i < source.length && (isSpace(source[i]) || isLineBreak(source[i]))
    ) i++;
    const c = source[i] ?? "";
    let t: Token;
    if (i >= source.length) {
      t = { kind: "eof", value: "", pos: i, end: i };
    } else if (isDigit(c) || (c === "." && isDigit(source[i + 1] ?? ""))) {
      const end = scanNumber(source, i, fail);
      t = { kind: "number", value: Number(source.slice(i, end)), pos: i, end };
    } else if (c === '"' || c === "'") {
      const [value, end] = scanString(source, i, fail);
      t = { kind: "string", value, pos: i, end };
    } else if (isNameStart(c)) {
      let end = i + 1;
      while (end < source.length && isNamePart(source[end])) end++;
      t = { kind: "name", value: source.slice(i, end), pos: i, end };
    } else {
      const p = PUNCTUATORS.find((q) => source.startsWith(q, i));
      // `?.5` is `?` then `.5` in JavaScript, not optional chaining.
      if (p === undefined || (p === "?." && isDigit(source[i + 2] ?? ""))) {
        // A lone `=` is most often a comparison written as in SQL.
        if (c === "=") return fail(SINGLE_EQUALS, i);
        const cp = source.codePointAt(i) ?? 0;
        return fail(`unexpected ${quote(String.fromCodePoint(cp))}`, i);
      }
      t = { kind: "punct", value: p, pos: i, end: i + p.length };
    }
    this.#pos = t.end;
    return t;
  }
}

/**
 * Splits `source` into tokens, ending with an `eof` token.
 *
 * @throws {RuleSyntaxError} on a character or literal outside the grammar
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenize } from "moonbase/lib/rules/lexer.ts";
 * const kinds = tokenize('auth.id == "x"').map((t) => t.kind);
 * assert.deepEqual(kinds, ["name", "punct", "name", "punct", "string", "eof"]);
 * assert.deepEqual(tokenize('"x"')[0], { kind: "string", value: "x", pos: 0, end: 3 });
 * ```
 */
export function tokenize(source: string, what = "rule"): Token[] {
  const stream = new TokenStream(source, what);
  const tokens = [stream.next()];
  while (tokens[tokens.length - 1].kind !== "eof") tokens.push(stream.next());
  return tokens;
}

type Fail = (detail: string, pos: number) => never;

/** Scans a decimal number (`12`, `1.5`, `.5`, `1e3`) starting at `start`. */
function scanNumber(source: string, start: number, fail: Fail): number {
  let i = start;
  const digits = () => {
    while (i < source.length && isDigit(source[i])) i++;
  };
  digits();
  if (source[start] === "0" && i - start > 1) {
    fail("leading zero in number", start);
  }
  if (source[i] === ".") {
    i++;
    digits();
  }
  if (source[i] === "e" || source[i] === "E") {
    let j = i + 1;
    if (source[j] === "+" || source[j] === "-") j++;
    if (!isDigit(source[j] ?? "")) fail("malformed number", start);
    i = j;
    digits();
  }
  if (i < source.length && (isNamePart(source[i]) || source[i] === ".")) {
    fail(`unexpected ${quote(source[i])}`, i);
  }
  return i;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  v: "\v",
};

/** Scans a quoted string literal starting at `start`; returns [value, end]. */
function scanString(
  source: string,
  start: number,
  fail: Fail,
): [string, number] {
  const q = source[start];
  let out = "";
  let i = start + 1;
  const hex = (from: number, count: number): number => {
    const text = source.slice(from, from + count);
    if (text.length !== count || !/^[0-9a-fA-F]+$/.test(text)) {
      fail("malformed escape sequence", from - 2);
    }
    return parseInt(text, 16);
  };
  for (;;) {
    if (out.length > LIMITS.maxStringLiteral) {
      fail(
        `string literal longer than ${LIMITS.maxStringLiteral} characters`,
        start,
      );
    }
    if (i >= source.length) fail("unterminated string", start);
    const c = source[i];
    if (c === q) return [out, i + 1];
    if (c === "\n" || c === "\r") fail("unterminated string", start);
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    const e = source[i + 1] ?? "";
    if (e in SIMPLE_ESCAPES) {
      out += SIMPLE_ESCAPES[e];
      i += 2;
    } else if (e === "0" && !isDigit(source[i + 2] ?? "")) {
      out += "\0";
      i += 2;
    } else if (isDigit(e)) {
      fail("octal escape sequences are not allowed", i);
    } else if (e === "x") {
      out += String.fromCharCode(hex(i + 2, 2));
      i += 4;
    } else if (e === "u" && source[i + 2] === "{") {
      const close = source.indexOf("}", i + 3);
      const code = close < 0 ? -1 : hex(i + 3, close - i - 3);
      if (code < 0 || code > 0x10ffff) fail("malformed escape sequence", i);
      out += String.fromCodePoint(code);
      i = close + 1;
    } else if (e === "u") {
      out += String.fromCharCode(hex(i + 2, 4));
      i += 6;
    } else if (e === "\r" && source[i + 2] === "\n") {
      i += 3; // line continuation
    } else if (isLineBreak(e)) {
      i += 2; // line continuation
    } else if (e === "") {
      fail("unterminated string", start);
    } else {
      out += e; // identity escape: \" \' \\ \a …
      i += 2;
    }
  }
}
