/**
 * Compiles a parsed rule/filter into a parameterized SQL condition (SQLite or
 * PostgreSQL) that selects exactly the rows for which {@link test} is true,
 * or returns `undefined` when that cannot be guaranteed (the caller then
 * evaluates the rule per row in JavaScript).
 *
 * Compiled: comparisons of text/date/int/double/bool columns with values known
 * at request time (literals, `auth.*`, `req.*`, helpers of those) and with each
 * other (numbers/bools; text equality), `&&`, `||`, `!`, truthiness of
 * columns, `.includes/.startsWith/.endsWith` on text columns and
 * `array.includes(column)` for arrays from `auth`/`req`.
 * Also: `.length` of text columns, arithmetic on number columns
 * (`sql_numeric.ts`) and reads of json columns (`sql_json.ts`).
 * Not compiled (`undefined`): text columns compared numerically or ordered
 * against each other, files columns, helpers given row values, and
 * expressions whose JSON comparisons leave some rows undecided — for those,
 * {@link compilePrefilter} gives a condition selecting a superset of the rows.
 *
 * Assumptions about storage: values are stored as documented
 * in the schema layer, double columns never hold NaN (JSON cannot carry it),
 * and PostgreSQL databases use UTF-8 with deterministic collations.
 *
 * @module
 */

import type { Expr } from "./ast.ts";
import { Compiler } from "./sql_compiler.ts";
import { hasRelations } from "./relation_paths.ts";
import type { SqlContext } from "./sql_context.ts";
import { type Cond, type Dialect, or } from "./sql_fragment.ts";
import { truthyCond, unsureOf } from "./sql_value.ts";

export type { SqlContext } from "./sql_context.ts";

/**
 * A boolean SQL condition with `?` placeholders and its parameters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { SqlQuery } from "moonbase/lib/rules/to_sql.ts";
 * const q: SqlQuery = { sql: '"owner" = ?', params: ["u1"] };
 * assert.equal(q.sql.split("?").length - 1, q.params.length); // one param per placeholder
 * ```
 */
export interface SqlQuery {
  sql: string;
  params: unknown[];
}

/**
 * Compiles `expr` to a SQL condition selecting the rows for which
 * `test(expr, {auth, req, record: row})` (filter mode: `{...row, auth}`) is
 * true, or `undefined` when the expression (or part of it) cannot be
 * compiled with identical semantics.
 * Placeholders are `?`; on PostgreSQL they carry explicit casts. Values are
 * always bound, never interpolated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { compileToSql } from "moonbase/lib/rules/to_sql.ts";
 * const expr = parseExpression("record.owner == auth.id && !record.hidden", { mode: "rule" });
 * const types: Record<string, string> = { owner: "relation", hidden: "bool" };
 * const q = compileToSql(expr, {
 *   dialect: "sqlite",
 *   column: (name) => name in types ? `"${name}"` : undefined,
 *   fieldType: (name) => types[name],
 *   scope: { auth: { id: "u1" } },
 * });
 * assert.deepEqual(q, {
 *   sql: '(("owner" IS NOT NULL AND "owner" = ?) AND NOT ("hidden" IS TRUE))',
 *   params: ["u1"],
 * });
 * ```
 */
export function compileToSql(
  expr: Expr,
  ctx: SqlContext,
): SqlQuery | undefined {
  const parts = compileParts(expr, ctx);
  return parts === undefined || parts.unsure !== false
    ? undefined
    : query(parts.cond, ctx.dialect);
}

/**
 * For an expression {@link compileToSql} does not compile because JSON
 * comparisons leave some rows undecided in SQL: a condition selecting a
 * superset of the rows `test` accepts (every row it accepts, plus the
 * undecided ones). The caller must still run `test` on every selected row.
 * `undefined` when no such condition is known (or when `compileToSql`
 * compiles the expression exactly).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { compilePrefilter, compileToSql } from "moonbase/lib/rules/to_sql.ts";
 * const expr = parseExpression("record.meta.owner == auth.id", { mode: "rule" });
 * const ctx = {
 *   dialect: "sqlite" as const,
 *   column: (name: string) => name === "meta" ? '"meta"' : undefined,
 *   fieldType: (name: string) => name === "meta" ? "json" : undefined,
 *   scope: { auth: { id: "u1" } },
 * };
 * // Arrays and objects convert to strings in JavaScript: not decided in SQL.
 * assert.equal(compileToSql(expr, ctx), undefined);
 * const pre = compilePrefilter(expr, ctx);
 * assert.ok(pre !== undefined);
 * assert.deepEqual(pre.params, ["u1"]);
 * ```
 */
export function compilePrefilter(
  expr: Expr,
  ctx: SqlContext,
): SqlQuery | undefined {
  const parts = compileParts(expr, ctx);
  if (parts === undefined || parts.unsure === false) return undefined;
  const cond = or(parts.cond, parts.unsure);
  return cond === true ? undefined : query(cond, ctx.dialect);
}

function compileParts(
  expr: Expr,
  ctx: SqlContext,
): { cond: Cond; unsure: Cond } | undefined {
  try {
    const c = new Compiler(ctx, hasRelations(expr)).compile(expr);
    return { cond: truthyCond(c, ctx.dialect), unsure: unsureOf(c) };
  } catch {
    // NotCompilable, or an evaluation error while folding a constant: the
    // per-row evaluator decides (and reports) instead.
    return undefined;
  }
}

function query(cond: Cond, dialect: Dialect): SqlQuery {
  if (typeof cond === "boolean") {
    const sqlText = dialect === "postgres"
      ? String(cond).toUpperCase()
      : cond
      ? "1"
      : "0";
    return { sql: sqlText, params: [] };
  }
  return { sql: cond.sql, params: [...cond.params] };
}
