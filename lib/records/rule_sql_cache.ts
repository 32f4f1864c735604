/**
 * The SQL a custom rule compiles to, kept per entity version, rule and
 * caller, for the rules whose SQL is a function of those alone
 * (`readsFixedCallerOnly`, no relation crossed): `record.owner == auth.id`
 * is compiled once per caller instead of once per request (the compiler's
 * NULL folding and fragments were ~10% of a GET with a token).
 *
 * What is kept: the exact SQL (`where`) or the superset checked per row
 * (`pre`), or that the rule has neither. A new schema version is a new
 * entity object, so its SQL is compiled anew; at most {@link MAX_CALLERS}
 * keys per entity, then it starts anew.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuleSqlCache } from "moonbase/lib/records/rule_sql_cache.ts";
 * const cache = new RuleSqlCache();
 * const entity = {};
 * let compiled = 0;
 * const compile = () => {
 *   compiled++;
 *   return { where: { sql: '"owner" = ?', params: ["u1"] } };
 * };
 * const auth = { id: "u1", entity: "users", type: "user" };
 * const a = cache.get(entity, "record.owner == auth.id", auth, compile);
 * const b = cache.get(entity, "record.owner == auth.id", auth, compile);
 * assert.equal(compiled, 1);
 * assert.deepEqual(a, b);
 * assert.notEqual(a.where?.params, b.where?.params); // each caller its own copy
 * cache.get(entity, "record.owner == auth.id", { ...auth, id: "u2" }, compile);
 * assert.equal(compiled, 2);
 * ```
 *
 * @module
 */

import type { SqlValue } from "../db/storage.ts";

/** A rule's SQL: exact (`where`), a superset checked per row (`pre`), or none. */
export interface RuleSql {
  where?: { sql: string; params: SqlValue[] };
  pre?: { sql: string; params: SqlValue[] };
}

/** The members of the caller the kept SQL may depend on. */
export interface FixedCaller {
  readonly id: string;
  readonly entity: string;
  readonly type: string;
}

/** Keys per entity version before the entity's map starts anew. */
export const MAX_CALLERS = 1000;

const copy = (
  f: { sql: string; params: SqlValue[] } | undefined,
): { sql: string; params: SqlValue[] } | undefined =>
  f && { sql: f.sql, params: [...f.params] };

/** Rules' SQL by entity object, rule and caller. */
export class RuleSqlCache {
  readonly #byEntity = new WeakMap<object, Map<string, RuleSql>>();

  /**
   * The SQL of `expr` for `caller` on `entity`: kept, or `compile`d and kept.
   * Each answer is a copy (callers may add to its parameters).
   */
  get(
    entity: object,
    expr: string,
    caller: FixedCaller,
    compile: () => RuleSql,
  ): RuleSql {
    let kept = this.#byEntity.get(entity);
    if (!kept) this.#byEntity.set(entity, kept = new Map());
    const key = JSON.stringify([expr, caller.type, caller.entity, caller.id]);
    let sql = kept.get(key);
    if (!sql) {
      sql = compile();
      if (kept.size >= MAX_CALLERS) kept.clear();
      kept.set(key, sql);
    }
    return { where: copy(sql.where), pre: copy(sql.pre) };
  }
}
