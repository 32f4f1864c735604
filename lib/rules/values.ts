/**
 * JavaScript value semantics for rule evaluation over plain JSON-like data:
 * safe member reads, `ToPrimitive` without running user code, and the
 * operators of the language. Shared by the evaluator and the SQL compiler so
 * both agree on every coercion.
 *
 * @module
 */

import type { BinaryOperator } from "./ast.ts";

/** Longest string `+` (or array-to-string conversion) may produce. */
export const MAX_STRING_LENGTH = 64 * 1024;

/**
 * A rule that cannot be evaluated (a helper threw, a string grew too long, a
 * value could not be converted…). {@link test} turns it into `false`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuleEvalError } from "moonbase/lib/rules/values.ts";
 * const e = new RuleEvalError("string too long");
 * assert.ok(e instanceof Error);
 * assert.equal(e.name, "RuleEvalError");
 * assert.equal(e.message, "string too long");
 * ```
 */
export class RuleEvalError extends Error {
  /** @param message what went wrong */
  constructor(message: string) {
    super(message);
    this.name = "RuleEvalError";
  }
}

/**
 * The record a forward relation reads when it points at none (empty, or at
 * a record that does not exist or, in a filter, that the caller may not
 * read): each of its fields reads `null`, each relation from it `ABSENT`
 * again or an empty list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ABSENT, getMember } from "moonbase/lib/rules/values.ts";
 * assert.equal(getMember(ABSENT, "owner"), null);
 * ```
 */
export const ABSENT: Readonly<Record<string, never>> = Object.freeze(
  Object.create(null),
);

/** A JavaScript primitive value. */
export type Primitive =
  | string
  | number
  | bigint
  | boolean
  | symbol
  | null
  | undefined;

const isObject = (v: unknown): v is object =>
  (typeof v === "object" && v !== null) || typeof v === "function";

/** Plain data containers: arrays and objects with the default or no prototype. */
function kindOf(v: object): "array" | "object" | "other" {
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v)) return proto === Array.prototype ? "array" : "other";
  return proto === Object.prototype || proto === null ? "object" : "other";
}

/** Canonical array index ("0", "17"; not "01", "-1", "1.5"). */
function isIndex(key: string): boolean {
  return /^(0|[1-9][0-9]{0,9})$/.test(key) && Number(key) < 4294967295;
}

/**
 * Reads `object[key]` safely: only own enumerable data properties of plain
 * objects and arrays, `length` and indices of strings and arrays. Everything
 * else (prototype members, getters, functions, properties of `null` or of
 * class instances) is `undefined` — unlike JavaScript, reading a property of
 * `null`/`undefined` does not throw.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { getMember } from "moonbase/lib/rules/values.ts";
 * assert.equal(getMember({ a: 1 }, "a"), 1);
 * assert.equal(getMember({}, "constructor"), undefined); // inherited: not read
 * assert.equal(getMember("abc", "length"), 3);
 * assert.equal(getMember(null, "x"), undefined);
 * ```
 */
export function getMember(object: unknown, key: string): unknown {
  if (object === ABSENT) return null;
  if (typeof object === "string") {
    if (key === "length") return object.length;
    return isIndex(key) && Number(key) < object.length
      ? object[Number(key)]
      : undefined;
  }
  if (!isObject(object)) return undefined;
  const kind = kindOf(object);
  if (kind === "other") return undefined;
  if (kind === "array" && key === "length") return (object as unknown[]).length;
  const d = Object.getOwnPropertyDescriptor(object, key);
  if (d === undefined || !d.enumerable || !("value" in d)) return undefined;
  return typeof d.value === "function" ? undefined : d.value;
}

/**
 * JavaScript `ToPrimitive` for plain data without calling any user code:
 * arrays join their elements, plain objects become `"[object Object]"`;
 * objects that JavaScript would convert by calling own functions (or fail to
 * convert) throw a {@link RuleEvalError}, as do other objects.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toPrimitive } from "moonbase/lib/rules/values.ts";
 * assert.equal(toPrimitive([1, [2, null]]), "1,2,");
 * assert.equal(toPrimitive({ a: 1 }), "[object Object]");
 * ```
 */
export function toPrimitive(
  v: unknown,
  seen: Set<object> = new Set(),
): Primitive {
  if (!isObject(v)) return v as Primitive;
  const kind = kindOf(v);
  if (kind === "array") {
    if (seen.has(v)) return ""; // V8's join skips cycles
    seen.add(v);
    const array = v as unknown[];
    let out = "";
    for (let i = 0; i < array.length; i++) {
      const e = getMember(array, String(i));
      if (i > 0) out += ",";
      if (e !== null && e !== undefined) out += toString(e, seen);
      if (out.length > MAX_STRING_LENGTH) {
        throw new RuleEvalError("string too long");
      }
    }
    seen.delete(v);
    return out;
  }
  if (kind === "object" && Object.getPrototypeOf(v) !== null) {
    const hasOwn = (k: PropertyKey) =>
      Object.getOwnPropertyDescriptor(v, k) !== undefined;
    const valueOf = Object.getOwnPropertyDescriptor(v, "valueOf");
    const callable = valueOf !== undefined &&
      (!("value" in valueOf) || typeof valueOf.value === "function");
    if (
      !hasOwn("toString") && !callable && !hasOwn(Symbol.toPrimitive) &&
      !hasOwn(Symbol.toStringTag)
    ) {
      return "[object Object]";
    }
  }
  throw new RuleEvalError("cannot convert object to primitive value");
}

/**
 * JavaScript `ToString` for plain data (symbols throw a {@link RuleEvalError}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toString } from "moonbase/lib/rules/values.ts";
 * assert.equal(toString(null), "null");
 * assert.equal(toString(["a", 1]), "a,1");
 * ```
 */
export function toString(v: unknown, seen?: Set<object>): string {
  const p = toPrimitive(v, seen);
  if (typeof p === "symbol") {
    throw new RuleEvalError("cannot convert a symbol to a string");
  }
  return String(p);
}

/**
 * JavaScript truthiness (`ToBoolean`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { truthy } from "moonbase/lib/rules/values.ts";
 * assert.deepEqual(["", 0, null, [], "0"].map(truthy), [false, false, false, true, true]);
 * ```
 */
export function truthy(v: unknown): boolean {
  return !!v;
}

/**
 * JavaScript loose equality `a == b` over data.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { looseEquals } from "moonbase/lib/rules/values.ts";
 * assert.equal(looseEquals("5", 5), true);
 * assert.equal(looseEquals(null, undefined), true);
 * assert.equal(looseEquals(null, 0), false);
 * ```
 */
export function looseEquals(a: unknown, b: unknown): boolean {
  // Only an object compared with a non-nullish primitive is converted;
  // object/object compares identity and object/nullish is false.
  const pa = isObject(a) && !isObject(b) && b !== null && b !== undefined
    ? toPrimitive(a)
    : a;
  const pb = isObject(b) && !isObject(a) && a !== null && a !== undefined
    ? toPrimitive(b)
    : b;
  // Both sides are now primitives (or both objects): `==` runs no user code.
  // deno-lint-ignore eqeqeq
  return pa == pb;
}

/** Numeric-or-string operator on primitives, typed for the compiler. */
type PrimitiveOp = (a: number, b: number) => unknown;
const PRIMITIVE_OPS: Readonly<Record<string, PrimitiveOp>> = {
  "<": (a, b) => a < b,
  "<=": (a, b) => a <= b,
  ">": (a, b) => a > b,
  ">=": (a, b) => a >= b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
  "%": (a, b) => a % b,
};

/** `+`: string concatenation (length-capped) or numeric addition. */
function plus(a: unknown, b: unknown): unknown {
  const pa = toPrimitive(a);
  const pb = toPrimitive(b);
  if (typeof pa === "string" || typeof pb === "string") {
    const sa = toString(pa);
    const sb = toString(pb);
    if (sa.length + sb.length > MAX_STRING_LENGTH) {
      throw new RuleEvalError("string too long");
    }
    return sa + sb;
  }
  return (pa as number) + (pb as number);
}

/**
 * Applies a binary operator with JavaScript semantics (the operands are data;
 * conversions never call user code). Type errors JavaScript would throw (e.g.
 * mixing BigInt and number) become a {@link RuleEvalError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { binary } from "moonbase/lib/rules/values.ts";
 * assert.equal(binary("+", "1", 2), "12");
 * assert.equal(binary("<", "10", "9"), true); // strings compare as strings
 * assert.equal(binary("<", "10", 9), false); // a number makes it numeric
 * ```
 */
export function binary(op: BinaryOperator, a: unknown, b: unknown): unknown {
  try {
    switch (op) {
      case "===":
        return a === b;
      case "!==":
        return a !== b;
      case "==":
        return looseEquals(a, b);
      case "!=":
        return !looseEquals(a, b);
      case "+":
        return plus(a, b);
      default: {
        // ToPrimitive with hint "number" is the same as the default hint for data.
        const pa = toPrimitive(a);
        return PRIMITIVE_OPS[op](pa as number, toPrimitive(b) as number);
      }
    }
  } catch (e) {
    if (e instanceof RuleEvalError) throw e;
    throw new RuleEvalError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * Unary minus with JavaScript semantics.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { negate } from "moonbase/lib/rules/values.ts";
 * assert.equal(negate("5"), -5);
 * assert.equal(negate(null), -0); // strict equality tells -0 from 0
 * ```
 */
export function negate(v: unknown): unknown {
  try {
    return -(toPrimitive(v) as number);
  } catch (e) {
    if (e instanceof RuleEvalError) throw e;
    throw new RuleEvalError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * True for a plain array (`Array.isArray` with the default prototype).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPlainArray } from "moonbase/lib/rules/values.ts";
 * assert.equal(isPlainArray([1]), true);
 * assert.equal(isPlainArray("a"), false);
 * assert.equal(isPlainArray({ length: 0 }), false);
 * ```
 */
export function isPlainArray(v: unknown): v is unknown[] {
  return isObject(v) && kindOf(v) === "array";
}
