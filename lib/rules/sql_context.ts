/**
 * What the rule-to-SQL compiler needs of the entity and the request: a leaf
 * module shared by the compiler's entry (to_sql.ts) and its walker
 * (sql_compiler.ts).
 *
 * @module
 */

import type { Related, RuleHelpers } from "./evaluate.ts";
import type { Cond, Dialect } from "./sql_fragment.ts";

/**
 * Another entity's table, for reads through relations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { SqlTable } from "moonbase/lib/rules/sql_context.ts";
 * const users: SqlTable = {
 *   table: '"users"',
 *   column: (name) => name === "name" ? '"name"' : undefined,
 *   fieldType: (name) => name === "name" ? "string" : undefined,
 * };
 * assert.equal(users.column("name"), '"name"');
 * ```
 */
export interface SqlTable {
  /** The quoted table name, e.g. `"users"`. */
  readonly table: string;
  /** The quoted column of a field (unqualified), or undefined if none. */
  column(name: string): string | undefined;
  /** The declared type of a field (see {@link SqlContext.fieldType}). */
  fieldType(name: string): string | undefined;
}

/**
 * What the compiler needs to know about the table and the request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { SqlContext } from "moonbase/lib/rules/sql_context.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { compileToSql } from "moonbase/lib/rules/to_sql.ts";
 * const ctx: SqlContext = {
 *   dialect: "sqlite",
 *   column: (name) => name === "title" ? '"title"' : undefined,
 *   fieldType: (name) => name === "title" ? "string" : undefined,
 *   scope: { auth: { id: "" } },
 * };
 * assert.deepEqual(compileToSql(parseExpression('record.title == "a"', { mode: "rule" }), ctx), {
 *   sql: '("title" IS NOT NULL AND "title" = ?)',
 *   params: ["a"],
 * });
 * ```
 */
export interface SqlContext {
  dialect: Dialect;
  /** Quoted column expression for a record field, e.g. `"title"`, or undefined if not a field. */
  column(name: string): string | undefined;
  /** Declared type of a record field: "string"|"text"|"email"|"url"|"select"|"date"|"int"|"double"|"bool"|"json"|"relation"|"relation[]" (a multiple relation: a JSON list of ids)|"file"|"files". */
  fieldType(name: string): string | undefined;
  /** The values of `auth` (and optionally `req`) known at request time: used as bound parameters. */
  scope: { auth: unknown; req?: unknown };
  /** Helpers whose calls on request-time values may be folded; without it, helper calls are not compiled. */
  helpers?: RuleHelpers;
  /**
   * Relations (a bound expression, `relations.ts`): the quoted name the
   * record's own columns are qualified with inside a subquery (its table,
   * e.g. `"posts"`, as the statements using the condition name it). Without
   * it, reads through relations are not compiled.
   */
  table?: string;
  /** Relations: the table of another entity, by entity name. */
  tables?(entity: string): SqlTable | undefined;
  /** The records `auth.user`'s relations read (folded with `auth`). */
  related?: Related;
  /**
   * A caller's filter: the condition on a related record of `entity` read
   * as `alias` (its columns `alias."col"`) that the caller's `op` rule on
   * that entity sets (`true`: every record; `false`: none). Throws
   * `NotCompilable` when that rule has no SQL: the filter is then checked
   * per row. Rules never have one (a rule reads related records whatever
   * their own rules say).
   */
  guard?(entity: string, op: "get" | "list", alias: string): Cond;
  /** Prefix of the subqueries' table aliases (default `mb_r`). */
  aliases?: string;
}
