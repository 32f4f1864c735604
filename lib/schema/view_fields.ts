/**
 * The fields of a view: its columns as the database reports them, typed
 * from the entity field each column copies, else from the type the database
 * gives the column, else `json` (any JSON value).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { ViewColumn } from "./view_inspect.ts";
import type { FieldDef, FieldType } from "./types.ts";

/** An entity field a view column can copy, with its entity's name. */
export interface OriginField {
  entity: string;
  field: FieldDef;
  /** The entity is a view (its field names its own origin, or none). */
  view?: boolean;
}

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/** Database type names (PostgreSQL `format_type`, SQLite declared types) → field types. */
const DB_TYPES: Record<string, FieldType> = {
  bigint: "int",
  integer: "int",
  smallint: "int",
  "double precision": "double",
  real: "double",
  numeric: "double",
  boolean: "bool",
  text: "string",
  "character varying": "string",
  character: "string",
  name: "string",
  json: "json",
  jsonb: "json",
  date: "date",
  "timestamp with time zone": "date",
  "timestamp without time zone": "date",
};

/** File and relation columns are plain values in a view (no file serving, no references). */
const COPY_AS: Partial<Record<FieldType, FieldType>> = {
  file: "string",
  files: "json",
  relation: "string",
};

function typed(
  col: ViewColumn,
  originOf: (table: string, column: string) => OriginField | undefined,
): FieldDef {
  const out: FieldDef = {
    id: col.name,
    name: col.name,
    type: "json",
    required: false,
    unique: false,
  };
  const from = col.table && col.column
    ? originOf(col.table, col.column)
    : undefined;
  if (from) {
    const f = from.field;
    // A multiple relation's list of ids is JSON in a view.
    out.type = f.type === "relation" && f.multiple
      ? "json"
      : COPY_AS[f.type] ?? f.type;
    if (f.type === "select" && f.values) out.values = [...f.values];
    // A view's field names its own origin (or has none: it is computed).
    const origin = from.view ? f.origin : `${from.entity}.${f.name}`;
    if (origin) out.origin = origin;
    return out;
  }
  const db = col.dbType?.toLowerCase();
  if (db && !col.table && Object.hasOwn(DB_TYPES, db)) out.type = DB_TYPES[db];
  return out;
}

/**
 * The refusal of a view whose query returns two columns named `name`, the
 * same on both databases (PostgreSQL refuses the view, SQLite renames the
 * second `name:1`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { repeatedColumn } from "moonbase/lib/schema/view_fields.ts";
 * assert.equal(
 *   repeatedColumn("id").message,
 *   "Cannot accept view_query: the view's columns must have distinct names: id appears more than once; name them with AS (e.g. b.id AS b_id)",
 * );
 * ```
 */
export function repeatedColumn(name: string): MoonbaseError {
  const n = name.slice(0, 64);
  return new MoonbaseError(
    "invalid",
    `Cannot accept view_query: the view's columns must have distinct names: ${n} appears more than once; name them with AS (e.g. b.${n} AS b_${n})`,
  );
}

/**
 * A column name that appears more than once (case does not matter; SQLite
 * names the repeats `id:1`, `id:2`), else undefined.
 */
function repeatedName(names: readonly string[]): string | undefined {
  const lower = new Set(names.map((n) => n.toLowerCase()));
  const seen = new Set<string>();
  for (const name of names) {
    // `id:1` is SQLite's name for a second `id` (when there is an `id`).
    const base = /^(.+):\d+$/.exec(name)?.[1];
    const plain = base !== undefined && lower.has(base.toLowerCase())
      ? base
      : name;
    if (seen.has(plain.toLowerCase())) return plain;
    seen.add(plain.toLowerCase());
  }
  return undefined;
}

/**
 * Fields of a just-created view from its columns; every column must be named
 * with `a-z A-Z 0-9 _` and one must be `id`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { viewFieldsOf } from "moonbase/lib/schema/view_fields.ts";
 * const title = { id: "f1", name: "title", type: "string" as const, required: true, unique: false };
 * const fields = viewFieldsOf(
 *   [{ name: "id" }, { name: "title", table: "posts", column: "title" }, { name: "n", dbType: "bigint" }],
 *   (t, c) => t === "posts" && c === "title" ? { entity: "posts", field: title } : undefined,
 * );
 * assert.deepEqual(fields.map((f) => f.type), ["json", "string", "int"]);
 * assert.equal(fields[1].origin, "posts.title");
 * ```
 */
export function viewFieldsOf(
  columns: readonly ViewColumn[],
  originOf: (table: string, column: string) => OriginField | undefined,
): FieldDef[] {
  const names = columns.map((c) => c.name);
  const twice = repeatedName(names);
  if (twice !== undefined) throw repeatedColumn(twice);
  const odd = names.find((n) => !/^[A-Za-z0-9_]{1,63}$/.test(n));
  if (odd !== undefined) {
    bad(
      `Cannot create view: column ${
        JSON.stringify(odd.slice(0, 64))
      } must be named with a-z, A-Z, 0-9, _ (use AS)`,
    );
  }
  if (!names.includes("id")) {
    bad("Cannot create view: view_query must return an id column");
  }
  return columns.map((c) => typed(c, originOf));
}
