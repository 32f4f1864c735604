/**
 * Reads through relations: `record.project.owner` (the record the relation
 * field `project` points at, then its `owner`), `record.comments_via_post`
 * (the records of `comments` whose relation `post` points at this one: a
 * list, read by `.length`, `.some(c => …)`, `.every(c => …)`), the same from
 * `auth.user` and from a quantifier's parameter, at most {@link MAX_HOPS}
 * relations deep. The parser knows no entities: {@link bindRelations} turns
 * the member reads that cross a relation into `relation` nodes by the
 * entities as they are now, for the evaluator and the SQL compiler, and (at
 * a schema save, `strict`) refuses a name the related entity does not have,
 * with its position and the closest name.
 *
 * @module
 */

import { type Expr, type RelationNode, RuleSyntaxError } from "./ast.ts";
import {
  type ShapeEntity,
  type ShapeField,
  type Shapes,
  unknownName,
} from "./names.ts";

export type { ShapeEntity, ShapeField, Shapes } from "./names.ts";

/** Relations one path may cross (`record.a.b.c.d.e.f.<field>`). */
export const MAX_HOPS = 6;

/**
 * Where a record (or list) was reached from, for the cost bound of filters:
 * `row` when it depends on the filtered row (not on `auth.user` alone, read
 * once per request); `fans` when a back-relation read from it would be read
 * again and again for one row — after a forward relation of the row (many
 * rows share the record it points at), or from the row or `auth.user` inside
 * a `.some`/`.every` (once per item of the list).
 */
interface Reach {
  row: boolean;
  fans?: "of a related record" | "inside .some/.every";
}

/** What a bound sub-expression is. */
type Value =
  | {
    kind: "record";
    entity: ShapeEntity;
    hops: number;
    path: string;
    reach: Reach;
  }
  | {
    kind: "records";
    entity: ShapeEntity;
    hops: number;
    path: string;
    reach: Reach;
  }
  | {
    kind: "field";
    field: ShapeField;
    parent: Expr;
    hops: number;
    path: string;
    reach: Reach;
  }
  | { kind: "other" };

const OTHER: Value = { kind: "other" };

/**
 * `expr` with its reads through relations as `relation` nodes. Lenient by
 * default (a stored rule is served as saved: a name that does not resolve
 * stays a plain member read); `strict` (a schema save, a caller's filter)
 * throws a {@link RuleSyntaxError} for a name a related entity does not
 * have, a list of records used as anything but `.length`, `.some`,
 * `.every`, a path deeper than {@link MAX_HOPS}, or an entity the reader
 * may not read. `what` names the expression in messages (`rule`,
 * `filter`). In filter mode the bare names become `record.<name>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { bindRelations, type ShapeEntity } from "moonbase/lib/rules/relations.ts";
 * const entity = (name: string, fields: Record<string, string>, target?: string): ShapeEntity => ({
 *   name,
 *   fieldNames: Object.keys(fields),
 *   field: (n) => Object.hasOwn(fields, n) ? { type: fields[n], target } : undefined,
 * });
 * const tasks = entity("tasks", { id: "string", project: "relation" }, "projects");
 * const projects = entity("projects", { id: "string", owner: "string" });
 * const shapes = {
 *   record: tasks,
 *   entity: (n: string) => n === "projects" ? projects : undefined,
 *   back: () => undefined,
 * };
 * const e = bindRelations(parseExpression("record.project.owner == 'u'", { mode: "rule" }), shapes);
 * assert.ok(e.type === "binary" && e.left.type === "member" && e.left.object.type === "relation");
 * assert.throws(
 *   () => bindRelations(parseExpression("record.project.ownr == 'u'", { mode: "rule" }), shapes, { strict: true }),
 *   /unknown name "record.project.ownr" \(did you mean "record.project.owner"\?\) at 15/,
 * );
 * ```
 */
export function bindRelations(
  expr: Expr,
  shapes: Shapes,
  options: { strict?: boolean; what?: "rule" | "filter" } = {},
): Expr {
  return new Binder(shapes, options.strict ?? false, options.what ?? "rule")
    .bind(expr, new Map()).expr;
}

/**
 * True when `expr` may read through a relation (a member of a member, or a
 * quantifier): only those are worth binding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { mayCrossRelations } from "moonbase/lib/rules/relations.ts";
 * assert.equal(mayCrossRelations(parseExpression("record.a == auth.id", { mode: "rule" })), false);
 * assert.equal(mayCrossRelations(parseExpression("record.a.b == 1", { mode: "rule" })), true);
 * ```
 */
export function mayCrossRelations(expr: Expr): boolean {
  let cached = crossing.get(expr);
  if (cached === undefined) crossing.set(expr, cached = crosses(expr));
  return cached;
}

const crossing = new WeakMap<Expr, boolean>();

function crosses(e: Expr): boolean {
  switch (e.type) {
    case "member": {
      const o = e.object;
      if (e.property.includes("_via_")) return true;
      if (o.type === "field" || o.type === "param") return true;
      // `record.a.b`, `auth.user.a.b`: a member of a member below a root.
      if (o.type === "member" && o.object.type !== "root") return true;
      if (
        o.type === "member" && o.object.type === "root" &&
        o.object.name === "record"
      ) return true;
      return crosses(o);
    }
    case "relation":
    case "quantifier":
      return true;
    case "unary":
    case "textFunction":
      return crosses(e.argument);
    case "binary":
    case "logical":
      return crosses(e.left) || crosses(e.right);
    case "method":
      return crosses(e.object) || crosses(e.argument);
    case "call":
      return e.args.some(crosses);
    default:
      return false;
  }
}

/**
 * True when `expr` holds a `relation` node.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { hasRelations } from "moonbase/lib/rules/relations.ts";
 * assert.equal(hasRelations(parseExpression("record.a.b == 1", { mode: "rule" })), false);
 * ```
 */
export function hasRelations(expr: Expr): boolean {
  let known = holding.get(expr);
  if (known === undefined) holding.set(expr, known = holds(expr));
  return known;
}

const holding = new WeakMap<Expr, boolean>();

function holds(expr: Expr): boolean {
  switch (expr.type) {
    case "relation":
      return true;
    case "member":
      return hasRelations(expr.object);
    case "quantifier":
      return hasRelations(expr.object) || hasRelations(expr.body);
    case "unary":
    case "textFunction":
      return hasRelations(expr.argument);
    case "binary":
    case "logical":
      return hasRelations(expr.left) || hasRelations(expr.right);
    case "method":
      return hasRelations(expr.object) || hasRelations(expr.argument);
    case "call":
      return expr.args.some(hasRelations);
    default:
      return false;
  }
}

/**
 * The `relation` nodes of `expr`, outermost first, each with the path of
 * relation keys it ends (`["project", "owner"]`) and where it starts:
 * `record`, `user` (`auth.user`), or elsewhere (a helper's answer…:
 * nothing to load).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relationPaths } from "moonbase/lib/rules/relations.ts";
 * assert.deepEqual(relationPaths({ type: "literal", pos: 0, value: 1 }), []);
 * ```
 */
export function relationPaths(
  expr: Expr,
): { node: RelationNode; root: "record" | "user"; path: RelationNode[] }[] {
  const out: {
    node: RelationNode;
    root: "record" | "user";
    path: RelationNode[];
  }[] = [];
  const visit = (
    e: Expr,
    params: ReadonlyMap<
      string,
      { root: "record" | "user"; path: RelationNode[] }
    >,
  ): void => {
    switch (e.type) {
      case "relation": {
        visit(e.object, params);
        const from = startOf(e.object, params);
        if (from) {
          out.push({
            node: e,
            root: from.root,
            path: [...from.path, e],
          });
        }
        return;
      }
      case "quantifier": {
        visit(e.object, params);
        const inner = new Map(params);
        const list = e.object.type === "relation"
          ? startOf(e.object.object, params)
          : undefined;
        if (list && e.object.type === "relation") {
          inner.set(e.param, {
            root: list.root,
            path: [...list.path, e.object],
          });
        } else inner.delete(e.param);
        return visit(e.body, inner);
      }
      case "member":
        return visit(e.object, params);
      case "unary":
      case "textFunction":
        return visit(e.argument, params);
      case "binary":
      case "logical":
        visit(e.left, params);
        return visit(e.right, params);
      case "method":
        visit(e.object, params);
        return visit(e.argument, params);
      case "call":
        return e.args.forEach((a) => visit(a, params));
      default:
        return;
    }
  };
  visit(expr, new Map());
  return out;
}

/** Where the record `e` evaluates to comes from, as a path of relations. */
function startOf(
  e: Expr,
  params: ReadonlyMap<
    string,
    { root: "record" | "user"; path: RelationNode[] }
  >,
): { root: "record" | "user"; path: RelationNode[] } | undefined {
  if (e.type === "root" && e.name === "record") {
    return { root: "record", path: [] };
  }
  if (
    e.type === "member" && e.property === "user" && e.object.type === "root" &&
    e.object.name === "auth"
  ) return { root: "user", path: [] };
  if (e.type === "param") return params.get(e.name);
  if (e.type === "relation" && e.kind === "forward") {
    const from = startOf(e.object, params);
    return from && { root: from.root, path: [...from.path, e] };
  }
  return undefined;
}

class Binder {
  readonly #shapes: Shapes;
  readonly #strict: boolean;
  readonly #what: "rule" | "filter";
  /** The `.some`/`.every` bodies around the current position. */
  #lambdas = 0;

  constructor(shapes: Shapes, strict: boolean, what: "rule" | "filter") {
    this.#shapes = shapes;
    this.#strict = strict;
    this.#what = what;
  }

  #fail(detail: string, pos: number, unknown?: string): never {
    throw new RuleSyntaxError(detail, pos, this.#what, unknown);
  }

  /** The record root (`record` in rules, the bare names' record in filters). */
  #recordRoot(pos: number): { expr: Expr; value: Value } {
    const entity = this.#shapes.record;
    const expr: Expr = { type: "root", pos, name: "record" };
    return {
      expr,
      value: entity
        ? {
          kind: "record",
          entity,
          hops: 0,
          path: this.#rootPath(),
          reach: this.#reach(true),
        }
        : OTHER,
    };
  }

  /** A root's reach: inside a lambda, once per item of its list. */
  #reach(row: boolean): Reach {
    return this.#lambdas > 0 ? { row, fans: "inside .some/.every" } : { row };
  }

  #rootPath(): string {
    return this.#what === "filter" ? "" : "record";
  }

  bind(
    e: Expr,
    params: ReadonlyMap<string, Value>,
  ): { expr: Expr; value: Value } {
    switch (e.type) {
      case "literal":
        return { expr: e, value: OTHER };
      case "root":
        return e.name === "record"
          ? this.#recordRoot(e.pos)
          : { expr: e, value: OTHER };
      case "field": {
        // Filters: a bare name is a member of the record.
        const root = this.#recordRoot(e.pos);
        return this.#member(root, e.name, e.pos);
      }
      case "param":
        return { expr: e, value: params.get(e.name) ?? OTHER };
      case "member": {
        if (
          e.object.type === "root" && e.object.name === "auth" &&
          e.property === "user"
        ) {
          const entity = this.#shapes.user;
          return {
            expr: e,
            value: entity
              ? {
                kind: "record",
                entity,
                hops: 0,
                path: "auth.user",
                reach: this.#reach(false),
              }
              : OTHER,
          };
        }
        return this.#member(this.bind(e.object, params), e.property, e.pos);
      }
      case "relation":
        return { expr: e, value: OTHER };
      case "unary":
      case "textFunction":
        return {
          expr: {
            ...e,
            argument: this.#plain(this.bind(e.argument, params), e.pos),
          },
          value: OTHER,
        };
      case "binary":
      case "logical":
        return {
          expr: {
            ...e,
            left: this.#plain(this.bind(e.left, params), e.left.pos),
            right: this.#plain(this.bind(e.right, params), e.right.pos),
          },
          value: OTHER,
        };
      case "method":
        return {
          expr: {
            ...e,
            object: this.#plain(this.bind(e.object, params), e.pos),
            argument: this.#plain(
              this.bind(e.argument, params),
              e.argument.pos,
            ),
          },
          value: OTHER,
        };
      case "call":
        return {
          expr: {
            ...e,
            args: e.args.map((a) => this.#plain(this.bind(a, params), a.pos)),
          },
          value: OTHER,
        };
      case "quantifier":
        return this.#quantifier(e, params);
    }
  }

  /** A bound value used as a plain value: a list of records is refused. */
  #plain(b: { expr: Expr; value: Value }, pos: number): Expr {
    if (this.#strict && b.value.kind === "records") {
      this.#fail(
        `${b.value.path} is a list of records: read it with .length, .some(c => …) or .every(c => …)`,
        pos,
      );
    }
    return b.expr;
  }

  #quantifier(
    e: Extract<Expr, { type: "quantifier" }>,
    params: ReadonlyMap<string, Value>,
  ): { expr: Expr; value: Value } {
    let object = this.bind(e.object, params);
    if (object.value.kind === "field") {
      // A multiple relation: the records its ids point at.
      object = this.#many(object.expr, object.value, e.pos) ?? object;
    }
    const inner = new Map(params);
    if (object.value.kind === "records") {
      inner.set(e.param, {
        kind: "record",
        entity: object.value.entity,
        hops: object.value.hops,
        path: e.param,
        reach: object.value.reach,
      });
    } else {
      if (this.#strict) {
        this.#fail(
          `${e.method}() reads a list of records: a back-relation (<entity>_via_<field>) or a multiple relation`,
          e.pos,
        );
      }
      inner.delete(e.param);
    }
    this.#lambdas++;
    let body: { expr: Expr; value: Value };
    try {
      body = this.bind(e.body, inner);
    } finally {
      this.#lambdas--;
    }
    return {
      expr: { ...e, object: object.expr, body: this.#plain(body, e.body.pos) },
      value: OTHER,
    };
  }

  /**
   * The records the multiple relation field `v` (read as `expr`, a member
   * of the record holding it) points at, as a list (`.some`/`.every`), or
   * undefined when `v` is no multiple relation (or, lenient, cannot be read).
   */
  #many(
    expr: Expr,
    v: Extract<Value, { kind: "field" }>,
    pos: number,
  ): { expr: Expr; value: Value } | undefined {
    const f = v.field;
    if (f.type !== "relation" || !f.multiple || !f.target) return undefined;
    if (expr.type !== "member") return undefined;
    const target = this.#shapes.entity(f.target);
    const hops = v.hops + 1;
    const problem = !target
      ? `${JSON.stringify(v.path)} reads ${f.target}, which does not exist`
      : hops > MAX_HOPS
      ? `${
        JSON.stringify(v.path)
      } reads through more than ${MAX_HOPS} relations`
      : target.refused !== undefined
      ? `${JSON.stringify(v.path)}: ${target.refused}`
      : undefined;
    if (problem !== undefined || !target) {
      if (this.#strict) this.#fail(problem ?? "", pos);
      return undefined;
    }
    const node: RelationNode = {
      type: "relation",
      pos: expr.pos,
      object: expr.object,
      key: expr.property,
      kind: "many",
      entity: target.name,
      field: expr.property,
    };
    return {
      expr: node,
      value: {
        kind: "records",
        entity: target,
        hops,
        path: v.path,
        // Many rows may hold one id: a back-relation from its record repeats.
        reach: {
          row: v.reach.row,
          fans: v.reach.fans ??
            (v.reach.row ? "of a related record" : undefined),
        },
      },
    };
  }

  /** `object.property`, crossing a relation when it reads into one. */
  #member(
    object: { expr: Expr; value: Value },
    property: string,
    pos: number,
  ): { expr: Expr; value: Value } {
    const v = object.value;
    const join = (path: string) =>
      path === "" ? property : `${path}.${property}`;
    if (v.kind === "record") return this.#read(object.expr, v, property, pos);
    if (v.kind === "field" && v.field.type === "relation" && v.field.target) {
      const plain = () => ({
        expr: this.#memberExpr(object.expr, property, pos),
        value: OTHER,
      });
      const chars = property === "length" || /^[0-9]+$/.test(property);
      if (v.field.multiple) {
        // A list of ids: its length and items, as for any list.
        if (chars || !this.#strict) return plain();
        this.#fail(
          `${
            JSON.stringify(join(v.path))
          } reads nothing: ${v.path} is a multiple relation, a list of the related records' ids (.length, [index] and .includes(id) read into it; .some(r => …) and .every(r => …) read the records)`,
          pos,
          join(v.path),
        );
      }
      const target = this.#shapes.entity(v.field.target);
      const readable = target !== undefined &&
        (target.field(property) !== undefined ||
          this.#shapes.back(target, property) !== undefined);
      // The id's characters, as before relations were read.
      if (!readable && chars) return plain();
      if (!target) {
        if (this.#strict) {
          this.#fail(
            `${
              JSON.stringify(join(v.path))
            } reads ${v.field.target}, which does not exist`,
            pos,
            join(v.path),
          );
        }
        return plain();
      }
      const hops = v.hops + 1;
      if (hops > MAX_HOPS) {
        if (this.#strict) {
          this.#fail(
            `${
              JSON.stringify(join(v.path))
            } reads through more than ${MAX_HOPS} relations`,
            pos,
          );
        }
        return {
          expr: this.#memberExpr(object.expr, property, pos),
          value: OTHER,
        };
      }
      if (target.refused !== undefined) {
        if (this.#strict) {
          this.#fail(
            `${JSON.stringify(join(v.path))}: ${target.refused}`,
            pos,
          );
        }
        return {
          expr: this.#memberExpr(object.expr, property, pos),
          value: OTHER,
        };
      }
      const parent = object.expr.type === "member" ? object.expr : undefined;
      if (!parent) {
        return {
          expr: this.#memberExpr(object.expr, property, pos),
          value: OTHER,
        };
      }
      const relation: RelationNode = {
        type: "relation",
        pos: parent.pos,
        object: parent.object,
        key: parent.property,
        kind: "forward",
        entity: target.name,
        field: parent.property,
      };
      return this.#read(
        relation,
        {
          kind: "record",
          entity: target,
          hops,
          path: v.path,
          // Many rows may point at one record: a back-relation from it repeats.
          reach: {
            row: v.reach.row,
            fans: v.reach.fans ??
              (v.reach.row ? "of a related record" : undefined),
          },
        },
        property,
        pos,
      );
    }
    if (v.kind === "records") {
      if (property !== "length" && this.#strict) {
        this.#fail(
          `${v.path} is a list of records: read it with .length, .some(c => …) or .every(c => …)`,
          pos,
        );
      }
      return {
        expr: this.#memberExpr(object.expr, property, pos),
        value: OTHER,
      };
    }
    return { expr: this.#memberExpr(object.expr, property, pos), value: OTHER };
  }

  #memberExpr(object: Expr, property: string, pos: number): Expr {
    return { type: "member", pos, object, property };
  }

  /** `property` of a record of `v.entity`: a field, or a back-relation. */
  #read(
    object: Expr,
    v: Extract<Value, { kind: "record" }>,
    property: string,
    pos: number,
  ): { expr: Expr; value: Value } {
    const path = v.path === "" ? property : `${v.path}.${property}`;
    const field = v.entity.field(property);
    if (field) {
      return {
        expr: { type: "member", pos, object, property },
        value: {
          kind: "field",
          field,
          parent: object,
          hops: v.hops,
          path,
          reach: v.reach,
        },
      };
    }
    const back = this.#shapes.back(v.entity, property);
    if (back) {
      const hops = v.hops + 1;
      if (hops > MAX_HOPS && this.#strict) {
        this.#fail(
          `${
            JSON.stringify(path)
          } reads through more than ${MAX_HOPS} relations`,
          pos,
        );
      }
      if (back.entity.refused !== undefined && this.#strict) {
        this.#fail(`${JSON.stringify(path)}: ${back.entity.refused}`, pos);
      }
      if (
        this.#strict && this.#what === "filter" && v.reach.fans !== undefined
      ) {
        // A caller's filter costs at most a read of each related record per
        // row: one back-relation read for many rows, or inside another
        // list's .some/.every, multiplies it (a few nested lists of a
        // thousand records each hold the database for hours).
        this.#fail(
          `${
            JSON.stringify(path)
          } reads a back-relation ${v.reach.fans}: a filter reads back-relations only of the record, of auth.user, and of the records of those lists (c => c.<entity>_via_<field>)`,
          pos,
        );
      }
      if (hops <= MAX_HOPS && back.entity.refused === undefined) {
        const node: RelationNode = {
          type: "relation",
          pos,
          object,
          key: property,
          kind: "back",
          entity: back.entity.name,
          field: back.field,
        };
        return {
          expr: node,
          value: {
            kind: "records",
            entity: back.entity,
            hops,
            path,
            reach: v.reach,
          },
        };
      }
    }
    // The first level was checked by the parser (the names given it); a
    // related record's names are checked here, and a back-relation that
    // does not resolve (for this reader) anywhere.
    if (this.#strict && (v.hops > 0 || property.includes("_via_"))) {
      this.#fail(
        unknownName(property, v.path, v.entity.fieldNames),
        pos,
        path.slice(0, 200),
      );
    }
    return { expr: { type: "member", pos, object, property }, value: OTHER };
  }
}
