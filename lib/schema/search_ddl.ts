/**
 * The full-text search index of an entity with `searchable` fields: its
 * tables and the triggers that keep it in step with the records inside each
 * write's transaction, whatever writes (the API, batches, scripts, cascades).
 *
 * The indexed text of a record is its searchable fields joined by spaces,
 * folded and split into words (lib/rules/text_fold.ts `searchText`), the same
 * on both databases:
 *
 * - SQLite: `mb_search_<entity>` (`n` INTEGER PRIMARY KEY, record `id`,
 *   `body`: the words joined by spaces) is the external content of the FTS5
 *   table `mb_search_<entity>_fts` (tokenizer `ascii`: the body holds only
 *   words and spaces, so its tokens are exactly the words; prefix indexes
 *   of 1 to 3 characters, without which a short last word such as `ri`
 *   merges the lists of every word it starts, ~20 times slower over 100 000
 *   records); triggers on the record table fill the first, triggers on it
 *   fill the second.
 * - PostgreSQL: `mb_search_<entity>` (`id`, `vec` tsvector of the words,
 *   `mb_search_vector`, lib/db/pg_text.ts) with a GIN index, filled by one
 *   trigger function on the record table.
 *
 * `<entity>` is the entity's id without hyphens: renames keep the names.
 *
 * @module
 */

import type { Dialect } from "../db/storage.ts";
import { columnOf, tableOf } from "./ddl.ts";
import type { EntitySchema, FieldDef } from "./types.ts";

/** The searchable fields of an entity (in field order). */
export function searchableFields(schema: EntitySchema): FieldDef[] {
  if (schema.type === "view") return [];
  return schema.fields.filter((f) =>
    f.searchable && (f.type === "string" || f.type === "text")
  );
}

/**
 * The name of an entity's search table (the FTS5 table adds `_fts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchTableOf } from "moonbase/lib/schema/search_ddl.ts";
 * assert.equal(searchTableOf({ id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" }), "mb_search_0190a1b2c3d47e5f8a9b0c1d2e3f4a5b");
 * ```
 */
export function searchTableOf(schema: Pick<EntitySchema, "id">): string {
  return `mb_search_${schema.id.replaceAll("-", "").toLowerCase()}`;
}

/** `concat_ws(' ', <fields>)` over the row `row` (`new`, `NEW`, or a table). */
export function searchSource(
  schema: EntitySchema,
  row: string | undefined,
): string {
  const cols = searchableFields(schema).map((f) =>
    row ? `${row}.${columnOf(f.name)}` : columnOf(f.name)
  );
  return `concat_ws(' ', ${cols.join(", ")})`;
}

/** The statements that create the search tables (empty) of `schema`. */
export function searchTablesSql(
  schema: EntitySchema,
  dialect: Dialect,
): string[] {
  const t = searchTableOf(schema);
  if (dialect.name === "postgres") {
    return [
      `CREATE TABLE "${t}" ("id" text PRIMARY KEY, "vec" tsvector NOT NULL)`,
      `CREATE INDEX "${t}_gin" ON "${t}" USING gin ("vec")`,
    ];
  }
  return [
    `CREATE TABLE "${t}" ("n" INTEGER PRIMARY KEY, "id" TEXT NOT NULL UNIQUE, "body" TEXT NOT NULL)`,
    `CREATE VIRTUAL TABLE "${t}_fts" USING fts5("body", content='${t}', content_rowid='n', tokenize='ascii', prefix='1 2 3')`,
    `CREATE TRIGGER "${t}_di" AFTER INSERT ON "${t}" BEGIN INSERT INTO "${t}_fts" (rowid, "body") VALUES (new."n", new."body"); END`,
    `CREATE TRIGGER "${t}_dd" AFTER DELETE ON "${t}" BEGIN INSERT INTO "${t}_fts" ("${t}_fts", rowid, "body") VALUES ('delete', old."n", old."body"); END`,
    `CREATE TRIGGER "${t}_du" AFTER UPDATE ON "${t}" BEGIN INSERT INTO "${t}_fts" ("${t}_fts", rowid, "body") VALUES ('delete', old."n", old."body"); INSERT INTO "${t}_fts" (rowid, "body") VALUES (new."n", new."body"); END`,
  ];
}

/** The statements that drop the search tables (and their triggers). */
export function dropSearchTablesSql(
  schema: Pick<EntitySchema, "id">,
  dialect: Dialect,
): string[] {
  const t = searchTableOf(schema);
  if (dialect.name === "postgres") return [`DROP TABLE IF EXISTS "${t}"`];
  return [`DROP TABLE IF EXISTS "${t}_fts"`, `DROP TABLE IF EXISTS "${t}"`];
}

/**
 * The triggers on the record table that keep the search table in step
 * (they name the searchable columns: made again after any field change).
 */
export function searchTriggersSql(
  schema: EntitySchema,
  dialect: Dialect,
): string[] {
  const t = searchTableOf(schema);
  const table = tableOf(schema.name);
  if (dialect.name === "postgres") {
    const vec = `mb_search_vector(${searchSource(schema, "NEW")})`;
    return [
      `CREATE OR REPLACE FUNCTION "${t}_sync"() RETURNS trigger LANGUAGE plpgsql AS $mb$ BEGIN IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW."id" IS DISTINCT FROM OLD."id") THEN DELETE FROM "${t}" WHERE "id" = OLD."id"; END IF; IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; INSERT INTO "${t}" ("id", "vec") VALUES (NEW."id", ${vec}) ON CONFLICT ("id") DO UPDATE SET "vec" = EXCLUDED."vec"; RETURN NEW; END $mb$`,
      `CREATE TRIGGER "${t}_sync" AFTER INSERT OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION "${t}_sync"()`,
      `CREATE TRIGGER "${t}_update" AFTER UPDATE OF ${
        ["id", ...searchableFields(schema).map((f) => f.name)].map(columnOf)
          .join(", ")
      } ON ${table} FOR EACH ROW EXECUTE FUNCTION "${t}_sync"()`,
    ];
  }
  const body = `mb_search_text(${searchSource(schema, "new")})`;
  const updated = ["id", ...searchableFields(schema).map((f) => f.name)]
    .map(columnOf).join(", ");
  return [
    `CREATE TRIGGER "${t}_ai" AFTER INSERT ON ${table} BEGIN INSERT INTO "${t}" ("id", "body") VALUES (new."id", ${body}); END`,
    `CREATE TRIGGER "${t}_au" AFTER UPDATE OF ${updated} ON ${table} BEGIN UPDATE "${t}" SET "id" = new."id", "body" = ${body} WHERE "id" = old."id"; END`,
    `CREATE TRIGGER "${t}_ad" AFTER DELETE ON ${table} BEGIN DELETE FROM "${t}" WHERE "id" = old."id"; END`,
  ];
}

/** The statements that drop the record table's search triggers. */
export function dropSearchTriggersSql(
  schema: EntitySchema,
  dialect: Dialect,
): string[] {
  const t = searchTableOf(schema);
  if (dialect.name === "postgres") {
    return [
      `DROP TRIGGER IF EXISTS "${t}_sync" ON ${tableOf(schema.name)}`,
      `DROP TRIGGER IF EXISTS "${t}_update" ON ${tableOf(schema.name)}`,
      `DROP FUNCTION IF EXISTS "${t}_sync"()`,
    ];
  }
  return ["ai", "au", "ad"].map((s) => `DROP TRIGGER IF EXISTS "${t}_${s}"`);
}

/** A new entity's search index (none without searchable fields). */
export function createSearchSql(
  schema: EntitySchema,
  dialect: Dialect,
): string[] {
  if (searchableFields(schema).length === 0) return [];
  return [
    ...searchTablesSql(schema, dialect),
    ...searchTriggersSql(schema, dialect),
  ];
}

/** What a schema PATCH does to the search index. */
export interface SearchPlan {
  /** Before the field statements (triggers naming columns that may go). */
  before: string[];
  /** After them. */
  after: string[];
  /** The search table was made anew: fill it from the existing records. */
  fill: boolean;
}

/**
 * Plans the search index of a PATCH from the schema before (`current`) and
 * after it (`next`): the triggers are made again whenever the entity has
 * searchable fields (their columns may be renamed or dropped); the table is
 * made anew (and filled) when the set of searchable fields changes, dropped
 * when none is left.
 */
export function planSearch(
  current: EntitySchema,
  next: EntitySchema,
  dialect: Dialect,
): SearchPlan {
  const was = searchableFields(current).map((f) => f.id);
  const now = searchableFields(next).map((f) => f.id);
  const plan: SearchPlan = { before: [], after: [], fill: false };
  if (was.length === 0 && now.length === 0) return plan;
  if (was.length > 0) {
    plan.before.push(...dropSearchTriggersSql(current, dialect));
  }
  const same = was.length === now.length && was.every((id, i) => id === now[i]);
  if (!same) {
    plan.after.push(...dropSearchTablesSql(current, dialect));
    if (now.length > 0) {
      plan.after.push(...searchTablesSql(next, dialect));
      plan.fill = true;
    }
  }
  if (now.length > 0) plan.after.push(...searchTriggersSql(next, dialect));
  return plan;
}

/**
 * One batch of filling a search table: the records with `after < id <=
 * upto` (`upto` undefined: no upper bound), in the database's own order of
 * ids.
 */
export function fillSearchSql(
  schema: EntitySchema,
  dialect: Dialect,
  after: string,
  upto: string | undefined,
): { sql: string; params: string[] } {
  const t = searchTableOf(schema);
  const table = tableOf(schema.name);
  const value = dialect.name === "postgres"
    ? `mb_search_vector(${searchSource(schema, undefined)})`
    : `mb_search_text(${searchSource(schema, undefined)})`;
  const col = dialect.name === "postgres" ? "vec" : "body";
  return {
    sql:
      `INSERT INTO "${t}" ("id", "${col}") SELECT "id", ${value} FROM ${table} WHERE "id" > ?${
        upto === undefined ? "" : ` AND "id" <= ?`
      }`,
    params: upto === undefined ? [after] : [after, upto],
  };
}
