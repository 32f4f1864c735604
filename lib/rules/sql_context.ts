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
 * import type { SqlContext } from "moonbase/lib/rules/sql_context.ts";
 * const ctx: SqlContext = {
 *   dialect: "sqlite",
 *   column: (name) => name === "title" ? '"title"' : undefined,
 *   fieldType: (name) => name === "title" ? "string" : undefined,
 *   scope: { auth: { id: "" } },
 * };
 * if (ctx.column("x") !== undefined) throw new Error("bad");
 * ```
 */
export interface SqlContext {
  dialect: Dialect;
  /** Quoted column expression for a record field, e.g. `"title"`, or undefined if not a field. */
  column(name: string): string | undefined;
  /** Declared type of a record field: "string"|"text"|"email"|"url"|"select"|"date"|"int"|"double"|"bool"|"json"|"relation"|"file"|"files". */
  fieldType(name: string): string | undefined;
  /** The values of `auth` (and optionally `req`) known at request time: used as bound parameters. */
  scope: { auth: unknown; req?: unknown };
  /** Helpers whose calls on request-time values may be folded; without it, helper calls are not compiled. */
  helpers?: RuleHelpers;
}
