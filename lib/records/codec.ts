/**
 * Turning request input into column values (with per-field checks) and rows
 * back into JSON records.
 *
 * @module
 */

import { type FieldErrors, invalidFields, MoonbaseError } from "../errors.ts";
import {
  type ColumnKind,
  type Dialect,
  physicalName,
  type Row,
  type SqlValue,
} from "../db/storage.ts";
import { checkValue, kindOf } from "../schema/field_types.ts";
import { resetPatternBudget } from "../schema/patterns.ts";
import { type RowDecoder, rowDecoder } from "../db/shapes.ts";
import { allFields } from "../schema/builtin.ts";
import {
  CALLER_DEFAULT,
  type EntitySchema,
  type FieldDef,
} from "../schema/types.ts";
import type { AuthValue } from "../caller.ts";

/** Keys a client may send but that are never written. */
export const READ_ONLY_KEYS: ReadonlySet<string> = new Set([
  "id",
  "created",
  "updated",
]);

/** Shortest password accepted. */
export const MIN_PASSWORD = 8;
/** Longest password accepted (bounds hashing cost). */
export const MAX_PASSWORD = 1024;

/** A JSON record. */
export type RecordData = Record<string, unknown>;

/** Fields a client may write. */
export function writableFields(schema: EntitySchema): FieldDef[] {
  return allFields(schema).filter((f) => !READ_ONLY_KEYS.has(f.name));
}

/** Checked input: field name → normalized JSON value (password still plain). */
export type CheckedInput = Map<string, unknown>;

function isBlank(v: unknown): boolean {
  return v === null || v === undefined || v === "";
}

function isEmptyList(v: unknown): boolean {
  return Array.isArray(v) && v.length === 0;
}

/**
 * The default of a field for a record `caller` creates: `"@auth"` (a
 * relation to an auth entity) is the caller's id when the caller is a user
 * of that entity, else empty; any other default is itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultOf } from "moonbase/lib/records/codec.ts";
 * const owner = {
 *   id: "f1", name: "owner", type: "relation" as const, required: false, unique: false,
 *   default: "@auth", foreign_key: { entity: "users", on_delete: "set null" as const },
 * };
 * const user = { id: "u1", entity: "users", type: "user" as const, user: { id: "u1" } };
 * assert.equal(defaultOf(owner, user), "u1");
 * assert.equal(defaultOf(owner, { ...user, entity: "staff" }), undefined);
 * assert.equal(defaultOf(owner, undefined), undefined);
 * ```
 */
export function defaultOf(
  field: FieldDef,
  caller: AuthValue | undefined,
): unknown {
  if (field.default !== CALLER_DEFAULT || field.type !== "relation") {
    return field.default;
  }
  const target = field.foreign_key?.entity.toLowerCase();
  if (caller?.type !== "user" || caller.entity.toLowerCase() !== target) {
    return undefined;
  }
  return field.multiple ? [caller.id] : caller.id;
}

/**
 * Checks a write body against the schema. `create` applies defaults (for
 * `caller`: see {@link defaultOf}) and required checks for every field;
 * `update` only for the keys present. Unknown keys are a 400 naming them;
 * read-only keys are ignored.
 */
export function checkInput(
  schema: EntitySchema,
  input: Record<string, unknown>,
  mode: "create" | "update",
  caller?: AuthValue,
): CheckedInput {
  const byName = new Map(writableFields(schema).map((f) => [f.name, f]));
  const unknown = Object.keys(input).filter((k) =>
    !READ_ONLY_KEYS.has(k) && !byName.has(k)
  );
  if (unknown.length > 0) {
    const fields: FieldErrors = {};
    for (const k of unknown.slice(0, 20)) {
      fields[k.slice(0, 64)] = {
        code: "unknown_field",
        message: "No such field",
      };
    }
    throw invalidFields(fields, "Cannot accept record: unknown fields");
  }
  const out: CheckedInput = new Map();
  const errors: FieldErrors = {};
  resetPatternBudget(); // one record's pattern work is bounded
  for (const field of byName.values()) {
    const present = Object.hasOwn(input, field.name);
    if (!present && mode === "update") continue;
    let value = present ? input[field.name] : defaultOf(field, caller);
    if (value === undefined) value = null;
    if (field.multiple && (isBlank(value) || isEmptyList(value))) {
      // A multiple relation holds a list, empty when it names no record.
      if (field.required) {
        errors[field.name] = {
          code: "required",
          message: "Must name at least one record",
        };
      } else out.set(field.name, []);
      continue;
    }
    if (isBlank(value)) {
      // Required files are checked once uploads are known (lib/records/file_values.ts).
      const isFile = field.type === "file" || field.type === "files";
      if (field.required && !isFile) {
        errors[field.name] = {
          code: "required",
          message: "Missing required value",
        };
      } else out.set(field.name, null);
      continue;
    }
    if (field.name === "password" && field.system) {
      if (
        typeof value !== "string" || value.length < MIN_PASSWORD ||
        value.length > MAX_PASSWORD
      ) {
        errors.password = {
          code: "invalid_password",
          message:
            `Must be a string of ${MIN_PASSWORD}-${MAX_PASSWORD} characters`,
        };
      } else out.set("password", value);
      continue;
    }
    const checked = checkValue(field, value);
    if (checked.ok) out.set(field.name, checked.value);
    else errors[field.name] = { code: checked.code, message: checked.message };
  }
  if (schema.type === "auth" && mode === "create" && !out.has("verified")) {
    out.set("verified", false);
  }
  if (Object.keys(errors).length > 0) throw invalidFields(errors);
  return out;
}

/** Encodes checked values to column → SQL value. */
export function encodeValues(
  schema: EntitySchema,
  values: CheckedInput,
  dialect: Dialect,
): Map<string, SqlValue> {
  const fields = new Map(allFields(schema).map((f) => [f.name, f]));
  const out = new Map<string, SqlValue>();
  for (const [name, value] of values) {
    const f = fields.get(name);
    if (!f) {
      throw new MoonbaseError(
        "invalid",
        `Cannot accept record: no field ${name}`,
      );
    }
    out.set(physicalName(name), dialect.encode(kindOf(f), value));
  }
  return out;
}

/**
 * Decodes a stored row to a JSON record (never with the password).
 * View rows are returned as the database gives them.
 */
export function decodeRow(
  schema: EntitySchema,
  row: Row,
  dialect: Dialect,
): RecordData {
  if (schema.type === "view") return decodeViewRow(schema, row, dialect);
  const { plan, decoder } = readPlan(schema);
  // A full row (every read): one generated object literal.
  const full = decoder(row, dialect);
  if (full) return full;
  const out: RecordData = {};
  for (const [name, col, kind] of plan) {
    const v = row[col];
    if (v !== undefined || Object.hasOwn(row, col)) {
      out[name] = dialect.decode(kind, v);
    }
  }
  return out;
}

const viewPlans = new WeakMap<EntitySchema, [string, ColumnKind][]>();

/**
 * A view row as the database gives it, except columns copied from a bool or
 * JSON field (their `origin`), which SQLite stores as 0/1 and text.
 */
function decodeViewRow(
  schema: EntitySchema,
  row: Row,
  dialect: Dialect,
): RecordData {
  const { password: _hidden, ...rest } = row;
  if (dialect.name !== "sqlite") return rest;
  let plan = viewPlans.get(schema);
  if (!plan) {
    plan = schema.fields
      .filter((f) =>
        f.origin && f.name !== "__proto__" && kindOf(f) !== "text" &&
        kindOf(f) !== "int"
      )
      .map((f) => [f.name, kindOf(f)]);
    viewPlans.set(schema, plan);
  }
  for (const [name, kind] of plan) {
    if (Object.hasOwn(rest, name)) {
      rest[name] = dialect.decode(kind, rest[name]);
    }
  }
  return rest;
}

interface ReadPlan {
  plan: [string, string, ColumnKind][];
  /** Undefined for a partial row (or a `__proto__` field): take the loop. */
  decoder: RowDecoder<ColumnKind>;
}

const plans = new WeakMap<EntitySchema, ReadPlan>();

/**
 * Field name, column and kind of every readable field, and their decoder
 * (cached per schema object).
 */
function readPlan(schema: EntitySchema): ReadPlan {
  let p = plans.get(schema);
  if (!p) {
    const plan = allFields(schema)
      .filter((f) => !(f.name === "password" && f.system))
      .map((f): [string, string, ColumnKind] => [
        f.name,
        physicalName(f.name),
        kindOf(f),
      ]);
    p = { plan, decoder: rowDecoder(plan) };
    plans.set(schema, p);
  }
  return p;
}
