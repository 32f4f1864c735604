/**
 * The rule-to-SQL compiler proper: walks an expression and builds the
 * {@link Compiled} view of each sub-expression (see `to_sql.ts` for what is
 * compiled and the entry points).
 *
 * @module
 */

import type { Expr, MethodName } from "./ast.ts";
import type { SqlContext } from "./sql_context.ts";
import { callMethod, evaluate } from "./evaluate.ts";
import { readsRecord, readsRequest } from "./parser.ts";
import { isCompareOperator } from "./sql_compare.ts";
import { includesColumn, textMethod } from "./sql_methods.ts";
import { jsonIncludes } from "./sql_json.ts";
import { jsonMember, listLength } from "./sql_json_path.ts";
import {
  arithmetic,
  negative,
  type Operand,
  textLength,
} from "./sql_numeric.ts";
import {
  and,
  type Cond,
  type Dialect,
  not,
  NotCompilable,
  or,
} from "./sql_fragment.ts";
import { type Column, familyOf } from "./sql_column.ts";
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

const fail = (reason: string): never => {
  throw new NotCompilable(reason);
};

/** A compiled value as an arithmetic operand (conditions are not compiled). */
function operand(c: Compiled): Operand {
  if (c.kind === "const") return { value: c.value };
  if (c.kind === "column") return { column: c.column };
  return fail("arithmetic on a condition");
}

/** Compiles one expression under one context (throws NotCompilable). */
export class Compiler {
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
    const type = sqlText === undefined ? undefined : this.#ctx.fieldType(name);
    if (sqlText !== undefined && type === "json") {
      return { kind: "json", json: { column: sqlText, path: [] } };
    }
    if (sqlText !== undefined && type === "relation[]") {
      return { kind: "json", json: { column: sqlText, path: [], list: true } };
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
      if (property === "length" && o.json.list) {
        return { kind: "column", column: listLength(o.json, this.#d) };
      }
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
