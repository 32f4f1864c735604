/**
 * Translation of a JavaScript regular expression (as `new RegExp(source, "u")`
 * reads it) to the syntax of the linear-time engine (RE2), keeping the
 * JavaScript meaning of `.`, `\s`, `\S`, `[\b]`, `[^]` and escapes.
 * Backreferences, lookaround and inline modifiers have no linear-time
 * equivalent: they are refused with a reason.
 *
 * @module
 */

/** Why a pattern cannot be translated (a reason fit for a 400). */
export class PatternSyntaxError extends Error {
  override name = "PatternSyntaxError";
}

// JavaScript's \s (WhiteSpace and LineTerminator), as RE2 class ranges.
const SPACE_RANGES: readonly [number, number][] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const MAX_CODE_POINT = 0x10ffff;

const hex = (cp: number): string => `\\x{${cp.toString(16)}}`;
const ranges = (list: readonly [number, number][]): string =>
  list.map(([lo, hi]) => lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)
    .join("");

function complement(list: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of list) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

const SPACE = ranges(SPACE_RANGES);
const NOT_SPACE = ranges(complement(SPACE_RANGES));
/** JavaScript's `.` without the `s` flag: anything but a line terminator. */
const DOT = `[^${hex(0x0a)}${hex(0x0d)}${hex(0x2028)}${hex(0x2029)}]`;
const ANY = `${hex(0)}-${hex(MAX_CODE_POINT)}`;

/** `\p{Script=Greek}` → `Greek`; `\p{gc=Lu}` → `Lu` (RE2 takes bare names). */
function property(body: string): string {
  const eq = body.indexOf("=");
  if (eq < 0) return body;
  const key = body.slice(0, eq);
  if (["Script", "sc", "General_Category", "gc"].includes(key)) {
    return body.slice(eq + 1);
  }
  throw new PatternSyntaxError(
    `the Unicode property ${key} is not supported (use a script or general category)`,
  );
}

const HIGH = (u: number) => u >= 0xd800 && u <= 0xdbff;
const LOW = (u: number) => u >= 0xdc00 && u <= 0xdfff;

/** Reads one escape after `\` at `i`; returns its RE2 text and the next index. */
function escape(src: string, i: number, inClass: boolean): [string, number] {
  const c = src[i];
  if (c === undefined) throw new PatternSyntaxError("it ends with \\");
  if ("dDwW".includes(c)) return [`\\${c}`, i + 1];
  if (c === "b" || c === "B") {
    return [inClass ? hex(8) : `\\${c}`, i + 1];
  }
  if (c === "s") return [inClass ? SPACE : `[${SPACE}]`, i + 1];
  if (c === "S") return [inClass ? NOT_SPACE : `[${NOT_SPACE}]`, i + 1];
  const simple: Record<string, number> = {
    t: 9,
    n: 10,
    v: 11,
    f: 12,
    r: 13,
    "0": 0,
  };
  if (Object.hasOwn(simple, c)) return [hex(simple[c]), i + 1];
  if (c >= "1" && c <= "9" || c === "k") {
    throw new PatternSyntaxError(
      "backreferences (\\1, \\k<name>) are not supported",
    );
  }
  if (c === "c") return [hex(src.charCodeAt(i + 1) % 32), i + 2];
  if (c === "x") return [hex(parseInt(src.slice(i + 1, i + 3), 16)), i + 3];
  if (c === "u") {
    if (src[i + 1] === "{") {
      const end = src.indexOf("}", i);
      return [hex(parseInt(src.slice(i + 2, end), 16)), end + 1];
    }
    const unit = parseInt(src.slice(i + 1, i + 5), 16);
    if (HIGH(unit) && src.startsWith("\\u", i + 5)) {
      const low = parseInt(src.slice(i + 7, i + 11), 16);
      if (LOW(low)) {
        return [
          hex(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)),
          i + 11,
        ];
      }
    }
    if (HIGH(unit) || LOW(unit)) {
      throw new PatternSyntaxError("lone surrogates are not supported");
    }
    return [hex(unit), i + 5];
  }
  if (c === "p" || c === "P") {
    const end = src.indexOf("}", i);
    return [`\\${c}{${property(src.slice(i + 2, end))}}`, end + 1];
  }
  // An escaped syntax character (^$\.*+?()[]{}|/ and - in a class).
  return [`\\${c}`, i + 1];
}

/** Translates a group opening `(` at `i`; returns its RE2 text and the next index. */
function group(src: string, i: number): [string, number] {
  if (src[i + 1] !== "?") return ["(?:", i + 1];
  if (src[i + 2] === ":") return ["(?:", i + 3];
  if (
    src[i + 2] === "=" || src[i + 2] === "!" ||
    (src[i + 2] === "<" && (src[i + 3] === "=" || src[i + 3] === "!"))
  ) throw new PatternSyntaxError("lookahead and lookbehind are not supported");
  if (src[i + 2] === "<") {
    // A named group: only matching is needed, so it becomes non-capturing.
    return ["(?:", src.indexOf(">", i) + 1];
  }
  throw new PatternSyntaxError(
    "inline modifiers such as (?i:…) are not supported",
  );
}

/** Translates a class `[…]` starting at `i`; returns its RE2 text and the next index. */
function charClass(src: string, i: number): [string, number] {
  let j = i + 1;
  let out = "[";
  if (src[j] === "^") {
    out += "^";
    j++;
  }
  if (src[j] === "]") {
    // `[]` matches nothing and `[^]` anything.
    return [out === "[" ? `[^${ANY}]` : `[${ANY}]`, j + 1];
  }
  while (src[j] !== "]") {
    if (j >= src.length) throw new PatternSyntaxError("a class is not closed");
    const c = src[j];
    if (c === "\\") {
      const [text, next] = escape(src, j + 1, true);
      out += text;
      j = next;
    } else if (c === "[") {
      out += "\\["; // RE2 would read `[:alpha:]` as a POSIX class
      j++;
    } else {
      const cp = src.codePointAt(j)!;
      out += String.fromCodePoint(cp);
      j += cp > 0xffff ? 2 : 1;
    }
  }
  return [out + "]", j + 1];
}

/** A translated pattern and an estimate of its compiled size. */
export interface Translated {
  /** The pattern in RE2 syntax. */
  re2: string;
  /** About how many engine instructions it compiles to (repeats expanded). */
  size: number;
}

/** Reads a `{n}`, `{n,}` or `{n,m}` at `i`: the size factor and the next index. */
function braces(src: string, i: number, atom: number): [number, number] {
  const end = src.indexOf("}", i);
  const [lo, hi] = src.slice(i + 1, end).split(",");
  const n = Number(lo);
  const m = hi === undefined ? n : hi === "" ? n + 1 : Number(hi);
  return [atom * m + (m - n), end + 1];
}

/**
 * The RE2 form of a JavaScript `u`-mode pattern that `new RegExp(source, "u")`
 * accepts, with its estimated size (so a huge expansion is refused before it
 * is compiled).
 *
 * @throws {PatternSyntaxError} for backreferences, lookaround, inline modifiers
 *   and Unicode properties RE2 does not know
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toRe2Syntax } from "moonbase/lib/schema/regex_translate.ts";
 * assert.equal(toRe2Syntax("^(a|b)+$").re2, "^(?:a|b)+$");
 * assert.ok(toRe2Syntax("(?:a{1000}){1000}").size >= 1_000_000);
 * assert.throws(() => toRe2Syntax("(a)\\1"));
 * ```
 */
export function toRe2Syntax(source: string): Translated {
  let out = "";
  let i = 0;
  // Size of each open group so far, and of its last atom (what a quantifier repeats).
  const frames = [{ size: 0, last: 0 }];
  let top = frames[0];
  while (i < source.length) {
    const c = source[i];
    let text: string;
    let atom = 1;
    if (c === "*" || c === "+" || c === "?" || c === "{") {
      const start = i;
      let grown: number;
      if (c === "{") [grown, i] = braces(source, i, top.last);
      else [grown, i] = [top.last + 1, i + 1];
      if (source[i] === "?") i++; // lazy
      out += source.slice(start, i); // RE2 writes quantifiers alike
      top.size += grown - top.last;
      top.last = grown;
      continue;
    }
    if (c === "(") {
      [text, i] = group(source, i);
      top = { size: 0, last: 0 };
      frames.push(top);
      out += text;
      continue;
    }
    if (c === ")") {
      const inner = frames.pop()!.size;
      top = frames[frames.length - 1];
      [text, i, atom] = [")", i + 1, inner];
    } else if (c === "|") {
      [text, i, atom] = ["|", i + 1, 1];
    } else if (c === "\\") [text, i] = escape(source, i + 1, false);
    else if (c === "[") [text, i] = charClass(source, i);
    else if (c === ".") [text, i] = [DOT, i + 1];
    else {
      const cp = source.codePointAt(i)!;
      text = String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
    }
    top.size += atom;
    top.last = c === "|" ? 0 : atom;
    out += text;
  }
  return { re2: out, size: frames[0].size };
}
