/**
 * What an expression reads through relations, asked of it as it is: whether
 * it may cross a relation at all (only those are worth binding,
 * `relations.ts` `bindRelations`), whether a bound one holds `relation`
 * nodes, and the paths of relations it reads from `record` and `auth.user`
 * (what a loader reads ahead, `lib/records/rule_relations.ts`).
 *
 * @module
 */

import type { Expr, RelationNode } from "./ast.ts";

/**
 * True when `expr` may read through a relation (a member of a member, or a
 * quantifier): only those are worth binding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { mayCrossRelations } from "moonbase/lib/rules/relation_paths.ts";
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
 * import { hasRelations } from "moonbase/lib/rules/relation_paths.ts";
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
 * import { relationPaths } from "moonbase/lib/rules/relation_paths.ts";
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
