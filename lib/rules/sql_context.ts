/**
 * What the rule-to-SQL compiler needs of the entity and the request: a leaf
 * module shared by the compiler's entry (to_sql.ts) and its walker
 * (sql_compiler.ts).
 *
 * @module
 */

import type { RuleHelpers } from "./evaluate.ts";
import type { Dialect } from "./sql_fragment.ts";

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
}
