/**
 * Compiles a parsed rule/filter into a parameterized SQL condition (SQLite or
 * PostgreSQL) that selects exactly the rows for which {@link test} is true,
 * or returns `undefined` when that cannot be guaranteed (the caller then
 * evaluates the rule per row in JavaScript).
 *
 * Compiled: comparisons of text/date/int/double/bool columns with values known
 * at request time (literals, `auth.*`, `req.*`, helpers of those) and with each
 * other (numbers/bools; text equality), `&&`, `||`, `!`, truthiness of
 * columns, `.includes/.startsWith/.endsWith` on text columns and
 * `array.includes(column)` for arrays from `auth`/`req`.
 * Also: `.length` of text columns, arithmetic on number columns
 * (`sql_numeric.ts`) and reads of json columns (`sql_json.ts`).
 * Not compiled (`undefined`): text columns compared numerically or ordered
 * against each other, files columns, helpers given row values, and
 * expressions whose JSON comparisons leave some rows undecided — for those,
 * {@link compilePrefilter} gives a condition selecting a superset of the rows.
 *
 * Assumptions about storage (see DESIGN.md): values are stored as documented
 * in the schema layer, double columns never hold NaN (JSON cannot carry it),
 * and PostgreSQL databases use UTF-8 with deterministic collations.
 *
 * @module
 */

import type { Expr, MethodName } from "./ast.ts";
import { callMethod, evaluate, type RuleHelpers } from "./evaluate.ts";
import { readsRecord, readsRequest } from "./parser.ts";
import { isCompareOperator } from "./sql_compare.ts";
import { includesColumn, textMethod } from "./sql_methods.ts";
import { jsonIncludes, jsonMember } from "./sql_json.ts";
import {
  arithmetic,
  negative,
  type Operand,
  textLength,
} from "./sql_numeric.ts";
import {
  and,
  type Column,
  type Cond,
  type Dialect,
  familyOf,
  not,
  NotCompilable,
  or,
} from "./sql_fragment.ts";
import {
  boolean,
  compareValues,
  type Compiled,
  truthyCond,
  unsureOf,
} from "./sql_value.ts";
import {
  binary,
  getMember,
  isPlainArray,
  negate,
  toString,
  truthy,
} from "./values.ts";

/**
 * What the compiler needs to know about the table and the request.
 *
 * @example
 * ```ts
 * import type { SqlContext } from "moonbase/lib/rules/to_sql.ts";
 * const ctx: SqlContext = {
 *   dialect: "sqlite",
 *   column: (name) => name === "title" ? '"title"' : undefined,
 *   fieldType: (name) => name === "title" ? "string" : undefined,
 *   scope: { auth: { id: "" } },
 * };
 * if (ctx.column("x") !== undefined) throw new Error("bad");
 * ```
 */
export interface SqlContext {
  dialect: Dialect;
  /** Quoted column expression for a record field, e.g. `"title"`, or undefined if not a field. */
  column(name: string): string | undefined;
  /** Declared type of a record field: "string"|"text"|"email"|"url"|"select"|"date"|"int"|"double"|"bool"|"json"|"relation"|"file"|"files". */
  fieldType(name: string): string | undefined;
  /** The values of `auth` (and optionally `req`) known at request time: used as bound parameters. */
  scope: { auth: unknown; req?: unknown };
  /** Helpers whose calls on request-time values may be folded; without it, helper calls are not compiled. */
  helpers?: RuleHelpers;
}

/**
 * A boolean SQL condition with `?` placeholders and its parameters.
 *
 * @example
 * ```ts
 * import type { SqlQuery } from "moonbase/lib/rules/to_sql.ts";
 * const q: SqlQuery = { sql: '"owner" = ?', params: ["u1"] };
 * if (q.params[0] !== "u1") throw new Error("bad");
 * ```
 */
export interface SqlQuery {
  sql: string;
  params: unknown[];
}

const fail = (reason: string): never => {
  throw new NotCompilable(reason);
};

/** A compiled value as an arithmetic operand (conditions are not compiled). */
function operand(c: Compiled): Operand {
  if (c.kind === "const") return { value: c.value };
  if (c.kind === "column") return { column: c.column };
  return fail("arithmetic on a condition");
}

class Compiler {
  readonly #ctx: SqlContext;
  readonly #d: Dialect;

  constructor(ctx: SqlContext) {
    this.#ctx = ctx;
    this.#d = ctx.dialect;
  }

  /** Evaluates a sub-expression that does not read the record. */
  fold(e: Expr): unknown {
    const { auth, req } = this.#ctx.scope;
    if (req === undefined && readsRequest(e)) fail("req is not known");
    return evaluate(e, { auth, req }, this.#ctx.helpers);
  }

  /** A record field: a column, or a json column's value. */
  field(name: string): Compiled {
    const sqlText = this.#ctx.column(name);
    if (sqlText !== undefined && this.#ctx.fieldType(name) === "json") {
      return { kind: "json", json: { column: sqlText, path: [] } };
    }
    return { kind: "column", column: this.column(name) };
  }

  column(name: string): Column {
    const sqlText = this.#ctx.column(name);
    const fieldType = this.#ctx.fieldType(name);
    const family = fieldType === undefined ? undefined : familyOf(fieldType);
    if (
      sqlText === undefined || fieldType === undefined || family === undefined
    ) {
      return fail(`field ${name} is not comparable in SQL`);
    }
    return { sql: sqlText, fieldType, family };
  }

  compile(e: Expr): Compiled {
    if (!readsRecord(e)) return { kind: "const", value: this.fold(e) };
    switch (e.type) {
      case "field":
        return this.field(e.name);
      case "member":
        return this.member(e.object, e.property);
      case "unary": {
        const argument = this.compile(e.argument);
        if (e.operator === "!") {
          return boolean(
            not(truthyCond(argument, this.#d)),
            unsureOf(argument),
          );
        }
        if (argument.kind === "const") {
          return { kind: "const", value: negate(argument.value) };
        }
        if (argument.kind === "column") {
          return { kind: "column", column: negative(argument.column) };
        }
        return fail("arithmetic on a condition");
      }
      case "binary": {
        const op = e.operator;
        const left = this.compile(e.left);
        const right = this.compile(e.right);
        if (isCompareOperator(op)) {
          return compareValues(op, left, right, this.#d);
        }
        if (left.kind === "const" && right.kind === "const") {
          return { kind: "const", value: binary(op, left.value, right.value) };
        }
        const r = arithmetic(op, operand(left), operand(right), this.#d);
        return "column" in r
          ? { kind: "column", column: r.column }
          : { kind: "const", value: r.value };
      }
      case "logical":
        return this.logical(e.operator, e.left, e.right);
      case "method":
        return this.method(e.method, e.object, e.argument);
      default:
        return fail(`${e.type} reading the record`);
    }
  }

  /** `object.property` where the object reads the record. */
  member(object: Expr, property: string): Compiled {
    if (object.type === "root") return this.field(property);
    const o = this.compile(object);
    if (o.kind === "const") {
      return { kind: "const", value: getMember(o.value, property) };
    }
    if (o.kind === "json") {
      return { kind: "json", json: jsonMember(o.json, property) };
    }
    if (o.kind === "truthy" || unsureOf(o) !== false) {
      return fail("member of an unknown value");
    }
    if (o.kind === "column" && o.column.family === "text") {
      if (property === "length") {
        return { kind: "column", column: textLength(o.column, this.#d) };
      }
      if (/^[0-9]+$/.test(property)) return fail("index of a text column");
    }
    // Numbers, booleans, null and (other members of) strings have no own data property.
    return { kind: "const", value: undefined };
  }

  logical(op: "&&" | "||", leftExpr: Expr, rightExpr: Expr): Compiled {
    const and_ = op === "&&";
    const left = this.compile(leftExpr);
    // Short-circuit exactly like JavaScript when the left value is known.
    if (left.kind === "const") {
      return truthy(left.value) === and_ ? this.compile(rightExpr) : left;
    }
    const right = this.compile(rightExpr);
    // Rows unsure on either side stay unsure (whichever side JavaScript reads).
    const unsure: Cond = or(unsureOf(left), unsureOf(right));
    if (left.kind === "bool" && right.kind === "bool") {
      return boolean(
        and_ ? and(left.cond, right.cond) : or(left.cond, right.cond),
        unsure,
      );
    }
    if (
      left.kind === "bool" && right.kind === "const" &&
      typeof right.value === "boolean" && unsure === false
    ) {
      // x && true = x, x && false = false, x || true = true, x || false = x (x boolean)
      return right.value === and_ ? left : right;
    }
    const l = truthyCond(left, this.#d);
    const r = truthyCond(right, this.#d);
    const cond = and_ ? and(l, r) : or(l, r);
    return unsure === false
      ? { kind: "truthy", cond }
      : { kind: "truthy", cond, unsure };
  }

  method(name: MethodName, objectExpr: Expr, argumentExpr: Expr): Compiled {
    const o = this.compile(objectExpr);
    const a = this.compile(argumentExpr);
    if (o.kind === "const" && a.kind === "const") {
      return { kind: "const", value: callMethod(o.value, name, a.value) };
    }
    if (o.kind === "json") {
      if (a.kind !== "const" || name !== "includes") {
        return fail("json method other than includes of a known value");
      }
      return { kind: "truthy", cond: jsonIncludes(o.json, a.value, this.#d) };
    }
    if (unsureOf(o) !== false || unsureOf(a) !== false) {
      return fail("method on an unsure value");
    }
    if (o.kind === "const") {
      if (typeof o.value === "string") {
        return fail("string constant method with a row argument");
      }
      const array = o.value;
      // callMethod gives undefined for anything but strings and plain arrays.
      if (!isPlainArray(array) || name !== "includes") {
        return { kind: "const", value: undefined };
      }
      if (a.kind !== "column") {
        return fail("array includes of a computed or json value");
      }
      if (array.length > 100) return fail("array too long");
      const values = Array.from(
        { length: array.length },
        (_, i) => getMember(array, String(i)),
      );
      return boolean(includesColumn(values, a.column, this.#d));
    }
    if (o.kind === "truthy") return fail("method of an unknown value");
    if (o.kind === "bool" || o.column.family !== "text") {
      return { kind: "const", value: undefined };
    }
    if (a.kind !== "const") return fail("text method with a row argument");
    return {
      kind: "truthy",
      cond: textMethod(name, o.column, toString(a.value), this.#d),
    };
  }
}

/**
 * Compiles `expr` to a SQL condition selecting the rows for which
 * `test(expr, {auth, req, record: row})` (filter mode: `{...row, auth}`) is
 * true, or `undefined` when the expression (or part of it) cannot be
 * compiled with identical semantics.
 * Placeholders are `?`; on PostgreSQL they carry explicit casts. Values are
 * always bound, never interpolated.
 *
 * @example
 * ```ts
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { compileToSql } from "moonbase/lib/rules/to_sql.ts";
 * const expr = parseExpression("record.owner == auth.id && !record.hidden", { mode: "rule" });
 * const types: Record<string, string> = { owner: "relation", hidden: "bool" };
 * const q = compileToSql(expr, {
 *   dialect: "sqlite",
 *   column: (name) => name in types ? `"${name}"` : undefined,
 *   fieldType: (name) => types[name],
 *   scope: { auth: { id: "u1" } },
 * });
 * if (q?.sql !== '(("owner" IS NOT NULL AND "owner" = ?) AND NOT ("hidden" IS TRUE))') throw new Error(q?.sql);
 * if (q.params.length !== 1 || q.params[0] !== "u1") throw new Error("params");
 * ```
 */
export function compileToSql(
  expr: Expr,
  ctx: SqlContext,
): SqlQuery | undefined {
  const parts = compileParts(expr, ctx);
  return parts === undefined || parts.unsure !== false
    ? undefined
    : query(parts.cond, ctx.dialect);
}

/**
 * For an expression {@link compileToSql} does not compile because JSON
 * comparisons leave some rows undecided in SQL: a condition selecting a
 * superset of the rows `test` accepts (every row it accepts, plus the
 * undecided ones). The caller must still run `test` on every selected row.
 * `undefined` when no such condition is known (or when `compileToSql`
 * compiles the expression exactly).
 *
 * @example
 * ```ts
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { compilePrefilter, compileToSql } from "moonbase/lib/rules/to_sql.ts";
 * const expr = parseExpression("record.meta.owner == auth.id", { mode: "rule" });
 * const ctx = {
 *   dialect: "sqlite" as const,
 *   column: (name: string) => name === "meta" ? '"meta"' : undefined,
 *   fieldType: (name: string) => name === "meta" ? "json" : undefined,
 *   scope: { auth: { id: "u1" } },
 * };
 * // Arrays and objects convert to strings in JavaScript: not decided in SQL.
 * if (compileToSql(expr, ctx) !== undefined) throw new Error("exact?");
 * if (compilePrefilter(expr, ctx) === undefined) throw new Error("prefilter");
 * ```
 */
export function compilePrefilter(
  expr: Expr,
  ctx: SqlContext,
): SqlQuery | undefined {
  const parts = compileParts(expr, ctx);
  if (parts === undefined || parts.unsure === false) return undefined;
  const cond = or(parts.cond, parts.unsure);
  return cond === true ? undefined : query(cond, ctx.dialect);
}

function compileParts(
  expr: Expr,
  ctx: SqlContext,
): { cond: Cond; unsure: Cond } | undefined {
  try {
    const c = new Compiler(ctx).compile(expr);
    return { cond: truthyCond(c, ctx.dialect), unsure: unsureOf(c) };
  } catch {
    // NotCompilable, or an evaluation error while folding a constant: the
    // per-row evaluator decides (and reports) instead.
    return undefined;
  }
}

function query(cond: Cond, dialect: Dialect): SqlQuery {
  if (typeof cond === "boolean") {
    const sqlText = dialect === "postgres"
      ? String(cond).toUpperCase()
      : cond
      ? "1"
      : "0";
    return { sql: sqlText, params: [] };
  }
  return { sql: cond.sql, params: [...cond.params] };
}
