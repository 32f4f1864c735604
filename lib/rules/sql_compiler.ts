/**
 * The rule-to-SQL compiler proper: walks an expression and builds the
 * {@link Compiled} view of each sub-expression (see `to_sql.ts` for what is
 * compiled and the entry points). Reads through relations (a bound
 * expression) become subqueries (`sql_relations.ts`).
 *
 * Longer than ~350 lines: one walker over one expression, whose relation
 * reads substitute records and parameters in the walker's own state.
 *
 * @module
 */

import type { Expr, MethodName, RelationNode, TextFunction } from "./ast.ts";
import type { SqlContext, SqlTable } from "./sql_context.ts";
import { applyText, callMethod, evaluate } from "./evaluate.ts";
import { readsRecord, readsRequest } from "./parser.ts";
import {
  aliasRef,
  countOf,
  heldBy,
  idIn,
  liftedCond,
  type ListRef,
  quantified,
  type RecordRef,
  relatedColumn,
} from "./sql_relations.ts";
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
import { type Column, familyOf, textFunctionColumn } from "./sql_column.ts";
import {
  boolean,
  compareValues,
  type Compiled,
  truthyCond,
  unsureOf,
} from "./sql_value.ts";
import {
  ABSENT,
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

/** A sub-expression: a value, or (reads through relations) records. */
type Node =
  | Compiled
  | { readonly kind: "record"; readonly ref: RecordRef }
  | { readonly kind: "records"; readonly list: ListRef };

/** Numbers naming the records substituted in a compile (lifted conditions). */
const refIds = new WeakMap<RecordRef, number>();
let nextRef = 0;

/** Compiles one expression under one context (throws NotCompilable). */
export class Compiler {
  readonly #ctx: SqlContext;
  readonly #d: Dialect;
  /** Subqueries around the current position (the row's own columns are qualified inside one). */
  #inner = 0;
  #aliases = 0;
  /** Relation nodes read as something else (a lifted condition's row, or none). */
  readonly #subst = new Map<Expr, Node>();
  /** The quantifier parameters in scope. */
  readonly #params = new Map<string, Node>();
  /** The record itself. */
  readonly #row: RecordRef;
  readonly #relations: boolean;

  /** `relations`: the expression reads through relations (worth lifting). */
  constructor(ctx: SqlContext, relations = true) {
    this.#relations = relations;
    this.#ctx = ctx;
    this.#d = ctx.dialect;
    this.#row = {
      column: (name) => {
        const c = ctx.column(name);
        return c !== undefined && this.#inner > 0 && ctx.table !== undefined
          ? `${ctx.table}.${c}`
          : c;
      },
      fieldType: (name) => ctx.fieldType(name),
    };
  }

  /** Evaluates a sub-expression that does not read the record. */
  fold(e: Expr): unknown {
    const { auth, req } = this.#ctx.scope;
    if (req === undefined && readsRequest(e)) fail("req is not known");
    return evaluate(e, { auth, req }, this.#ctx.helpers, this.#ctx.related);
  }

  /** A record field: a column, or a json column's value. */
  field(name: string): Compiled {
    return this.fieldOf(this.#row, name);
  }

  /** A field of a record: a column, or a json column's value. */
  fieldOf(ref: RecordRef, name: string): Compiled {
    const sqlText = ref.column(name);
    const fieldType = ref.fieldType(name);
    if (sqlText !== undefined && fieldType === "json") {
      return { kind: "json", json: { column: sqlText, path: [] } };
    }
    if (sqlText !== undefined && fieldType === "relation[]") {
      return { kind: "json", json: { column: sqlText, path: [], list: true } };
    }
    const family = fieldType === undefined ? undefined : familyOf(fieldType);
    if (
      sqlText === undefined || fieldType === undefined || family === undefined
    ) {
      return fail(`field ${name} is not comparable in SQL`);
    }
    return { kind: "column", column: { sql: sqlText, fieldType, family } };
  }

  column(name: string): Column {
    const c = this.field(name);
    return c.kind === "column" ? c.column : fail(`field ${name} is json`);
  }

  /** Whether `e` depends on the row (quantifier parameters count as the row). */
  #readsRow(e: Expr): boolean {
    return this.#params.size === 0
      ? readsRecord(e)
      : readsRecord(e, new Set(this.#params.keys()));
  }

  compile(e: Expr): Compiled {
    const n = this.#node(e);
    if (n.kind === "record" || n.kind === "records") {
      return fail("a record used as a value");
    }
    return n;
  }

  #node(e: Expr): Node {
    const s = this.#subst.get(e);
    if (s !== undefined) return s;
    if (e.type === "param") {
      return this.#params.get(e.name) ?? fail("unknown parameter");
    }
    if (!this.#readsRow(e)) return { kind: "const", value: this.fold(e) };
    const lifted = this.#lift(e);
    if (lifted !== undefined) return lifted;
    switch (e.type) {
      case "root":
        return e.name === "record"
          ? { kind: "record", ref: this.#row }
          : fail("root");
      case "field":
        return this.field(e.name);
      case "member":
        return this.member(e.object, e.property);
      case "relation":
        return this.#relation(e);
      case "quantifier":
        return this.#quantifier(e);
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
      case "textFunction":
        return this.textFunction(e.name, e.argument);
      default:
        return fail(`${e.type} reading the record`);
    }
  }

  /** `object.property` where the object reads the record. */
  member(object: Expr, property: string): Compiled {
    const o = this.#node(object);
    if (o.kind === "record") return this.fieldOf(o.ref, property);
    if (o.kind === "records") return this.#listMember(o.list, property);
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

  /** `list.length` (other members of a list of records are not compiled). */
  #listMember(list: ListRef, property: string): Compiled {
    if (property !== "length") return fail("member of a list of records");
    const count = this.#within(() => countOf(list, this.#alias()));
    if (count === undefined) return fail("count under a guard with parameters");
    return {
      kind: "column",
      column: {
        sql: count,
        fieldType: "int",
        family: "number",
        integral: true,
        notNull: true,
      },
    };
  }

  /** Runs `f` one subquery deeper. */
  #within<T>(f: () => T): T {
    this.#inner++;
    try {
      return f();
    } finally {
      this.#inner--;
    }
  }

  /** A fresh quoted table alias. */
  #alias(): string {
    return `"${this.#ctx.aliases ?? "mb_r"}${++this.#aliases}"`;
  }

  #table(entity: string): SqlTable {
    if (this.#ctx.table === undefined) return fail("relations not compiled");
    return this.#ctx.tables?.(entity) ?? fail(`no table for ${entity}`);
  }

  #guard(entity: string, op: "get" | "list", alias: string): Cond {
    return this.#ctx.guard ? this.#ctx.guard(entity, op, alias) : true;
  }

  /** The record(s) a relation node reads. */
  #relation(e: RelationNode): Node {
    const parent = this.#node(e.object);
    if (parent.kind === "const") {
      // No row to start from (ABSENT, a helper's answer…): as the evaluator.
      if (e.kind !== "forward") return { kind: "const", value: [] };
      return parent.value === ABSENT
        ? { kind: "const", value: ABSENT }
        : fail("relation of a value");
    }
    if (parent.kind !== "record") return fail("relation of a non-record");
    const from = parent.ref;
    const table = this.#table(e.entity);
    if (e.kind === "back") {
      const field = table.column(e.field) ?? fail("no relation column");
      const many = table.fieldType(e.field) === "relation[]";
      return {
        kind: "records",
        list: {
          entity: e.entity,
          table,
          link: (alias) => {
            const id = from.column("id") ?? fail("no id column");
            return {
              sql: heldBy(`${alias}.${field}`, id, many, this.#d),
              params: [],
            };
          },
          guard: (alias) => this.#guard(e.entity, "list", alias),
        },
      };
    }
    if (e.kind === "many") {
      const list = from.column(e.field);
      if (list === undefined) return fail("no relation column");
      return {
        kind: "records",
        list: {
          entity: e.entity,
          table,
          link: (alias) => {
            // Inside the subquery: the row's own list, qualified.
            const ids = from.column(e.field) ?? fail("no relation column");
            return { sql: idIn(`${alias}."id"`, ids, this.#d), params: [] };
          },
          guard: (alias) => this.#guard(e.entity, "get", alias),
        },
      };
    }
    const probe = this.#guard(e.entity, "get", '"mb_probe"');
    if (probe === false) return { kind: "const", value: ABSENT };
    return {
      kind: "record",
      ref: {
        column: (name) => {
          const c = table.column(name);
          if (c === undefined) return undefined;
          const alias = this.#alias();
          return this.#within(() => {
            const fk = from.column(e.field) ?? fail("no relation column");
            return relatedColumn(
              table.table,
              alias,
              c,
              fk,
              this.#guard(e.entity, "get", alias),
            ) ?? fail("related column under a guard with parameters");
          });
        },
        fieldType: (name) => table.fieldType(name),
      },
    };
  }

  /** `list.some(p => body)` / `.every(…)`. */
  #quantifier(e: Extract<Expr, { type: "quantifier" }>): Compiled {
    const list = this.#node(e.object);
    const saved = this.#params.get(e.param);
    try {
      if (list.kind === "const") {
        // A list known now (`auth.user`'s records): one condition per record.
        if (!isPlainArray(list.value)) {
          return { kind: "const", value: undefined };
        }
        const items = list.value;
        if (items.length > 100) return fail("list too long");
        let cond: Cond = e.method === "every";
        for (let i = 0; i < items.length; i++) {
          this.#params.set(e.param, {
            kind: "const",
            value: getMember(items, String(i)),
          });
          const c = this.#exact(e.body);
          cond = e.method === "some" ? or(cond, c) : and(cond, c);
        }
        return boolean(cond);
      }
      if (list.kind !== "records") return fail("quantifier over a non-list");
      const alias = this.#alias();
      return this.#within(() => {
        this.#params.set(e.param, {
          kind: "record",
          ref: aliasRef(list.list.table, alias),
        });
        return boolean(
          quantified(e.method, list.list, alias, this.#exact(e.body)),
        );
      });
    } finally {
      if (saved === undefined) this.#params.delete(e.param);
      else this.#params.set(e.param, saved);
    }
  }

  /** The truthiness of `e`, exact (no unsure rows) or not compiled. */
  #exact(e: Expr): Cond {
    const c = this.compile(e);
    if (unsureOf(c) !== false) return fail("unsure inside a subquery");
    return truthyCond(c, this.#d);
  }

  /**
   * A condition (comparison, method, `!`) that reads the row only through
   * one forward relation (`record.project.owner == auth.id`) as `project IN
   * (SELECT id FROM projects WHERE owner = ?)`: the relation column's index
   * serves it. Undefined when it does not apply (compiled the plain way).
   */
  #lift(e: Expr): Compiled | undefined {
    if (!this.#relations) return undefined;
    const boolResult = (e.type === "binary" && isCompareOperator(e.operator)) ||
      (e.type === "unary" && e.operator === "!");
    if (!boolResult && e.type !== "method") return undefined;
    if (this.#ctx.table === undefined) return undefined;
    const anchors = new Map<string, RelationNode[]>();
    if (!this.#anchors(e, anchors) || anchors.size !== 1) return undefined;
    const nodes = [...anchors.values()][0];
    const r = nodes[0];
    const parent = this.#node(r.object);
    if (parent.kind !== "record") return undefined;
    const saved = nodes.map((n) => this.#subst.get(n));
    try {
      const table = this.#table(r.entity);
      const alias = this.#alias();
      const ref = aliasRef(table, alias);
      for (const n of nodes) this.#subst.set(n, { kind: "record", ref });
      const inner = this.#within(() => this.#exact(e));
      for (const n of nodes) {
        this.#subst.set(n, { kind: "const", value: ABSENT });
      }
      const absent = this.compile(e);
      if (absent.kind !== "const") return undefined;
      const fkOut = parent.ref.column(r.field);
      const fkIn = this.#within(() => parent.ref.column(r.field));
      if (fkOut === undefined || fkIn === undefined) return undefined;
      const cond = liftedCond({
        table: table.table,
        fkOut,
        fkIn,
        alias,
        absentAlias: this.#alias(),
        guard: (a) => this.#guard(r.entity, "get", a),
        inner,
        atAbsent: truthy(absent.value),
      });
      return boolResult ? boolean(cond) : { kind: "truthy", cond };
    } catch (err) {
      if (err instanceof NotCompilable) return undefined; // the plain way decides
      throw err;
    } finally {
      nodes.forEach((n, i) => {
        const s = saved[i];
        if (s === undefined) this.#subst.delete(n);
        else this.#subst.set(n, s);
      });
    }
  }

  /**
   * Collects the forward relations through which `e` reads the row, by the
   * path they start from; false when it reads the row some other way.
   */
  #anchors(e: Expr, out: Map<string, RelationNode[]>): boolean {
    const s = this.#subst.get(e);
    if (s !== undefined) return s.kind === "const";
    if (!this.#readsRow(e)) return true;
    switch (e.type) {
      case "relation": {
        if (e.kind === "forward") {
          const key = this.#baseKey(e.object);
          if (key !== undefined) {
            const k = `${key}>${e.key}`;
            const list = out.get(k) ?? [];
            list.push(e);
            out.set(k, list);
            return true;
          }
        }
        return this.#anchors(e.object, out);
      }
      case "member":
        return this.#anchors(e.object, out);
      case "unary":
      case "textFunction":
        return this.#anchors(e.argument, out);
      case "binary":
      case "logical":
        return this.#anchors(e.left, out) && this.#anchors(e.right, out);
      case "method":
        return this.#anchors(e.object, out) && this.#anchors(e.argument, out);
      default:
        return false;
    }
  }

  /** A name for the record a relation starts from, when it is a row of the query. */
  #baseKey(e: Expr): string | undefined {
    const s = this.#subst.get(e);
    if (s !== undefined) {
      if (s.kind !== "record") return undefined;
      let id = refIds.get(s.ref);
      if (id === undefined) refIds.set(s.ref, id = ++nextRef);
      return `s${id}`;
    }
    if (e.type === "root" && e.name === "record") return "r";
    if (e.type === "param") {
      const p = this.#params.get(e.name);
      if (p?.kind !== "record") return undefined;
      let id = refIds.get(p.ref);
      if (id === undefined) refIds.set(p.ref, id = ++nextRef);
      return `p${id}`;
    }
    return undefined;
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

  /** `x.toLowerCase()`, `x.toUpperCase()`, `fold(x)` where x reads the record. */
  textFunction(name: TextFunction, argumentExpr: Expr): Compiled {
    const a = this.compile(argumentExpr);
    if (a.kind === "const") {
      return { kind: "const", value: applyText(name, a.value) };
    }
    if (unsureOf(a) !== false) return fail("text function of an unsure value");
    if (a.kind === "column" && a.column.family === "text") {
      return {
        kind: "column",
        column: textFunctionColumn(name, a.column, this.#d),
      };
    }
    // Numbers, booleans (and NULL) are no strings: undefined.
    if (a.kind === "column" || a.kind === "bool") {
      return { kind: "const", value: undefined };
    }
    return fail(`text function of a ${a.kind} value`);
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
