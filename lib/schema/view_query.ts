/**
 * The view rule: what a view's SQL may be and what it may read.
 *
 * The text is only checked for its shape (one SELECT). What the view reads
 * is decided from the database's own knowledge of the created view
 * (`view_inspect.ts`): a view may read base entities and other views, and
 * nothing else — no auth entity (password hashes), no system entity (`mb_*`),
 * no database catalog (`sqlite_schema`, `pg_catalog`, `information_schema`),
 * no virtual table, and on PostgreSQL only allowlisted built-in functions
 * (`view_functions_pg.ts`), so no function can run SQL it names in a string.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { ViewInspection } from "./view_inspect.ts";
import type { EntityType } from "./types.ts";

function fail(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/**
 * Checks a view's SQL for its shape: one `SELECT` (or `WITH … SELECT`)
 * statement of at most 10 000 characters, no `;` (so nothing can follow it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkViewQuery } from "moonbase/lib/schema/view_query.ts";
 * assert.equal(checkViewQuery("SELECT id FROM posts;"), "SELECT id FROM posts");
 * assert.throws(() => checkViewQuery("SELECT id FROM posts; DELETE FROM posts"));
 * ```
 */
export function checkViewQuery(raw: unknown): string {
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
  return q;
}

/** An entity as the view rule sees it. */
export interface ReadTarget {
  name: string;
  type: EntityType;
  is_system: boolean;
}

const ALLOWED = "views may read only base entities and other views";

/**
 * Why a view may not read what the database says it reads (undefined when
 * it may). `entityOf` maps a physical table name to its entity.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { viewReadProblem } from "moonbase/lib/schema/view_query.ts";
 * const entities = new Map([
 *   ["posts", { name: "posts", type: "base" as const, is_system: false }],
 *   ["users", { name: "users", type: "auth" as const, is_system: false }],
 * ]);
 * const of = (t: string) => entities.get(t);
 * assert.equal(viewReadProblem({ reads: ["posts"], refused: [], columns: [] }, of), undefined);
 * assert.match(viewReadProblem({ reads: ["users"], refused: [], columns: [] }, of)!, /auth entity users/);
 * assert.match(viewReadProblem({ reads: ["sqlite_schema"], refused: [], columns: [] }, of)!, /not an entity/);
 * ```
 */
export function viewReadProblem(
  ins: ViewInspection,
  entityOf: (physical: string) => ReadTarget | undefined,
): string | undefined {
  for (const what of ins.refused) {
    return what.startsWith("function ")
      ? `it calls ${what}, which views may not call (only built-in functions that compute from their arguments)`
      : `it uses ${what}, which views may not use`;
  }
  for (const table of [...ins.reads].sort()) {
    const e = entityOf(table);
    if (!e) return `it reads ${table}, which is not an entity (${ALLOWED})`;
    if (e.is_system) return `it reads system entity ${e.name} (${ALLOWED})`;
    if (e.type === "auth") {
      return `it reads auth entity ${e.name}, which holds password hashes (${ALLOWED})`;
    }
  }
  return undefined;
}
