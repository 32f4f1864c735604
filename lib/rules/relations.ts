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
 * Here the walk over the expression (roots, quantifiers and their
 * parameters); each member read is resolved in `relation_member.ts`; what an
 * expression reads through relations, asked without binding, is
 * `relation_paths.ts`.
 *
 * @module
 */

import { type Expr, RuleSyntaxError } from "./ast.ts";
import type { Shapes } from "./names.ts";
import {
  type Bound,
  manyRelation,
  memberRead,
  type MemberReader,
  OTHER,
  type Reach,
  type Value,
} from "./relation_member.ts";

export type { ShapeEntity, ShapeField, Shapes } from "./names.ts";
export { MAX_HOPS } from "./relation_member.ts";

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
 * The walk of one expression: roots, parameters and quantifiers here, each
 * member read resolved by `memberRead` (`relation_member.ts`).
 */
class Binder {
  readonly #shapes: Shapes;
  readonly #strict: boolean;
  readonly #what: "rule" | "filter";
  readonly #reader: MemberReader;
  /** The `.some`/`.every` bodies around the current position. */
  #lambdas = 0;

  constructor(shapes: Shapes, strict: boolean, what: "rule" | "filter") {
    this.#shapes = shapes;
    this.#strict = strict;
    this.#what = what;
    this.#reader = {
      shapes,
      strict,
      what,
      fail: (detail, pos, unknown) => this.#fail(detail, pos, unknown),
    };
  }

  #fail(detail: string, pos: number, unknown?: string): never {
    throw new RuleSyntaxError(detail, pos, this.#what, unknown);
  }

  /** The record root (`record` in rules, the bare names' record in filters). */
  #recordRoot(pos: number): Bound {
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
  ): Bound {
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
        return memberRead(this.#reader, root, e.name, e.pos);
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
        return memberRead(
          this.#reader,
          this.bind(e.object, params),
          e.property,
          e.pos,
        );
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
  #plain(b: Bound, pos: number): Expr {
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
  ): Bound {
    let object = this.bind(e.object, params);
    if (object.value.kind === "field") {
      // A multiple relation: the records its ids point at.
      object = manyRelation(this.#reader, object.expr, object.value, e.pos) ??
        object;
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
    let body: Bound;
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
}
