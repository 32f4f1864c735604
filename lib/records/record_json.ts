/**
 * A record as JSON text built by PostgreSQL, the same record `decodeRow`
 * gives once parsed: what a fused update or delete appends as its change's
 * bodies without reading the record first (lib/records/fused_writes.ts).
 *
 * Each readable field (never the password) under its name, in the order of
 * `decodeRow`; `row_to_json` writes compact JSON. Column kinds map as the
 * PostgreSQL dialect decodes them: text, bigint, boolean and jsonb as they
 * are (a bigint past 2^53 parses to the same number `Number()` gives); a
 * double as a JSON number with NaN and ±Infinity as null and -0 as 0 (what
 * `JSON.stringify` makes of them).
 *
 * @module
 */

import { type ColumnKind, ident, physicalName } from "../db/storage.ts";
import { kindOf } from "../schema/field_types.ts";
import { allFields } from "../schema/builtin.ts";
import type { EntitySchema } from "../schema/types.ts";
import { tableOf } from "../schema/ddl.ts";

/** PostgreSQL's longest identifier (an alias longer is cut, with a notice). */
const MAX_ALIAS_BYTES = 63;

const cached = new WeakMap<EntitySchema, string | null>();

function value(kind: ColumnKind, column: string): string {
  if (kind !== "double") return column;
  return `CASE WHEN ${column} IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE ${column} + 0 END`;
}

/**
 * The SQL of the record of `schema`'s table row in scope (its columns
 * qualified by the table's name) as JSON text, or undefined when a field
 * name cannot be an alias (longer than 63 bytes, or `__proto__`, which
 * `decodeRow` cannot set as a key): such an entity's writes are not fused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { recordJsonSql } from "moonbase/lib/records/record_json.ts";
 * import type { EntitySchema } from "moonbase/lib/schema/types.ts";
 * const schema = {
 *   id: "t1", name: "tasks", type: "base", view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "",
 *   fields: [{ name: "done", type: "bool" }],
 * } as unknown as EntitySchema;
 * assert.equal(
 *   recordJsonSql(schema),
 *   `(SELECT row_to_json("mb:r") FROM (SELECT "tasks"."id" AS "id", "tasks"."created" AS "created", "tasks"."updated" AS "updated", "tasks"."done" AS "done") AS "mb:r")::text`,
 * );
 * ```
 */
export function recordJsonSql(schema: EntitySchema): string | undefined {
  let sql = cached.get(schema);
  if (sql === undefined) {
    sql = build(schema);
    cached.set(schema, sql);
  }
  return sql ?? undefined;
}

function build(schema: EntitySchema): string | null {
  if (schema.type === "view") return null;
  const table = tableOf(schema.name);
  const items: string[] = [];
  const encoder = new TextEncoder();
  for (const f of allFields(schema)) {
    if (f.name === "password" && f.system) continue;
    if (
      f.name === "__proto__" || !/^[A-Za-z0-9_]+$/.test(f.name) ||
      encoder.encode(f.name).length > MAX_ALIAS_BYTES
    ) {
      return null;
    }
    const column = `${table}.${ident(physicalName(f.name))}`;
    items.push(`${value(kindOf(f), column)} AS ${ident(f.name)}`);
  }
  return `(SELECT row_to_json("mb:r") FROM (SELECT ${
    items.join(", ")
  }) AS "mb:r")::text`;
}
