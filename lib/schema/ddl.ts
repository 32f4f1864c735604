/**
 * DDL for entity tables. Table and column identifiers come from
 * `physicalName` + `ident`; index names from stable field/entity ids.
 *
 * @module
 */

import { type Dialect, ident, physicalName } from "../db/storage.ts";
import { kindOf } from "./field_types.ts";
import type { EntitySchema, FieldDef, IndexDef } from "./types.ts";
import { builtinFields } from "./builtin.ts";

/** Quoted table identifier of an entity name. */
export function tableOf(name: string): string {
  return ident(physicalName(name));
}

/** Quoted column identifier of a field name. */
export function columnOf(name: string): string {
  return ident(physicalName(name));
}

function hex(id: string): string {
  return id.replaceAll("-", "").toLowerCase();
}

/** Name of the unique index of a field. */
export function uniqueIndexOf(schema: EntitySchema, field: FieldDef): string {
  return field.system
    ? `mbu_${hex(schema.id)}_${field.name}`
    : `mbu_${hex(field.id)}`;
}

/** Name of the plain index of a relation field. */
export function relationIndexOf(field: FieldDef): string {
  return `mbr_${hex(field.id)}`;
}

/** Name of an entity-level index (from its id: stable across renames). */
export function indexNameOf(index: IndexDef): string {
  return `mbx_${hex(index.id)}`;
}

/** Built-ins that are never NULL: lists order them without NULLS FIRST. */
const NEVER_NULL = new Set(["id", "created", "updated"]);

/**
 * The statement that creates an entity-level index. On PostgreSQL each
 * column is `NULLS FIRST` (as lists order it) but for the never-NULL
 * built-ins, so that a list's ORDER BY can walk the index either way.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { indexSql } from "moonbase/lib/schema/ddl.ts";
 * import { sqliteDialect } from "moonbase/lib/db/sqlite.ts";
 * const idx = { id: "0a1b2c3d4e5f6071", fields: ["tag", "n"], unique: true };
 * assert.equal(
 *   indexSql({ name: "items" }, idx, sqliteDialect),
 *   'CREATE UNIQUE INDEX "mbx_0a1b2c3d4e5f6071" ON "items" ("tag", "n")',
 * );
 * ```
 */
export function indexSql(
  schema: Pick<EntitySchema, "name">,
  index: IndexDef,
  dialect: Dialect,
): string {
  const cols = index.fields.map((entry) => {
    const { name, fold } = indexEntry(entry);
    if (fold) {
      // As rules compile fold(<field>) (lib/rules/sql_column.ts).
      return dialect.name === "postgres"
        ? `(mb_fold(${columnOf(name)}) COLLATE "C")`
        : `(mb_fold(${columnOf(name)}))`;
    }
    return columnOf(name) +
      (dialect.name === "postgres" && !NEVER_NULL.has(name)
        ? " NULLS FIRST"
        : "");
  });
  return `CREATE ${index.unique ? "UNIQUE " : ""}INDEX ${
    ident(indexNameOf(index))
  } ON ${tableOf(schema.name)} (${cols.join(", ")})`;
}

/**
 * An entry of an index's `fields`: a field name, or `fold(<name>)` for the
 * field's case- and accent-insensitive form.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { indexEntry } from "moonbase/lib/schema/ddl.ts";
 * assert.deepEqual(indexEntry("fold(title)"), { name: "title", fold: true });
 * assert.deepEqual(indexEntry("title"), { name: "title", fold: false });
 * ```
 */
export function indexEntry(entry: string): { name: string; fold: boolean } {
  const m = /^fold\((.*)\)$/.exec(entry);
  return m ? { name: m[1], fold: true } : { name: entry, fold: false };
}

/** Column definition of a field. */
export function columnSql(field: FieldDef, dialect: Dialect): string {
  const col = `${columnOf(field.name)} ${dialect.columnType(kindOf(field))}`;
  if (field.system) {
    if (field.name === "id") return `${col} PRIMARY KEY`;
    if (field.name === "verified") {
      return `${col} NOT NULL DEFAULT ${
        dialect.name === "sqlite" ? "0" : "false"
      }`;
    }
    return `${col} NOT NULL`;
  }
  // Relations are enforced by Moonbase inside each write transaction (so that
  // cascades also remove files and columns can be dropped on SQLite).
  return col;
}

/** Index statements a field needs. */
export function fieldIndexSql(
  schema: EntitySchema,
  field: FieldDef,
  dialect: Dialect,
): string[] {
  const out: string[] = [];
  const table = tableOf(schema.name);
  if (field.type === "relation" && field.multiple) {
    // A list of ids: on PostgreSQL a GIN index serves "holds this id"
    // (`@>`: back-relations, on_delete, `includes` in rules); SQLite has no
    // index over JSON array elements, so those read the table.
    if (dialect.name === "postgres") {
      out.push(
        `CREATE INDEX ${ident(relationIndexOf(field))} ON ${table} USING GIN (${
          columnOf(field.name)
        })`,
      );
    }
    return out;
  }
  // Lists order NULL first ascending; PostgreSQL indexes must say so to serve that order.
  const col = columnOf(field.name) +
    (dialect.name === "postgres" ? " NULLS FIRST" : "");
  if (field.unique && field.name !== "id") {
    out.push(
      `CREATE UNIQUE INDEX ${
        ident(uniqueIndexOf(schema, field))
      } ON ${table} (${col})`,
    );
  } else if (field.type === "relation" || field.index) {
    out.push(
      `CREATE INDEX ${ident(relationIndexOf(field))} ON ${table} (${col})`,
    );
  }
  return out;
}

/**
 * Statements that create an entity's table (or view) with its indexes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createSql } from "moonbase/lib/schema/ddl.ts";
 * import { sqliteDialect } from "moonbase/lib/db/sqlite.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const sql = createSql({
 *   id: "0190", name: "posts", type: "base", view_query: "", has_api: true, is_system: false,
 *   created: "", updated: "", rules: adminOnlyRules(),
 *   fields: [{ id: "ab12", name: "title", type: "string", required: true, unique: true }],
 * }, sqliteDialect);
 * assert.ok(sql[0].startsWith('CREATE TABLE "posts"') && sql.length === 3);
 * ```
 */
export function createSql(
  schema: EntitySchema,
  dialect: Dialect,
  tableName?: string,
): string[] {
  const table = tableName ? ident(tableName) : tableOf(schema.name);
  if (schema.type === "view") {
    return [`CREATE VIEW ${table} AS ${schema.view_query}`];
  }
  const fields = [
    ...builtinFields(schema.type),
    ...schema.fields.filter((f) => !f.system),
  ];
  const out = [
    `CREATE TABLE ${table} (${
      fields.map((f) => columnSql(f, dialect)).join(", ")
    })`,
  ];
  if (tableName) return out;
  out.push(
    `CREATE INDEX ${ident(`mbc_${hex(schema.id)}`)} ON ${table} ("created")`,
  );
  for (const f of fields) out.push(...fieldIndexSql(schema, f, dialect));
  for (const idx of schema.indexes ?? []) {
    out.push(indexSql(schema, idx, dialect));
  }
  return out;
}

/** Statement that drops an entity's table or view. */
export function dropSql(schema: EntitySchema): string {
  return `DROP ${schema.type === "view" ? "VIEW" : "TABLE"} ${
    tableOf(schema.name)
  }`;
}
