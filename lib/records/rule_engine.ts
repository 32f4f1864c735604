/**
 * Custom rules and list filters at request time: parsed once per
 * expression, bound to the entities as they are now when they read through
 * relations (`lib/rules/relations.ts`), compiled to SQL when they only read
 * `record.*`, `auth.*` and literals, else evaluated per row in JavaScript
 * (with the related records loaded first: `rule_relations.ts`).
 *
 * A rule reads related records whatever their own rules say: it is the
 * admin's statement. A caller's filter reads only the related records the
 * caller could read itself (`CallerView`): the related entity's rule is
 * compiled into the subquery (`rule_sql.ts` `guardsOf`), or applied to each
 * related record read (per-row filters).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { SqlValue } from "../db/storage.ts";
import type { AuthValue } from "../caller.ts";
import type { Operation } from "../schema/types.ts";
import type { Expr } from "../rules/ast.ts";
import { RuleSyntaxError } from "../rules/ast.ts";
import {
  parseExpression,
  readsCallerData,
  readsRecord,
  readsRequest,
} from "../rules/parser.ts";
import { isClosed } from "../rules/walk.ts";
import { evaluate, type RuleHelpers, test } from "../rules/evaluate.ts";
import { truthy } from "../rules/values.ts";
import { compilePrefilter, compileToSql } from "../rules/to_sql.ts";
import type { Related } from "../rules/evaluate.ts";
import { bindRelations, type Shapes } from "../rules/relations.ts";
import {
  hasRelations,
  mayCrossRelations,
  relationPaths,
} from "../rules/relation_paths.ts";
import type { Queryable } from "../db/storage.ts";
import type { RecordData } from "./codec.ts";
import type { Access } from "./caller_access.ts";
import type {
  CallerView,
  RuleEngine,
  RuleRequest,
  RuleTarget,
  SharedReads,
  SortVia,
} from "./rule_types.ts";
import { deny } from "./access.ts";
import { NameSet, shapesOf, type ShapeSource } from "./rule_shapes.ts";
import { readsRelations, RelationLoader } from "./rule_relations.ts";
import { guardsOf, sortViaOf, sqlContextOf } from "./rule_sql.ts";

const MAX_CACHE = 2000;

const NO_REQUEST: RuleRequest = Object.freeze({
  body: {},
  query: {},
  method: "",
});
const readsReq = new WeakMap<Expr, boolean>();
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
 * A plain-data copy of the request (accessors resolved: rules only read data
 * properties); nothing is copied for an expression that never reads `req`.
 */
function plainRequest(ast: Expr, req: RuleRequest): RuleRequest {
  let reads = readsReq.get(ast);
  if (reads === undefined) readsReq.set(ast, reads = readsRequest(ast));
  return reads
    ? { body: req.body, query: req.query, method: req.method }
    : NO_REQUEST;
}

/** Both loaders' records: the row's relations, then the caller's. */
function either(a: Related, b: Related | undefined): Related {
  return b ? { get: (p, n) => a.get(p, n) ?? b.get(p, n) } : a;
}

/** Evaluates custom rules and filters for the record service. */
export class ExpressionRules implements RuleEngine {
  #cache = new Map<string, Expr>();
  #helpers: RuleHelpers;
  #onError: (err: unknown) => void;

  /** `helpers` are callable from rules; `onError` hears evaluation failures. */
  constructor(
    helpers: RuleHelpers = new Map(),
    onError: (err: unknown) => void = () => {},
  ) {
    this.#helpers = helpers;
    this.#onError = onError;
  }

  #parse(
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
        helpers: new Set(this.#helpers.keys()),
      });
      if (this.#cache.size >= MAX_CACHE) this.#cache.clear();
      this.#cache.set(key, ast);
    }
    return ast;
  }

  #parseRule = (expr: string): Expr => this.#parse(`r\0${expr}`, expr, "rule");

  /** The caller's auth entity, when it has one. */
  #userEntity(entity: RuleTarget, auth: AuthValue): RuleTarget | undefined {
    return auth.type === "user" ? entity.lookup(auth.entity) : undefined;
  }

  /** The shapes a rule of `entity` reads (every entity: the admin's statement). */
  #ruleShapes(entity: RuleTarget, auth: AuthValue): Shapes {
    const user = this.#userEntity(entity, auth);
    return shapesOf({
      find: (n) => entity.lookup(n),
      record: entity,
      user: user ? [user] : [],
    });
  }

  /** The shapes a caller's filter reads: only entities it could read itself. */
  #filterShapes(
    entity: RuleTarget,
    auth: AuthValue,
    view: CallerView | undefined,
  ): Shapes {
    const user = this.#userEntity(entity, auth);
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
  #bindRule(ast: Expr, entity: RuleTarget, auth: AuthValue): Expr {
    return mayCrossRelations(ast)
      ? bindRelations(ast, this.#ruleShapes(entity, auth))
      : ast;
  }

  /** The caller's related records a bound expression reads (`auth.user.<relation>…`). */
  async #userRelated(
    bound: Expr,
    entity: RuleTarget,
    auth: AuthValue,
    view?: CallerView,
  ): Promise<RelationLoader | undefined> {
    const user = this.#userEntity(entity, auth);
    if (!user || !auth.user || !readsRelations(bound, "user")) return undefined;
    const loader = new RelationLoader(
      entity.reads,
      view && ((e, op) => view.access(e, op)),
    );
    await loader.load(bound, "user", user, [auth.user as RecordData]);
    return loader;
  }

  #test(
    ast: Expr,
    scope: { auth: AuthValue; req: RuleRequest; record?: RecordData },
    related?: Related,
  ): boolean {
    try {
      // evaluate() (not test()) so that failures reach the log before denying.
      return truthy(evaluate(ast, scope, this.#helpers, related));
    } catch (err) {
      this.#onError(err);
      return false;
    }
  }

  /**
   * Whether the custom rule `expr` lets `auth` at `record` (evaluated here,
   * never in SQL): at once, or (a rule reading through relations, given
   * `reads`: a realtime event's) once the related records are read, shared
   * with the other callers `reads` decides for. Without `reads` such a rule
   * denies (nothing is read).
   */
  allows(
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
    record: RecordData,
    entity?: RuleTarget,
    reads?: SharedReads,
  ): boolean | Promise<boolean> {
    let ast: Expr;
    try {
      ast = this.#parseRule(expr);
    } catch (err) {
      this.#onError(err);
      return false;
    }
    if (mayCrossRelations(ast)) {
      if (!entity) return false;
      const user = this.#userEntity(entity, auth);
      // Bound once per entity and kind of caller (the shapes differ by auth entity).
      const key = `${expr}\0${user?.name.toLowerCase() ?? ""}`;
      const parsed = ast;
      ast = reads
        ? reads.bound(
          `${entity.id}\0${key}`,
          () => this.#bindRule(parsed, entity, auth),
        )
        : this.#bindRule(ast, entity, auth);
      if (hasRelations(ast)) {
        return reads
          ? this.#allowsThrough(ast, key, auth, req, record, entity, reads)
          : false;
      }
    }
    return this.#test(ast, { auth, req: plainRequest(ast, req), record });
  }

  /** `allows` for a bound rule reading relations: they are read first. */
  async #allowsThrough(
    ast: Expr,
    key: string,
    auth: AuthValue,
    req: RuleRequest,
    record: RecordData,
    entity: RuleTarget,
    reads: SharedReads,
  ): Promise<boolean> {
    const loads: Promise<void>[] = [];
    if (readsRelations(ast, "record")) {
      loads.push(reads.record(key, ast, entity, record));
    }
    const user = this.#userEntity(entity, auth);
    if (user && auth.user && readsRelations(ast, "user")) {
      loads.push(reads.user(key, ast, user, auth.user as RecordData));
    }
    // A read that fails rejects (the database did not answer): the caller
    // ends the stream rather than guess.
    await Promise.all(loads);
    return this.#test(
      ast,
      { auth, req: plainRequest(ast, req), record },
      reads,
    );
  }

  /** See {@link RuleEngine.mayPass}. */
  mayPass(
    expr: string,
    auth: AuthValue,
    entity?: RuleTarget,
    reads?: SharedReads,
  ): boolean | Promise<boolean> {
    let ast: Expr;
    try {
      ast = this.#parseRule(expr);
    } catch {
      return false; // a rule that does not parse denies every request (access)
    }
    if (readsRecord(ast) || readsRequest(ast)) return true;
    if (mayCrossRelations(ast)) {
      // Through the caller's relations: read them when given the means, else maybe.
      if (!entity || !reads) return true;
      const user = this.#userEntity(entity, auth);
      const key = `${expr}\0${user?.name.toLowerCase() ?? ""}`;
      const parsed = ast;
      const bound = reads.bound(
        `${entity.id}\0${key}`,
        () => this.#bindRule(parsed, entity, auth),
      );
      if (hasRelations(bound)) {
        if (!user || !auth.user || !readsRelations(bound, "user")) {
          return this.#test(bound, { auth, req: NO_REQUEST }, reads);
        }
        return reads.user(key, bound, user, auth.user as RecordData).then(
          () => this.#test(bound, { auth, req: NO_REQUEST }, reads),
          () => true, // not read (the database did not answer): maybe
        );
      }
      ast = bound;
    }
    return this.#test(ast, { auth, req: NO_REQUEST });
  }

  /** The `Access` of one operation under a custom rule (throws when the rule denies outright). */
  async access(
    entity: RuleTarget,
    op: Operation,
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access> {
    let ast: Expr;
    try {
      ast = this.#bindRule(this.#parseRule(expr), entity, auth);
    } catch (err) {
      this.#onError(err);
      return deny(entity.name, op, auth);
    }
    req = plainRequest(ast, req);
    const users = await this.#userRelated(ast, entity, auth);
    if (!readsRecord(ast)) {
      return this.#test(ast, { auth, req }, users)
        ? {}
        : deny(entity.name, op, auth);
    }
    const rows = readsRelations(ast, "record");
    // One loader per database handle: a list's rows share what they read.
    const loaders = new WeakMap<Queryable, RelationLoader>();
    /** `fresh`: read the related records anew (a write's check: they may have changed). */
    const allowed = async (
      record: RecordData,
      tx: Queryable | undefined,
      fresh: boolean,
    ) => {
      let related: Related | undefined = users;
      if (rows) {
        const db = tx ?? entity.reads;
        let loader = fresh ? undefined : loaders.get(db);
        if (!loader) {
          loader = new RelationLoader(db);
          if (!fresh) loaders.set(db, loader);
        }
        await loader.load(ast, "record", entity, [record]);
        related = either(loader, users);
      }
      return this.#test(ast, { auth, req, record }, related);
    };
    const keep = (record: RecordData, tx?: Queryable) =>
      allowed(record, tx, false);
    const check =
      (what: Operation) => async (next: RecordData, tx: Queryable) => {
        if (!(await allowed(next, tx, true))) deny(entity.name, what, auth);
      };
    if (op === "add") return { check: check("add") };
    const ctx = sqlContextOf(entity, auth, req, this.#helpers, users);
    const compiled = compileToSql(ast, ctx);
    // Not exact: a superset in SQL narrows the rows checked per row — only
    // for rules the client cannot steer through `req` or its own record
    // (`auth.user…`): which hidden rows the superset holds would tell about
    // them through the scan budget.
    const pre = compiled || readsRequest(ast) || readsCallerData(ast)
      ? undefined
      : compilePrefilter(ast, ctx);
    const opts: Access = compiled
      ? { where: { sql: compiled.sql, params: compiled.params as SqlValue[] } }
      : pre
      ? { where: { sql: pre.sql, params: pre.params as SqlValue[] }, keep }
      : { keep };
    if (op === "update") opts.check = check("update");
    return opts;
  }

  /**
   * The `Access` of the `filter` list parameter (bare field names and `auth.*`);
   * `perRow`: never compiled to SQL (see {@link RuleEngine.filter}).
   */
  async filter(
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
      const shapes = this.#filterShapes(entity, auth, view);
      return new NameSet(
        readable,
        (n) =>
          n.includes("_via_") && shapes.record !== undefined &&
          !!shapes.back(shapes.record, n),
      );
    };
    let ast: Expr;
    try {
      ast = this.#parse(
        `f\0${targetOf(entity)}\0${entity.updated}\0${source}`,
        source,
        "filter",
        fields,
      );
      if (mayCrossRelations(ast)) {
        const bound = bindRelations(
          ast,
          this.#filterShapes(entity, auth, view),
          { strict: true, what: "filter" },
        );
        if (hasRelations(bound)) {
          return await this.#relationFilter(
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
      : sqlContextOf(entity, auth, req, this.#helpers);
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
          return test(ast, { ...record, auth }, this.#helpers);
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
   * (`#userRelated` with the caller's view): there a record hidden from the
   * caller reads as absent, and a rule such as `auth.user.team.level !=
   * "restricted"` would then let through a caller it refuses.
   */
  async #guardUsers(
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
        ast = this.#bindRule(this.#parseRule(d.expr), target, auth);
      } catch {
        continue; // the guard fails the same way: checked per row, denied
      }
      const loaded = await this.#userRelated(ast, target, auth);
      if (loaded) related = either(loaded, related);
    }
    return related;
  }

  /**
   * A filter reading through relations (bound: its bare names read as
   * `record.<name>`), each related record only as the caller could read it.
   */
  async #relationFilter(
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
    const users = await this.#userRelated(bound, entity, auth, view);
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
          this.#helpers,
          either(loader, users),
        );
      } catch {
        return false; // as `filter`'s per-row test: no match
      }
    };
    if (perRow) return { keep };
    const ctx = {
      ...sqlContextOf(entity, auth, req, this.#helpers, users),
      ...(view && {
        guard: guardsOf(
          entity,
          view,
          auth,
          this.#helpers,
          this.#parseRule,
          await this.#guardUsers(bound, entity, auth, view),
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

  /** The value of a sort key through relations (see {@link RuleEngine.sortVia}). */
  sortVia(
    entity: RuleTarget,
    path: readonly string[],
    auth: AuthValue,
    _req: RuleRequest,
    view?: CallerView,
  ): SortVia {
    const guard = view
      ? guardsOf(entity, view, auth, this.#helpers, this.#parseRule, undefined)
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
}
