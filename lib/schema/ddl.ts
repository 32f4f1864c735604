/**
 * DDL for entity tables. Table and column identifiers come from
 * `physicalName` + `ident`; index names from stable field/entity ids.
 *
 * @module
 */

import { type Dialect, ident, physicalName } from "../db/storage.ts";
import { kindOf } from "./field_types.ts";
import type { EntitySchema, FieldDef } from "./types.ts";
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
  return out;
}

/** Statement that drops an entity's table or view. */
export function dropSql(schema: EntitySchema): string {
  return `DROP ${schema.type === "view" ? "VIEW" : "TABLE"} ${
    tableOf(schema.name)
  }`;
}
