/**
 * One member read resolved against the entities (`Shapes`), the step
 * `bindRelations` (`relations.ts`) takes at each `.`: a field of a record,
 * a relation crossed forward to the record it points at, a multiple
 * relation read as the list of its records (`.some`/`.every`), or a
 * back-relation (`<entity>_via_<field>`): with the bounds (at most
 * {@link MAX_HOPS} relations, an entity the reader may not read, a filter's
 * back-relation read again and again for one row) and, `strict`, the
 * refusals with their position.
 *
 * @module
 */

import type { Expr, RelationNode } from "./ast.ts";
import {
  type ShapeEntity,
  type ShapeField,
  type Shapes,
  unknownName,
} from "./names.ts";

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
export interface Reach {
  row: boolean;
  fans?: "of a related record" | "inside .some/.every";
}

/** What a bound sub-expression is. */
export type Value =
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

/** A value that is no record, list of records or field of one. */
export const OTHER: Value = { kind: "other" };

/** A bound sub-expression and what it is. */
export interface Bound {
  expr: Expr;
  value: Value;
}

/** What resolving a member read needs of the binder. */
export interface MemberReader {
  readonly shapes: Shapes;
  /** Refuse (a save, a caller's filter) rather than leave a plain read. */
  readonly strict: boolean;
  readonly what: "rule" | "filter";
  /** Throws the `RuleSyntaxError` of `detail` at `pos`. */
  fail(detail: string, pos: number, unknown?: string): never;
}

/**
 * The records the multiple relation field `v` (read as `expr`, a member
 * of the record holding it) points at, as a list (`.some`/`.every`), or
 * undefined when `v` is no multiple relation (or, lenient, cannot be read).
 */
export function manyRelation(
  b: MemberReader,
  expr: Expr,
  v: Extract<Value, { kind: "field" }>,
  pos: number,
): Bound | undefined {
  const f = v.field;
  if (f.type !== "relation" || !f.multiple || !f.target) return undefined;
  if (expr.type !== "member") return undefined;
  const target = b.shapes.entity(f.target);
  const hops = v.hops + 1;
  const problem = !target
    ? `${JSON.stringify(v.path)} reads ${f.target}, which does not exist`
    : hops > MAX_HOPS
    ? `${JSON.stringify(v.path)} reads through more than ${MAX_HOPS} relations`
    : target.refused !== undefined
    ? `${JSON.stringify(v.path)}: ${target.refused}`
    : undefined;
  if (problem !== undefined || !target) {
    if (b.strict) b.fail(problem ?? "", pos);
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
export function memberRead(
  b: MemberReader,
  object: Bound,
  property: string,
  pos: number,
): Bound {
  const v = object.value;
  const join = (path: string) => path === "" ? property : `${path}.${property}`;
  if (v.kind === "record") {
    return recordProperty(b, object.expr, v, property, pos);
  }
  if (v.kind === "field" && v.field.type === "relation" && v.field.target) {
    const plain = () => ({
      expr: memberExpr(object.expr, property, pos),
      value: OTHER,
    });
    const chars = property === "length" || /^[0-9]+$/.test(property);
    if (v.field.multiple) {
      // A list of ids: its length and items, as for any list.
      if (chars || !b.strict) return plain();
      b.fail(
        `${
          JSON.stringify(join(v.path))
        } reads nothing: ${v.path} is a multiple relation, a list of the related records' ids (.length, [index] and .includes(id) read into it; .some(r => …) and .every(r => …) read the records)`,
        pos,
        join(v.path),
      );
    }
    const target = b.shapes.entity(v.field.target);
    const readable = target !== undefined &&
      (target.field(property) !== undefined ||
        b.shapes.back(target, property) !== undefined);
    // The id's characters, as before relations were read.
    if (!readable && chars) return plain();
    if (!target) {
      if (b.strict) {
        b.fail(
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
      if (b.strict) {
        b.fail(
          `${
            JSON.stringify(join(v.path))
          } reads through more than ${MAX_HOPS} relations`,
          pos,
        );
      }
      return {
        expr: memberExpr(object.expr, property, pos),
        value: OTHER,
      };
    }
    if (target.refused !== undefined) {
      if (b.strict) {
        b.fail(
          `${JSON.stringify(join(v.path))}: ${target.refused}`,
          pos,
        );
      }
      return {
        expr: memberExpr(object.expr, property, pos),
        value: OTHER,
      };
    }
    const parent = object.expr.type === "member" ? object.expr : undefined;
    if (!parent) {
      return {
        expr: memberExpr(object.expr, property, pos),
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
    return recordProperty(
      b,
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
    if (property !== "length" && b.strict) {
      b.fail(
        `${v.path} is a list of records: read it with .length, .some(c => …) or .every(c => …)`,
        pos,
      );
    }
    return {
      expr: memberExpr(object.expr, property, pos),
      value: OTHER,
    };
  }
  return { expr: memberExpr(object.expr, property, pos), value: OTHER };
}

function memberExpr(object: Expr, property: string, pos: number): Expr {
  return { type: "member", pos, object, property };
}

/** `property` of a record of `v.entity`: a field, or a back-relation. */
function recordProperty(
  b: MemberReader,
  object: Expr,
  v: Extract<Value, { kind: "record" }>,
  property: string,
  pos: number,
): Bound {
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
  const back = b.shapes.back(v.entity, property);
  if (back) {
    const hops = v.hops + 1;
    if (hops > MAX_HOPS && b.strict) {
      b.fail(
        `${JSON.stringify(path)} reads through more than ${MAX_HOPS} relations`,
        pos,
      );
    }
    if (back.entity.refused !== undefined && b.strict) {
      b.fail(`${JSON.stringify(path)}: ${back.entity.refused}`, pos);
    }
    if (
      b.strict && b.what === "filter" && v.reach.fans !== undefined
    ) {
      // A caller's filter costs at most a read of each related record per
      // row: one back-relation read for many rows, or inside another
      // list's .some/.every, multiplies it (a few nested lists of a
      // thousand records each hold the database for hours).
      b.fail(
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
  if (b.strict && (v.hops > 0 || property.includes("_via_"))) {
    b.fail(
      unknownName(property, v.path, v.entity.fieldNames),
      pos,
      path.slice(0, 200),
    );
  }
  return { expr: { type: "member", pos, object, property }, value: OTHER };
}
