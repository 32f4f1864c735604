/**
 * Which SQL statements change data, from their text (SQLite answers a write
 * only after its commit, so it must know).
 *
 * @module
 */

/**
 * Whether a statement may change data: anything but SELECT, VALUES,
 * EXPLAIN, a PRAGMA without `=`, and WITH without INSERT/UPDATE/DELETE/REPLACE
 * (a read taken for a write only joins a write group).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writes } from "moonbase/lib/db/statement_kind.ts";
 * assert.ok(!writes("SELECT 1") && writes("UPDATE t SET a = 1 RETURNING a"));
 * ```
 */
export function writes(sql: string): boolean {
  const head = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase();
  if (head === "SELECT" || head === "VALUES" || head === "EXPLAIN") {
    return false;
  }
  if (head === "PRAGMA") return sql.includes("=");
  if (head === "WITH") return /\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql);
  return true;
}
