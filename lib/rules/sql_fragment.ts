/**
 * Building blocks of the rule-to-SQL compiler: SQL fragments with bound
 * parameters, boolean conditions folded at compile time, typed parameter
 * placeholders and the record columns a rule may compare.
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
 * import type { Frag } from "moonbase/lib/rules/sql_fragment.ts";
 * const f: Frag = { sql: '"title" = ?', params: ["x"] };
 * if (f.params.length !== 1) throw new Error("bad");
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
 * import { and, type Cond } from "moonbase/lib/rules/sql_fragment.ts";
 * const c: Cond = and(true, { sql: '"a" IS NULL', params: [] });
 * if (typeof c === "boolean" || c.sql !== '"a" IS NULL') throw new Error("bad");
 * ```
 */
export type Cond = boolean | Frag;

/**
 * Thrown inside the compiler when an expression cannot be compiled with
 * semantics identical to the evaluator; the caller then evaluates in JS.
 *
 * @example
 * ```ts
 * import { NotCompilable } from "moonbase/lib/rules/sql_fragment.ts";
 * if (!(new NotCompilable("x") instanceof Error)) throw new Error("bad");
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
 * import { sql } from "moonbase/lib/rules/sql_fragment.ts";
 * const f = sql("(", { sql: "? + ?", params: [1, 2] }, ")");
 * if (f.sql !== "(? + ?)" || f.params.length !== 2) throw new Error("bad");
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
 * import { and } from "moonbase/lib/rules/sql_fragment.ts";
 * if (and(false, { sql: "x", params: [] }) !== false) throw new Error("bad");
 * ```
 */
export function and(a: Cond, b: Cond): Cond {
  if (a === false || b === false) return false;
  if (a === true) return b;
  if (b === true) return a;
  return sql("(", a, " AND ", b, ")");
}

/**
 * `a OR b`, folding known values.
 *
 * @example
 * ```ts
 * import { or } from "moonbase/lib/rules/sql_fragment.ts";
 * if (or({ sql: "x", params: [] }, true) !== true) throw new Error("bad");
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
 * import { not } from "moonbase/lib/rules/sql_fragment.ts";
 * const c = not({ sql: "x = ?", params: [1] });
 * if (typeof c === "boolean" || c.sql !== "NOT (x = ?)") throw new Error("bad");
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
 * import { textParam } from "moonbase/lib/rules/sql_fragment.ts";
 * if (textParam("x", "postgres").sql !== "?::text") throw new Error("bad");
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
 * import { numberParam } from "moonbase/lib/rules/sql_fragment.ts";
 * if (numberParam(5, "int", "postgres").sql !== "?::bigint") throw new Error("bad");
 * if (numberParam(0.5, "int", "postgres").sql !== "?::double precision") throw new Error("bad");
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
 * import { intParam } from "moonbase/lib/rules/sql_fragment.ts";
 * if (intParam(3, "postgres").sql !== "?::integer") throw new Error("bad");
 * ```
 */
export function intParam(n: number, dialect: Dialect): Frag {
  return { sql: dialect === "postgres" ? "?::integer" : "?", params: [n] };
}

/** How a column's values are stored and decoded. */
export type Family = "text" | "number" | "bool";

/**
 * A record column: its SQL expression, declared field type and value family.
 *
 * @example
 * ```ts
 * import type { Column } from "moonbase/lib/rules/sql_fragment.ts";
 * const c: Column = { sql: '"age"', fieldType: "int", family: "number" };
 * if (c.family !== "number") throw new Error("bad");
 * ```
 */
export interface Column {
  readonly sql: string;
  readonly fieldType: string;
  readonly family: Family;
  /**
   * The JavaScript value SQL NULL stands for: `null` for a stored column
   * (the default), `undefined` for `.length` of a NULL text column, `NaN`
   * for arithmetic on such a length.
   */
  readonly nullValue?: unknown;
  /** Computed numbers: an upper bound of the absolute value (finite). */
  readonly bound?: number;
  /** Computed numbers: every value is an integer (in an integer SQL type). */
  readonly integral?: boolean;
}

/**
 * The JavaScript value a column's SQL NULL stands for.
 *
 * @example
 * ```ts
 * import { nullOf } from "moonbase/lib/rules/sql_fragment.ts";
 * if (nullOf({ sql: '"a"', fieldType: "int", family: "number" }) !== null) throw new Error("bad");
 * ```
 */
export function nullOf(c: Column): unknown {
  return Object.hasOwn(c, "nullValue") ? c.nullValue : null;
}

const FAMILIES: Readonly<Record<string, Family>> = {
  string: "text",
  text: "text",
  email: "text",
  url: "text",
  select: "text",
  date: "text",
  relation: "text",
  file: "text",
  int: "number",
  double: "number",
  bool: "bool",
};

/**
 * The family of a declared field type, or undefined when values of that type
 * are not compared in SQL (json, files, unknown types).
 *
 * @example
 * ```ts
 * import { familyOf } from "moonbase/lib/rules/sql_fragment.ts";
 * if (familyOf("date") !== "text" || familyOf("json") !== undefined) throw new Error("bad");
 * ```
 */
export function familyOf(fieldType: string): Family | undefined {
  return Object.hasOwn(FAMILIES, fieldType) ? FAMILIES[fieldType] : undefined;
}

/**
 * `column IS NULL`.
 *
 * @example
 * ```ts
 * import { isNull } from "moonbase/lib/rules/sql_fragment.ts";
 * if (isNull({ sql: '"a"', fieldType: "int", family: "number" }).sql !== '"a" IS NULL') throw new Error("bad");
 * ```
 */
export function isNull(c: Column): Frag {
  return { sql: `${c.sql} IS NULL`, params: [] };
}

/**
 * Condition on a column: `onNull` for NULL rows, `nonNull` (a condition that
 * is NULL-free whenever the column is not NULL) for the others.
 *
 * @example
 * ```ts
 * import { whenNull } from "moonbase/lib/rules/sql_fragment.ts";
 * const c = whenNull({ sql: '"a"', fieldType: "int", family: "number" }, false, { sql: '"a" = ?', params: [1] });
 * if (typeof c === "boolean" || c.sql !== '("a" IS NOT NULL AND "a" = ?)') throw new Error("bad");
 * ```
 */
export function whenNull(c: Column, onNull: boolean, nonNull: Cond): Cond {
  if (onNull) return or(isNull(c), nonNull);
  return and({ sql: `${c.sql} IS NOT NULL`, params: [] }, nonNull);
}

/**
 * JavaScript truthiness of a column value as a NULL-free condition.
 *
 * @example
 * ```ts
 * import { columnTruthy } from "moonbase/lib/rules/sql_fragment.ts";
 * const c = columnTruthy({ sql: '"t"', fieldType: "string", family: "text" });
 * if (typeof c === "boolean" || c.sql !== `("t" IS NOT NULL AND "t" <> '')`) throw new Error("bad");
 * ```
 */
export function columnTruthy(c: Column): Cond {
  if (c.family === "bool") return { sql: `${c.sql} IS TRUE`, params: [] };
  const zero = c.family === "text" ? "''" : "0";
  return whenNull(c, false, { sql: `${c.sql} <> ${zero}`, params: [] });
}
