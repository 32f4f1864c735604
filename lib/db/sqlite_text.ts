/**
 * The text functions of lib/rules/text_fold.ts as SQLite functions, on
 * every connection Moonbase opens (lib/db/sqlite_statements.ts), under the
 * names PostgreSQL's twins have (lib/db/pg_text.ts): `mb_lower`,
 * `mb_upper`, `mb_fold`, `mb_search_text` (a record's searchable text as
 * indexed: folded words joined by spaces) and `mb_search_rank` (relevance of
 * such a text for the words of a search, given as one space-separated
 * text). All are deterministic, so indexes may use them; a database file
 * with a `fold(…)` index or a searchable field needs them to be written
 * (another SQLite client can read it, but not change those tables).
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { foldText, searchRank, searchText } from "../rules/text_fold.ts";

const text = (f: (s: string) => string) => (v: unknown): string | null =>
  typeof v === "string" ? f(v) : null;

/**
 * Registers the text functions on a connection.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseSync } from "node:sqlite";
 * import { registerTextFunctions } from "moonbase/lib/db/sqlite_text.ts";
 * const db = new DatabaseSync(":memory:");
 * registerTextFunctions(db);
 * const row = db.prepare("SELECT mb_fold('Émile') AS f, mb_upper('ß') AS u").get();
 * assert.equal(row?.f, "emile");
 * assert.equal(row?.u, "SS");
 * db.close();
 * ```
 */
export function registerTextFunctions(db: DatabaseSync): void {
  const deterministic = { deterministic: true };
  db.function("mb_lower", deterministic, text((s) => s.toLowerCase()));
  db.function("mb_upper", deterministic, text((s) => s.toUpperCase()));
  db.function("mb_fold", deterministic, text(foldText));
  db.function(
    "mb_search_text",
    deterministic,
    (v: unknown) => typeof v === "string" ? searchText(v) : null,
  );
  db.function(
    "mb_search_rank",
    deterministic,
    (body: unknown, words: unknown) =>
      typeof body === "string" && typeof words === "string"
        ? searchRank(body, words.split(" "))
        : 0,
  );
}
