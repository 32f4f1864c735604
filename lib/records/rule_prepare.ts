/**
 * A custom rule or filter made ready for one request before it is decided:
 * parsed once per source (`ParseCache`), bound to the entities as they are
 * now when it may read through relations (a rule: every entity, it is the
 * admin's statement; a caller's filter: only what the caller could read),
 * the request copied as plain data when it reads `req`, and the caller's
 * related records (`auth.user.<relation>…`) loaded ahead of the evaluator.
 * Shared by the rules (`rule_engine.ts`) and the filters (`rule_filters.ts`).
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Expr } from "../rules/ast.ts";
import type { Related, RuleHelpers } from "../rules/evaluate.ts";
import { parseExpression, readsRequest } from "../rules/parser.ts";
import { bindRelations, type Shapes } from "../rules/relations.ts";
import { mayCrossRelations } from "../rules/relation_paths.ts";
import type { RecordData } from "./codec.ts";
import { readsRelations, RelationLoader } from "./rule_relations.ts";
import { shapesOf, type ShapeSource } from "./rule_shapes.ts";
import type { CallerView, RuleRequest, RuleTarget } from "./rule_types.ts";

const MAX_CACHE = 2000;

/** Parsed expressions by key (at most {@link MAX_CACHE}, then anew). */
export class ParseCache {
  readonly #cache = new Map<string, Expr>();
  /** The helpers rules may call (their names are known to the parser). */
  readonly helpers: RuleHelpers;

  constructor(helpers: RuleHelpers) {
    this.helpers = helpers;
  }

  /** `source` parsed in `mode`, once per `key`; `fields`: the names it may read. */
  parse(
    key: string,
    source: string,
    mode: "rule" | "filter",
    fields?: () => ReadonlySet<string>,
  ): Expr {
    let ast = this.#cache.get(key);
    if (!ast) {
      ast = parseExpression(source, {
        mode,
        fields: fields?.(),
        helpers: new Set(this.helpers.keys()),
      });
      if (this.#cache.size >= MAX_CACHE) this.#cache.clear();
      this.#cache.set(key, ast);
    }
    return ast;
  }

  /** A rule's source parsed (throws a `RuleSyntaxError`). */
  readonly parseRule = (expr: string): Expr =>
    this.parse(`r\0${expr}`, expr, "rule");
}

/** The request of a decision without one (and of expressions not reading it). */
export const NO_REQUEST: RuleRequest = Object.freeze({
  body: {},
  query: {},
  method: "",
});
const readsReq = new WeakMap<Expr, boolean>();

/**
 * A plain-data copy of the request (accessors resolved: rules only read data
 * properties); nothing is copied for an expression that never reads `req`.
 */
export function plainRequest(ast: Expr, req: RuleRequest): RuleRequest {
  let reads = readsReq.get(ast);
  if (reads === undefined) readsReq.set(ast, reads = readsRequest(ast));
  return reads
    ? { body: req.body, query: req.query, method: req.method }
    : NO_REQUEST;
}

/** Both loaders' records: the row's relations, then the caller's. */
export function either(a: Related, b: Related | undefined): Related {
  return b ? { get: (p, n) => a.get(p, n) ?? b.get(p, n) } : a;
}

/** The caller's auth entity, when it has one. */
export function userEntity(
  entity: RuleTarget,
  auth: AuthValue,
): RuleTarget | undefined {
  return auth.type === "user" ? entity.lookup(auth.entity) : undefined;
}

/** The shapes a rule of `entity` reads (every entity: the admin's statement). */
function ruleShapes(entity: RuleTarget, auth: AuthValue): Shapes {
  const user = userEntity(entity, auth);
  return shapesOf({
    find: (n) => entity.lookup(n),
    record: entity,
    user: user ? [user] : [],
  });
}

/** The shapes a caller's filter reads: only entities it could read itself. */
export function filterShapes(
  entity: RuleTarget,
  auth: AuthValue,
  view: CallerView | undefined,
): Shapes {
  const user = userEntity(entity, auth);
  const find = (n: string) => entity.lookup(n);
  if (!view) {
    return shapesOf({ find, record: entity, user: user ? [user] : [] });
  }
  const decide = (e: ShapeSource, op: "get" | "list") => {
    const t = entity.lookup(e.name);
    return t ? view.decide(t, op).kind : "none";
  };
  return shapesOf({
    find,
    record: entity,
    user: user ? [user] : [],
    refusal: (e) =>
      decide(e, "get") === "none"
        ? `${e.name} records are not yours to read`
        : undefined,
    visible: (e) => decide(e, "list") !== "none",
  });
}

/** `ast` bound for a rule of `entity` (itself when it reads no relation). */
export function bindRule(ast: Expr, entity: RuleTarget, auth: AuthValue): Expr {
  return mayCrossRelations(ast)
    ? bindRelations(ast, ruleShapes(entity, auth))
    : ast;
}

/** The caller's related records a bound expression reads (`auth.user.<relation>…`). */
export async function userRelated(
  bound: Expr,
  entity: RuleTarget,
  auth: AuthValue,
  view?: CallerView,
): Promise<RelationLoader | undefined> {
  const user = userEntity(entity, auth);
  if (!user || !auth.user || !readsRelations(bound, "user")) return undefined;
  const loader = new RelationLoader(
    entity.reads,
    view && ((e, op) => view.access(e, op)),
  );
  await loader.load(bound, "user", user, [auth.user as RecordData]);
  return loader;
}
