/**
 * Custom rules and list filters at request time: parsed once per
 * expression, compiled to SQL when they only read `record.*`, `auth.*` and
 * literals, else evaluated per row in JavaScript.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { physicalName, type SqlValue } from "../db/storage.ts";
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
import {
  compilePrefilter,
  compileToSql,
  type SqlContext,
} from "../rules/to_sql.ts";
import type { RecordData } from "./codec.ts";
import type { Access } from "./caller_access.ts";
import type { RuleEngine, RuleRequest, RuleTarget } from "./rule_types.ts";
import { deny } from "./access.ts";

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

  #sqlContext(
    entity: RuleTarget,
    auth: AuthValue,
    req: RuleRequest,
  ): SqlContext {
    return {
      dialect: entity.dialect.name,
      column: (name) => {
        const f = entity.field(name);
        return f && name !== "password" ? `"${physicalName(name)}"` : undefined;
      },
      fieldType: (name) => {
        const f = name === "password" ? undefined : entity.field(name);
        // A multiple relation: a JSON list of ids (sql_json_path.ts `list`).
        if (f?.type === "relation" && f.multiple) return "relation[]";
        const type = f?.type;
        // A view's json column holds whatever its query computes: not compiled.
        return type === "json" && entity.type === "view" ? undefined : type;
      },
      scope: { auth, req },
      helpers: this.#helpers,
    };
  }

  #test(
    ast: Expr,
    scope: { auth: AuthValue; req: RuleRequest; record?: RecordData },
  ): boolean {
    try {
      // evaluate() (not test()) so that failures reach the log before denying.
      return truthy(evaluate(ast, scope, this.#helpers));
    } catch (err) {
      this.#onError(err);
      return false;
    }
  }

  /** Whether the custom rule `expr` lets `auth` at `record` (evaluated here, never in SQL). */
  allows(
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
    record: RecordData,
  ): boolean {
    let ast: Expr;
    try {
      ast = this.#parse(`r\0${expr}`, expr, "rule");
    } catch (err) {
      this.#onError(err);
      return false;
    }
    return this.#test(ast, { auth, req: plainRequest(ast, req), record });
  }

  /** See {@link RuleEngine.mayPass}. */
  mayPass(expr: string, auth: AuthValue): boolean {
    let ast: Expr;
    try {
      ast = this.#parse(`r\0${expr}`, expr, "rule");
    } catch {
      return false; // a rule that does not parse denies every request (access)
    }
    if (readsRecord(ast) || readsRequest(ast)) return true;
    return this.#test(ast, { auth, req: NO_REQUEST });
  }

  /** The `Access` of one operation under a custom rule (throws when the rule denies outright). */
  access(
    entity: RuleTarget,
    op: Operation,
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Access {
    let ast: Expr;
    try {
      ast = this.#parse(`r\0${expr}`, expr, "rule");
    } catch (err) {
      this.#onError(err);
      return deny(entity.name, op, auth);
    }
    req = plainRequest(ast, req);
    if (!readsRecord(ast)) {
      return this.#test(ast, { auth, req }) ? {} : deny(entity.name, op, auth);
    }
    const keep = (record: RecordData) => this.#test(ast, { auth, req, record });
    if (op === "add") {
      return {
        check: (
          next,
        ) => (keep(next) ? undefined : deny(entity.name, "add", auth)),
      };
    }
    const ctx = this.#sqlContext(entity, auth, req);
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
    if (op === "update") {
      opts.check = (
        next,
      ) => (keep(next) ? undefined : deny(entity.name, "update", auth));
    }
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
  ): Access {
    if (source.length > 4096) {
      throw new MoonbaseError(
        "invalid",
        "Cannot list records: filter is too long",
      );
    }
    // The field names only when the filter is not parsed yet.
    const fields = () =>
      new Set(
        entity.fields.map((f) => f.name).filter((n) => n !== "password"),
      );
    let ast: Expr;
    try {
      ast = this.#parse(
        `f\0${targetOf(entity)}\0${entity.updated}\0${source}`,
        source,
        "filter",
        fields,
      );
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
    const ctx = perRow ? undefined : this.#sqlContext(entity, auth, req);
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
}
