/**
 * What a failed schema statement means, in words of our own: a schema route
 * never passes the database's message (SQL text, object names it chose) to
 * the client. A name the database refused is repeated only when the
 * admin's own SQL (a `view_query`) has it.
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

/**
 * Where the refused name sits in a message: SQLite `no such column: p.x`,
 * `no such table: main.t`, `no such function: f`, `ambiguous column name: x`;
 * PostgreSQL `column "x" does not exist`, `column p.x does not exist`,
 * `relation "t" does not exist`, `function f(text) does not exist`,
 * `column reference "x" is ambiguous`.
 */
const NAMED = [
  /^no such (?:column|table|function): "?([\w.]+?)"?(?: - .*)?$/,
  /^ambiguous column name: ([\w.]+)$/,
  /^(?:column|relation) "?([\w.]+?)"? does not exist$/,
  /^function ([\w.]+)\(.*\) does not exist$/,
  /^column reference "([\w.]+)" is ambiguous$/,
];

/** The database's own error under ours (SQLite's stale-schema 409 keeps it as `cause`). */
function rootOf(err: unknown): unknown {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof Error ? cause : err;
}

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
  const key = keyOf(rootOf(err));
  return key === "2BP01" || /^error in view /.test(key);
}

/**
 * The column a view's query returns more than once, when PostgreSQL refused
 * the view for it (42701 `column "id" specified more than once`); SQLite
 * creates the view, naming the repeat `id:1` (see `repeatedColumn`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { repeatedViewColumn } from "moonbase/lib/schema/ddl_errors.ts";
 * const err = Object.assign(new Error('column "id" specified more than once'), { code: "42701" });
 * assert.equal(repeatedViewColumn(err), "id");
 * assert.equal(repeatedViewColumn(new Error("no such table: t")), undefined);
 * ```
 */
export function repeatedViewColumn(err: unknown): string | undefined {
  const root = rootOf(err);
  if (keyOf(root) !== "42701" || !(root instanceof Error)) return undefined;
  return /^column "(.{1,128})" specified more than once$/.exec(
    root.message.split("\n")[0],
  )?.[1];
}

/**
 * The name the database refused, when `sql` (the admin's own text) has it;
 * else undefined (never a name the database chose or found elsewhere).
 */
function refusedName(err: unknown, sql: string): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const line = err.message.split("\n")[0];
  for (const re of NAMED) {
    const name = re.exec(line)?.[1];
    if (name === undefined || name.length > 128) continue;
    const text = sql.toLowerCase();
    if (text.includes(name.toLowerCase())) return name;
    // SQLite qualifies a table the SQL named bare (`main.t`).
    const last = name.slice(name.lastIndexOf(".") + 1);
    return text.includes(last.toLowerCase()) ? last : undefined;
  }
  return undefined;
}

/**
 * A client-safe reason for a failed schema statement; with `sql` (a
 * `view_query`), the column, table or function the database refused is
 * named when that SQL has it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ddlReason } from "moonbase/lib/schema/ddl_errors.ts";
 * assert.equal(ddlReason(new Error("no such table: main.nope")), "the SQL names a table that does not exist");
 * assert.equal(ddlReason(Object.assign(new Error("x"), { code: "42601" })), "the SQL has a syntax error");
 * assert.equal(ddlReason(new Error("disk I/O error: /var/x")), "the database refused the change");
 * assert.equal(
 *   ddlReason(new Error("no such column: nope"), "SELECT id, nope FROM posts"),
 *   'the SQL names a column that does not exist: "nope"',
 * );
 * assert.equal(
 *   ddlReason(
 *     Object.assign(new Error('relation "postz" does not exist'), { code: "42P01" }),
 *     "SELECT id FROM postz",
 *   ),
 *   'the SQL names a table that does not exist: "postz"',
 * );
 * assert.equal(
 *   ddlReason(new Error("no such column: secret"), "SELECT id FROM v1"),
 *   "the SQL names a column that does not exist",
 * );
 * ```
 */
export function ddlReason(err: unknown, sql?: string): string {
  const root = rootOf(err);
  const key = keyOf(root);
  for (const [re, reason] of REASONS) {
    if (!re.test(key)) continue;
    const name = sql === undefined ? undefined : refusedName(root, sql);
    return name === undefined ? reason : `${reason}: "${name}"`;
  }
  return "the database refused the change";
}
