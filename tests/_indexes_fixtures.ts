/**
 * Fixtures of the entity-index tests: what indexes the database holds for a
 * table (read from `sqlite_master` / `pg_indexes`, not from Moonbase's
 * schema), and the `items` entity of the list benchmark.
 *
 * @module
 */

import { physicalName } from "../lib/db/storage.ts";
import type { TestServer } from "./_server.ts";

/**
 * The entity-level indexes (`mbx_…`) of a table as `u:a,b` (unique) or
 * `i:a,b`, sorted, as the database reports them.
 */
export async function dbIndexes(
  s: TestServer,
  entity: string,
): Promise<string[]> {
  const table = physicalName(entity);
  const rows = s.db === "sqlite"
    ? await s.app.storage.query(
      `SELECT "name" AS "name", "sql" AS "def" FROM sqlite_master WHERE "type" = 'index' AND "tbl_name" = ?`,
      [table],
    )
    : await s.app.storage.query(
      `SELECT indexname AS "name", indexdef AS "def" FROM pg_indexes WHERE tablename = ?`,
      [table],
    );
  return rows.filter((r) => String(r.name).startsWith("mbx_")).map((r) => {
    const def = String(r.def);
    const cols = /\(([^()]*)\)\s*$/.exec(def)?.[1] ?? "";
    const names = cols.split(",").map((c) =>
      c.trim().replace(/ NULLS FIRST$/, "").replaceAll('"', "")
    );
    return `${/UNIQUE/.test(def) ? "u" : "i"}:${names.join(",")}`;
  }).sort();
}

/** The PostgreSQL column suffixes of an index's definition (to check NULLS FIRST). */
export async function pgIndexDefs(
  s: TestServer,
  entity: string,
): Promise<string[]> {
  const rows = await s.app.storage.query(
    `SELECT indexdef AS "def" FROM pg_indexes WHERE tablename = ? AND indexname LIKE 'mbx\\_%'`,
    [physicalName(entity)],
  );
  return rows.map((r) => String(r.def).replace(/^.* USING btree /, "")).sort();
}

/** The list benchmark's entity (`title`, `n`, `tag`), with an index serving filter `tag ==` + sort `n`. */
export const ITEMS = {
  name: "items",
  type: "base",
  fields: [
    { name: "title", type: "string" },
    { name: "n", type: "int" },
    { name: "tag", type: "string" },
  ],
  indexes: [{ fields: ["tag", "n"], unique: false }],
};
