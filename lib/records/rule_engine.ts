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
 * Here the rules' decisions (`allows`, `mayPass`, `access`); what a rule or
 * filter is prepared with (parsed, bound, the caller's related records) is
 * `rule_prepare.ts`; the filters and sorts, `rule_filters.ts`.
 *
 * @module
 */

import type { Queryable, SqlValue } from "../db/storage.ts";
import type { AuthValue } from "../caller.ts";
import type { Operation } from "../schema/types.ts";
import type { Expr } from "../rules/ast.ts";
import { readsCallerData, readsRecord, readsRequest } from "../rules/parser.ts";
import { readsFixedCallerOnly } from "../rules/walk.ts";
import type { SqlContext } from "../rules/sql_context.ts";
import { evaluate, type Related, type RuleHelpers } from "../rules/evaluate.ts";
import { truthy } from "../rules/values.ts";
import { compilePrefilter, compileToSql } from "../rules/to_sql.ts";
import { hasRelations, mayCrossRelations } from "../rules/relation_paths.ts";
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
import { readsRelations, RelationLoader } from "./rule_relations.ts";
import { sqlContextOf } from "./rule_sql.ts";
import { type RuleSql, RuleSqlCache } from "./rule_sql_cache.ts";
import {
  bindRule,
  either,
  NO_REQUEST,
  ParseCache,
  plainRequest,
  userEntity,
  userRelated,
} from "./rule_prepare.ts";
import { filterAccess, guardedSortVia } from "./rule_filters.ts";

/** Evaluates custom rules and filters for the record service. */
export class ExpressionRules implements RuleEngine {
  #parsed: ParseCache;
  readonly #kept = new RuleSqlCache();
  readonly #fixed = new WeakMap<Expr, boolean>();
  #onError: (err: unknown) => void;

  /** `helpers` are callable from rules; `onError` hears evaluation failures. */
  constructor(
    helpers: RuleHelpers = new Map(),
    onError: (err: unknown) => void = () => {},
  ) {
    this.#parsed = new ParseCache(helpers);
    this.#onError = onError;
  }

  #test(
    ast: Expr,
    scope: { auth: AuthValue; req: RuleRequest; record?: RecordData },
    related?: Related,
  ): boolean {
    try {
      // evaluate() (not test()) so that failures reach the log before denying.
      return truthy(evaluate(ast, scope, this.#parsed.helpers, related));
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
      ast = this.#parsed.parseRule(expr);
    } catch (err) {
      this.#onError(err);
      return false;
    }
    if (mayCrossRelations(ast)) {
      if (!entity) return false;
      const user = userEntity(entity, auth);
      // Bound once per entity and kind of caller (the shapes differ by auth entity).
      const key = `${expr}\0${user?.name.toLowerCase() ?? ""}`;
      const parsed = ast;
      ast = reads
        ? reads.bound(
          `${entity.id}\0${key}`,
          () => bindRule(parsed, entity, auth),
        )
        : bindRule(ast, entity, auth);
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
    const user = userEntity(entity, auth);
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
      ast = this.#parsed.parseRule(expr);
    } catch {
      return false; // a rule that does not parse denies every request (access)
    }
    if (readsRecord(ast) || readsRequest(ast)) return true;
    if (mayCrossRelations(ast)) {
      // Through the caller's relations: read them when given the means, else maybe.
      if (!entity || !reads) return true;
      const user = userEntity(entity, auth);
      const key = `${expr}\0${user?.name.toLowerCase() ?? ""}`;
      const parsed = ast;
      const bound = reads.bound(
        `${entity.id}\0${key}`,
        () => bindRule(parsed, entity, auth),
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

  /** Whether `ast`'s SQL is one per caller (see {@link RuleSqlCache}). */
  #perCaller(ast: Expr): boolean {
    let fixed = this.#fixed.get(ast);
    if (fixed === undefined) {
      fixed = !mayCrossRelations(ast) && readsFixedCallerOnly(ast);
      this.#fixed.set(ast, fixed);
    }
    return fixed;
  }

  /** A rule's SQL: exact, else a superset checked per row, else none. */
  #sql(ast: Expr, ctx: SqlContext): RuleSql {
    const compiled = compileToSql(ast, ctx);
    if (compiled) {
      return {
        where: { sql: compiled.sql, params: compiled.params as SqlValue[] },
      };
    }
    // Not exact: a superset in SQL narrows the rows checked per row — only
    // for rules the client cannot steer through `req` or its own record
    // (`auth.user…`): which hidden rows the superset holds would tell about
    // them through the scan budget.
    const pre = readsRequest(ast) || readsCallerData(ast)
      ? undefined
      : compilePrefilter(ast, ctx);
    return pre
      ? { pre: { sql: pre.sql, params: pre.params as SqlValue[] } }
      : {};
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
      ast = bindRule(this.#parsed.parseRule(expr), entity, auth);
    } catch (err) {
      this.#onError(err);
      return deny(entity.name, op, auth);
    }
    req = plainRequest(ast, req);
    const users = await userRelated(ast, entity, auth);
    if (!readsRecord(ast)) {
      return this.#test(ast, { auth, req }, users)
        ? {}
        : deny(entity.name, op, auth);
    }
    const ctx = () =>
      sqlContextOf(entity, auth, req, this.#parsed.helpers, users);
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
    if (op === "add") {
      return {
        check: check("add"),
        checkSql: {
          // Exact or none: a rule without an exact form is `check`ed.
          where: (alias) => {
            const q = compileToSql(ast, { ...ctx(), table: alias });
            return q && { sql: q.sql, params: q.params as SqlValue[] };
          },
          refuse: () => deny(entity.name, "add", auth),
        },
      };
    }
    const sql = users === undefined && this.#perCaller(ast)
      ? this.#kept.get(entity, expr, auth, () => this.#sql(ast, ctx()))
      : this.#sql(ast, ctx());
    const opts: Access = sql.where
      ? { where: sql.where }
      : sql.pre
      ? { where: sql.pre, keep }
      : { keep };
    if (op === "update") opts.check = check("update");
    return opts;
  }

  /**
   * The `Access` of the `filter` list parameter (bare field names and `auth.*`);
   * `perRow`: never compiled to SQL (see {@link RuleEngine.filter}).
   */
  filter(
    entity: RuleTarget,
    source: string,
    auth: AuthValue,
    req: RuleRequest,
    perRow = false,
    view?: CallerView,
  ): Promise<Access> {
    return filterAccess(this.#parsed, entity, source, auth, req, perRow, view);
  }

  /** The value of a sort key through relations (see {@link RuleEngine.sortVia}). */
  sortVia(
    entity: RuleTarget,
    path: readonly string[],
    auth: AuthValue,
    _req: RuleRequest,
    view?: CallerView,
  ): SortVia {
    return guardedSortVia(this.#parsed, entity, path, auth, view);
  }
}
