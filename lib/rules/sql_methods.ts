/**
 * Compiles the method calls of the language on record columns:
 * `.includes/.startsWith/.endsWith` of a text column with a string known at
 * compile time, and `array.includes(column)` of an array known at compile
 * time. Conditions are NULL-free, like every condition of the compiler.
 *
 * @module
 */

import type { MethodName } from "./ast.ts";
import { byBoolean } from "./sql_compare.ts";
import {
  type Cond,
  type Dialect,
  intParam,
  NotCompilable,
  numberParam,
  sql,
  textParam,
  whenNull,
} from "./sql_fragment.ts";
import { type Column, nullOf } from "./sql_column.ts";

/**
 * `column.method(s)` for a text column: falsy (`undefined`) for NULL, else
 * the string test on code points (the same as UTF-16 for well-formed text).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textMethod } from "moonbase/lib/rules/sql_methods.ts";
 * const c = textMethod("includes", { sql: '"t"', fieldType: "string", family: "text" }, "a%", "postgres");
 * assert.deepEqual(c, { sql: '("t" IS NOT NULL AND strpos("t", ?::text) > 0)', params: ["a%"] });
 * ```
 */
export function textMethod(
  name: MethodName,
  c: Column,
  s: string,
  d: Dialect,
): Cond {
  const text = textParam(s, d);
  const n = [...s].length; // SQL lengths count code points
  let cond: Cond;
  if (s === "") {
    cond = true;
  } else if (name === "startsWith" && c.folded) {
    // A range a fold(<field>) index serves: byte order is code point order.
    const above = successor(s);
    cond = above === undefined
      ? sql(`${c.sql} >= `, text)
      : sql(`${c.sql} >= `, text, ` AND ${c.sql} < `, textParam(above, d));
  } else if (name === "includes") {
    cond = sql(
      d === "postgres" ? `strpos(${c.sql}, ` : `instr(${c.sql}, `,
      text,
      ") > 0",
    );
  } else if (d === "postgres") {
    cond = sql(
      `${name === "startsWith" ? "left" : "right"}(${c.sql}, `,
      intParam(n, d),
      ") = ",
      text,
    );
  } else {
    // SQLite: substr(c, 1, n) is the first n characters, substr(c, -n) the last n.
    const range = name === "startsWith"
      ? sql("1, ", intParam(n, d))
      : intParam(-n, d);
    cond = sql(`substr(${c.sql}, `, range, ") = ", text);
  }
  return whenNull(c, false, cond);
}

/**
 * The least string above every string starting with `s` in code point
 * order (undefined when there is none: `s` is all U+10FFFF).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { successor } from "moonbase/lib/rules/sql_methods.ts";
 * assert.equal(successor("ab"), "ac");
 * assert.equal(successor("a\uD7FF"), "a\uE000");
 * assert.equal(successor("a\u{10FFFF}"), "b");
 * assert.equal(successor("\u{10FFFF}"), undefined);
 * ```
 */
export function successor(s: string): string | undefined {
  const cps = [...s].map((c) => c.codePointAt(0)!);
  while (cps.length > 0 && cps[cps.length - 1] === 0x10ffff) cps.pop();
  if (cps.length === 0) return undefined;
  const last = cps.pop()! + 1;
  cps.push(last === 0xd800 ? 0xe000 : last);
  return String.fromCodePoint(...cps);
}

/**
 * `array.includes(column)` for an array known at compile time (SameValueZero).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { includesColumn } from "moonbase/lib/rules/sql_methods.ts";
 * const c = includesColumn(["a", null], { sql: '"t"', fieldType: "string", family: "text" }, "sqlite");
 * assert.deepEqual(c, { sql: '("t" IS NULL OR "t" IN (?))', params: ["a"] });
 * ```
 */
export function includesColumn(
  values: readonly unknown[],
  c: Column,
  d: Dialect,
): Cond {
  if (values.length > 100) throw new NotCompilable("array too long");
  const onNull = values.includes(nullOf(c)); // SameValueZero, like the evaluator
  let nonNull: Cond;
  if (c.family === "bool") {
    nonNull = byBoolean(
      { sql: `${c.sql} IS TRUE`, params: [] },
      values.includes(true),
      values.includes(false),
    );
  } else {
    const params = c.family === "text"
      ? values.filter((v): v is string => typeof v === "string").map((v) =>
        textParam(v, d)
      )
      : values.filter((v): v is number =>
        typeof v === "number" && !Number.isNaN(v)
      )
        .map((v) => numberParam(v, c.fieldType, d));
    nonNull = params.length === 0 ? false : sql(
      `${c.sql} IN (`,
      ...params.flatMap((p, i) => i ? [", ", p] : [p]),
      ")",
    );
  }
  return whenNull(c, onNull, nonNull);
}
