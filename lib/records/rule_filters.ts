/**
 * A caller's list parameters that are expressions: the `filter` (bare field
 * names and `auth.*`) compiled to SQL, to a prefilter and per-row checks, or
 * (under a per-row rule) to per-row checks only; through relations, each
 * related record only as the caller could read it (`CallerView`: the related
 * entity's rule compiled into the subquery, `rule_sql.ts` `guardsOf`, or
 * applied to each related record read); and a sort key through relations
 * (`guardedSortVia`). Called by `ExpressionRules` (`rule_engine.ts`).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Queryable, SqlValue } from "../db/storage.ts";
import type { AuthValue } from "../caller.ts";
import type { Expr } from "../rules/ast.ts";
import { RuleSyntaxError } from "../rules/ast.ts";
import { isClosed } from "../rules/walk.ts";
import { type Related, test } from "../rules/evaluate.ts";
import { compilePrefilter, compileToSql } from "../rules/to_sql.ts";
import { bindRelations } from "../rules/relations.ts";
import {
  hasRelations,
  mayCrossRelations,
  relationPaths,
} from "../rules/relation_paths.ts";
import type { RecordData } from "./codec.ts";
import type { Access } from "./caller_access.ts";
import type {
  CallerView,
  RuleRequest,
  RuleTarget,
  SortVia,
} from "./rule_types.ts";
import { NameSet } from "./rule_shapes.ts";
import { RelationLoader } from "./rule_relations.ts";
import { guardsOf, sortViaOf, sqlContextOf } from "./rule_sql.ts";
import {
  bindRule,
  either,
  filterShapes,
  type ParseCache,
  plainRequest,
  userRelated,
} from "./rule_prepare.ts";

/**
 * A number per entity object: the registry builds a new one for each schema
 * version, so a parsed filter (and its kept SQL) never outlives its version
 * even when two versions share an `updated` time (one millisecond, a clock
 * stepped back).
 */
const targets = new WeakMap<RuleTarget, number>();
let nextTarget = 0;
function targetOf(entity: RuleTarget): number {
  let n = targets.get(entity);
  if (n === undefined) targets.set(entity, n = ++nextTarget);
  return n;
}
/**
 * The SQL of filters that read the record alone (`isClosed`), by their parsed
 * expression (parsed per entity and schema version, so one entity's); null:
 * not compiled exactly.
 */
const closedSql = new WeakMap<
  Expr,
  { sql: string; params: unknown[] } | null
>();

/**
 * The `Access` of the `filter` list parameter (bare field names and `auth.*`);
 * `perRow`: never compiled to SQL (see `RuleEngine.filter`).
 */
export async function filterAccess(
  parsed: ParseCache,
  entity: RuleTarget,
  source: string,
  auth: AuthValue,
  req: RuleRequest,
  perRow = false,
  view?: CallerView,
): Promise<Access> {
  if (source.length > 4096) {
    throw new MoonbaseError(
      "invalid",
      "Cannot list records: filter is too long",
    );
  }
  // The names only when the filter is not parsed yet.
  const fields = () => {
    const readable = entity.fields.map((f) => f.name).filter((n) =>
      n !== "password"
    );
    const shapes = filterShapes(entity, auth, view);
    return new NameSet(
      readable,
      (n) =>
        n.includes("_via_") && shapes.record !== undefined &&
        !!shapes.back(shapes.record, n),
    );
  };
  let ast: Expr;
  try {
    ast = parsed.parse(
      `f\0${targetOf(entity)}\0${entity.updated}\0${source}`,
      source,
      "filter",
      fields,
    );
    if (mayCrossRelations(ast)) {
      const bound = bindRelations(
        ast,
        filterShapes(entity, auth, view),
        { strict: true, what: "filter" },
      );
      if (hasRelations(bound)) {
        return await relationFilter(
          parsed,
          bound,
          entity,
          auth,
          req,
          perRow,
          view,
        );
      }
    }
  } catch (err) {
    // Its message says it all ("Cannot parse filter: … at 6").
    if (err instanceof RuleSyntaxError) {
      throw new MoonbaseError("invalid", err.message);
    }
    throw err;
  }
  const known = perRow ? undefined : closedSql.get(ast);
  if (known) {
    return {
      where: { sql: known.sql, params: [...known.params] as SqlValue[] },
    };
  }
  req = plainRequest(ast, req);
  const ctx = perRow
    ? undefined
    : sqlContextOf(entity, auth, req, parsed.helpers);
  const compiled = ctx && compileToSql(ast, ctx);
  if (ctx && known === undefined && isClosed(ast)) {
    closedSql.set(
      ast,
      compiled ? { sql: compiled.sql, params: [...compiled.params] } : null,
    );
  }
  if (compiled) {
    return {
      where: { sql: compiled.sql, params: compiled.params as SqlValue[] },
    };
  }
  // A superset in SQL (rows the filter may accept), checked per row.
  const pre = ctx && compilePrefilter(ast, ctx);
  return {
    ...(pre && {
      where: { sql: pre.sql, params: pre.params as SqlValue[] },
    }),
    keep: (record) => {
      try {
        return test(ast, { ...record, auth }, parsed.helpers);
      } catch {
        // `test` answers false on an evaluation error already; a row that
        // cannot even be read as a scope does not match either.
        return false;
      }
    },
  };
}

/**
 * The caller's related records that the rules of the entities a filter
 * reads through read (`auth.user.<relation>…` in those rules), loaded as
 * a rule reads them: whatever their own rules say. Never the filter's own
 * (`userRelated` with the caller's view): there a record hidden from the
 * caller reads as absent, and a rule such as `auth.user.team.level !=
 * "restricted"` would then let through a caller it refuses.
 */
async function guardUsers(
  parsed: ParseCache,
  bound: Expr,
  entity: RuleTarget,
  auth: AuthValue,
  view: CallerView,
): Promise<Related | undefined> {
  if (auth.type !== "user" || !auth.user) return undefined;
  let related: Related | undefined;
  const seen = new Set<string>();
  for (const { node, root } of relationPaths(bound)) {
    if (root !== "record") continue;
    const op = node.kind === "forward" ? "get" : "list";
    const target = entity.lookup(node.entity);
    const key = `${node.entity.toLowerCase()}\0${op}`;
    if (!target || target.type === "view" || seen.has(key)) continue;
    seen.add(key);
    const d = view.decide(target, op);
    if (d.kind !== "rule") continue;
    let ast: Expr;
    try {
      ast = bindRule(parsed.parseRule(d.expr), target, auth);
    } catch {
      continue; // the guard fails the same way: checked per row, denied
    }
    const loaded = await userRelated(ast, target, auth);
    if (loaded) related = either(loaded, related);
  }
  return related;
}

/**
 * A filter reading through relations (bound: its bare names read as
 * `record.<name>`), each related record only as the caller could read it.
 */
async function relationFilter(
  parsed: ParseCache,
  bound: Expr,
  entity: RuleTarget,
  auth: AuthValue,
  req: RuleRequest,
  perRow: boolean,
  view: CallerView | undefined,
): Promise<Access> {
  req = plainRequest(bound, req);
  const reader = view &&
    ((e: RuleTarget, op: "get" | "list") => view.access(e, op));
  const users = await userRelated(bound, entity, auth, view);
  const loaders = new WeakMap<Queryable, RelationLoader>();
  const keep = async (record: RecordData, tx?: Queryable) => {
    const db = tx ?? entity.reads;
    let loader = loaders.get(db);
    if (!loader) loaders.set(db, loader = new RelationLoader(db, reader));
    await loader.load(bound, "record", entity, [record]);
    try {
      return test(
        bound,
        { auth, req, record },
        parsed.helpers,
        either(loader, users),
      );
    } catch {
      return false; // as `filter`'s per-row test: no match
    }
  };
  if (perRow) return { keep };
  const ctx = {
    ...sqlContextOf(entity, auth, req, parsed.helpers, users),
    ...(view && {
      guard: guardsOf(
        entity,
        view,
        auth,
        parsed.helpers,
        parsed.parseRule,
        await guardUsers(parsed, bound, entity, auth, view),
      ),
    }),
  };
  const compiled = compileToSql(bound, ctx);
  if (compiled) {
    return {
      where: { sql: compiled.sql, params: compiled.params as SqlValue[] },
    };
  }
  const pre = compilePrefilter(bound, ctx);
  return {
    ...(pre && { where: { sql: pre.sql, params: pre.params as SqlValue[] } }),
    keep,
  };
}

/** The value of a sort key through relations (see `RuleEngine.sortVia`). */
export function guardedSortVia(
  parsed: ParseCache,
  entity: RuleTarget,
  path: readonly string[],
  auth: AuthValue,
  view?: CallerView,
): SortVia {
  const guard = view
    ? guardsOf(entity, view, auth, parsed.helpers, parsed.parseRule, undefined)
    : () => true;
  return sortViaOf(
    entity,
    path,
    guard,
    (e) =>
      view && view.decide(e, "get").kind === "none"
        ? `${e.name} records are not yours to read`
        : undefined,
  );
}
