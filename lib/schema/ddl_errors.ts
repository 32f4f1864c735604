/**
 * What a failed schema statement means, in words of our own: a schema route
 * never passes the database's message (SQL text, object names it chose) to
 * the client.
 *
 * @module
 */

/** PostgreSQL SQLSTATE codes and SQLite message beginnings → a reason. */
const REASONS: [RegExp, string][] = [
  [
    /^(42601|syntax error|near ".*": syntax error|incomplete input)/,
    "the SQL has a syntax error",
  ],
  [/^(42P01|no such table)/, "the SQL names a table that does not exist"],
  [/^(42703|no such column)/, "the SQL names a column that does not exist"],
  [
    /^(42883|no such function|wrong number of arguments)/,
    "the SQL calls a function that does not exist",
  ],
  [
    /^(42702|42725|ambiguous column name)/,
    "the SQL names something ambiguously",
  ],
  [
    /^(42803|42804|42P18|42846|datatype mismatch)/,
    "the SQL mixes types or groups wrongly",
  ],
  [
    /^(42701|42P07|42710|duplicate column name|table .* already exists|index .* already exists)/,
    "a name is already taken in the database",
  ],
  [/^(42939|object name reserved)/, "the name is reserved by the database"],
  [/^(54000|54001|54023|too many)/, "the SQL is too large or too deep"],
];

/** A code of a PostgreSQL error or the first line of a SQLite one. */
function keyOf(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
  return err instanceof Error ? err.message.split("\n")[0] : "";
}

/**
 * True when the database refused a change because a view depends on what it
 * changes (PostgreSQL 2BP01; SQLite "error in view …").
 */
export function isViewDependency(err: unknown): boolean {
  const key = keyOf(err);
  return key === "2BP01" || /^error in view /.test(key);
}

/**
 * A client-safe reason for a failed schema statement.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ddlReason } from "moonbase/lib/schema/ddl_errors.ts";
 * assert.equal(ddlReason(new Error("no such table: main.nope")), "the SQL names a table that does not exist");
 * assert.equal(ddlReason(Object.assign(new Error("x"), { code: "42601" })), "the SQL has a syntax error");
 * assert.equal(ddlReason(new Error("disk I/O error: /var/x")), "the database refused the change");
 * ```
 */
export function ddlReason(err: unknown): string {
  const key = keyOf(err);
  for (const [re, reason] of REASONS) if (re.test(key)) return reason;
  return "the database refused the change";
}
