/**
 * Checking a view's SQL before it is created.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

function fail(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/**
 * Checks a view's SQL: one `SELECT` (or `WITH … SELECT`) statement of at
 * most 10 000 characters, no `;` (so nothing can follow it).
 *
 * @example
 * ```ts
 * import { checkViewQuery } from "moonbase/lib/schema/view_query.ts";
 * console.assert(checkViewQuery("SELECT id FROM posts;") === "SELECT id FROM posts");
 * let threw = false;
 * try { checkViewQuery("SELECT id FROM posts; DELETE FROM posts"); } catch { threw = true; }
 * console.assert(threw);
 * ```
 */
export function checkViewQuery(
  raw: unknown,
  authEntities: readonly string[] = [],
): string {
  if (typeof raw !== "string" || raw.trim() === "" || raw.length > 10_000) {
    fail(
      "Cannot accept view_query: an SQL SELECT of at most 10000 characters is required",
    );
  }
  const q = raw.trim().replace(/;\s*$/, "");
  if (q.includes(";")) {
    fail(
      "Cannot accept view_query: a single statement without ';' is required",
    );
  }
  if (!/^(select|with)\b/i.test(q)) {
    fail("Cannot accept view_query: it must start with SELECT or WITH");
  }
  if (q.includes("\0")) {
    fail("Cannot accept view_query: NUL characters are not allowed");
  }
  if (/\bmb_\w+/i.test(q)) {
    fail(
      "Cannot accept view_query: system tables (mb_*) cannot be read by views",
    );
  }
  if (/\bU&/i.test(q)) {
    fail(
      "Cannot accept view_query: Unicode-escaped identifiers are not allowed",
    );
  }
  for (const name of authEntities) {
    if (new RegExp(`\\b${name}\\b`, "i").test(q)) {
      fail(
        `Cannot accept view_query: auth entity ${name} holds password hashes and cannot be read by views`,
      );
    }
  }
  if (/\bpassword\b/i.test(q)) {
    fail("Cannot accept view_query: password columns cannot be read by views");
  }
  return q;
}
