/**
 * Building blocks of the rule-to-SQL compiler: SQL fragments with bound
 * parameters, boolean conditions folded at compile time (and the NULL tests
 * they fold, `whenNull`) and typed parameter placeholders. The record
 * columns a rule compares are sql_column.ts's.
 *
 * Every condition built here is NULL-free: it is TRUE or FALSE for every row,
 * so `NOT` and the JavaScript truthiness of the result stay exact.
 *
 * @module
 */

/** SQL dialect of the storage. */
export type Dialect = "sqlite" | "postgres";

/**
 * A piece of SQL using `?` placeholders, with its parameters in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { type Frag, not } from "moonbase/lib/rules/sql_fragment.ts";
 * const f: Frag = { sql: '"title" = ?', params: ["x"] };
 * assert.deepEqual(not(f), { sql: 'NOT ("title" = ?)', params: ["x"] });
 * ```
 */
export interface Frag {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/**
 * A NULL-free boolean SQL condition, or `true`/`false` when known at compile
 * time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { and, type Cond } from "moonbase/lib/rules/sql_fragment.ts";
 * const c: Cond = and(true, { sql: '"a" IS NULL', params: [] });
 * assert.deepEqual(c, { sql: '"a" IS NULL', params: [] });
 * ```
 */
export type Cond = boolean | Frag;

/**
 * Thrown inside the compiler when an expression cannot be compiled with
 * semantics identical to the evaluator; the caller then evaluates in JS.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NotCompilable } from "moonbase/lib/rules/sql_fragment.ts";
 * const e = new NotCompilable("json in arithmetic");
 * assert.ok(e instanceof Error);
 * assert.equal(e.name, "NotCompilable");
 * assert.equal(e.message, "json in arithmetic");
 * ```
 */
export class NotCompilable extends Error {
  /** @param reason why the expression is not compiled */
  constructor(reason: string) {
    super(reason);
    this.name = "NotCompilable";
  }
}

/**
 * Concatenates SQL text and fragments into one fragment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sql } from "moonbase/lib/rules/sql_fragment.ts";
 * const f = sql("(", { sql: "? + ?", params: [1, 2] }, ")");
 * assert.deepEqual(f, { sql: "(? + ?)", params: [1, 2] });
 * ```
 */
export function sql(...parts: (string | Frag)[]): Frag {
  let text = "";
  const params: unknown[] = [];
  for (const p of parts) {
    if (typeof p === "string") {
      text += p;
    } else {
      text += p.sql;
      params.push(...p.params);
    }
  }
  return { sql: text, params };
}

/**
 * `a AND b`, folding known values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { and } from "moonbase/lib/rules/sql_fragment.ts";
 * const x = { sql: "x", params: [] };
 * assert.equal(and(false, x), false);
 * assert.equal(and(true, x), x);
 * ```
 */
export function and(a: Cond, b: Cond): Cond {
  if (a === false || b === false) return false;
  if (a === true) return b;
  if (b === true) return a;
  // `x IS NOT NULL AND …` beside `(x IS NULL OR rest)`: the NULL branch
  // cannot hold, so the pair is `… AND rest`, which an index can serve
  // (`n >= 2 && n < 4` bounds the range on both sides).
  const ra = notNullIn.get(a), rb = notNullIn.get(b);
  const na = nullOr.get(a), nb = nullOr.get(b);
  if (nb && ra?.has(nb.column)) b = nb.rest;
  else if (na && rb?.has(na.column)) a = na.rest;
  const out = sql("(", a, " AND ", b, ")");
  const ca = notNullIn.get(a), cb = notNullIn.get(b);
  if (ca || cb) notNullIn.set(out, new Set([...ca ?? [], ...cb ?? []]));
  return out;
}

/** Columns a condition holds NOT NULL whenever it is true. */
const notNullIn = new WeakMap<Frag, ReadonlySet<string>>();
/** Conditions `(column IS NULL OR rest)`, by their column and rest. */
const nullOr = new WeakMap<Frag, { column: string; rest: Frag }>();

/**
 * `a OR b`, folding known values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { or } from "moonbase/lib/rules/sql_fragment.ts";
 * const x = { sql: "x", params: [] };
 * assert.equal(or(x, true), true);
 * assert.equal(or(x, false), x);
 * ```
 */
export function or(a: Cond, b: Cond): Cond {
  if (a === true || b === true) return true;
  if (a === false) return b;
  if (b === false) return a;
  return sql("(", a, " OR ", b, ")");
}

/**
 * `NOT a`, folding known values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { not } from "moonbase/lib/rules/sql_fragment.ts";
 * assert.deepEqual(not({ sql: "x = ?", params: [1] }), { sql: "NOT (x = ?)", params: [1] });
 * assert.equal(not(true), false);
 * ```
 */
export function not(a: Cond): Cond {
  return typeof a === "boolean" ? !a : sql("NOT (", a, ")");
}

/**
 * A text parameter. Strings SQL cannot hold exactly (NUL characters, lone
 * surrogates) are not compiled.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textParam } from "moonbase/lib/rules/sql_fragment.ts";
 * assert.deepEqual(textParam("x", "postgres"), { sql: "?::text", params: ["x"] });
 * assert.deepEqual(textParam("x", "sqlite"), { sql: "?", params: ["x"] });
 * ```
 */
export function textParam(s: string, dialect: Dialect): Frag {
  if (s.includes("\0") || !s.isWellFormed()) {
    throw new NotCompilable("string not representable in SQL");
  }
  return { sql: dialect === "postgres" ? "?::text" : "?", params: [s] };
}

/**
 * A number parameter compared with a column of declared type `fieldType`
 * (PostgreSQL: `bigint` for safe integers against `int` columns, else
 * `double precision`). NaN is never bound (callers fold it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { numberParam } from "moonbase/lib/rules/sql_fragment.ts";
 * assert.deepEqual(numberParam(5, "int", "postgres"), { sql: "?::bigint", params: [5] });
 * assert.deepEqual(numberParam(0.5, "int", "postgres"), { sql: "?::double precision", params: [0.5] });
 * ```
 */
export function numberParam(
  k: number,
  fieldType: string,
  dialect: Dialect,
): Frag {
  if (Number.isNaN(k)) throw new NotCompilable("NaN parameter");
  const value = k === 0 ? 0 : k; // -0 → 0
  if (dialect === "sqlite") return { sql: "?", params: [value] };
  const cast = fieldType === "int" && Number.isSafeInteger(value)
    ? "bigint"
    : "double precision";
  return { sql: `?::${cast}`, params: [value] };
}

/**
 * An integer parameter (lengths, positions).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { intParam } from "moonbase/lib/rules/sql_fragment.ts";
 * assert.deepEqual(intParam(3, "postgres"), { sql: "?::integer", params: [3] });
 * ```
 */
export function intParam(n: number, dialect: Dialect): Frag {
  return { sql: dialect === "postgres" ? "?::integer" : "?", params: [n] };
}

/**
 * Condition on a column (sql_column.ts) or any SQL value: `onNull` for NULL
 * rows, `nonNull` (a condition that is NULL-free whenever the value is not
 * NULL) for the others. Here, beside `and`/`or`: it feeds their NULL folding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { whenNull } from "moonbase/lib/rules/sql_fragment.ts";
 * const a = { sql: '"a"', fieldType: "int", family: "number" } as const;
 * const c = whenNull(a, false, { sql: '"a" = ?', params: [1] });
 * assert.deepEqual(c, { sql: '("a" IS NOT NULL AND "a" = ?)', params: [1] });
 * ```
 */
export function whenNull(
  c: { readonly sql: string; readonly notNull?: boolean },
  onNull: boolean,
  nonNull: Cond,
): Cond {
  if (c.notNull) return nonNull;
  if (onNull) {
    const out = or({ sql: `${c.sql} IS NULL`, params: [] }, nonNull);
    if (typeof out === "object" && typeof nonNull === "object") {
      nullOr.set(out, { column: c.sql, rest: nonNull });
    }
    return out;
  }
  const notNull = { sql: `${c.sql} IS NOT NULL`, params: [] };
  notNullIn.set(notNull, new Set([c.sql]));
  return and(notNull, nonNull);
}
