/**
 * Validation of schema input (POST/PATCH bodies of the schemas API): names
 * and fields (an entity's `rules` are validate_rules.ts's). Every problem is
 * a 400 that names the offending key.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { patternProblem, resetPatternBudget } from "./patterns.ts";
import {
  checkValue,
  COMMON_KEYS,
  FIELD_TYPES,
  isFieldType,
  MAX_RELATED,
} from "./field_types.ts";
import { RESERVED_FIELD_NAMES } from "./builtin.ts";
import { parseThumbSize } from "./thumb_sizes.ts";
import { CALLER_DEFAULT, type EntityType, type FieldDef } from "./types.ts";

const NAME = /^[A-Za-z0-9_]{1,64}$/;
const ON_DELETE = ["cascade", "set null", "restrict"] as const;

/** What validation needs to know about the rest of the system. */
export interface SchemaContext {
  /** Type of an existing entity by (case-insensitive) name, or undefined. */
  entityType(name: string): EntityType | undefined;
  /** Checks a custom rule expression; returns an error message or undefined. */
  checkExpr(expr: string): string | undefined;
}

function fail(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/**
 * Checks an entity or field name (1–64 characters of `a-z A-Z 0-9 _`,
 * reserved prefixes refused; docs/reference/schemas.md).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkName } from "moonbase/lib/schema/validate.ts";
 * checkName("posts_2024", "entity");
 * let threw = false;
 * try { checkName("posts; DROP TABLE x", "entity"); } catch { threw = true; }
 * assert.ok(threw);
 * ```
 */
export function checkName(name: unknown, what: "entity" | "field"): string {
  if (typeof name !== "string" || name === "") {
    fail(`Cannot accept ${what} name: missing`);
  }
  if (!NAME.test(name)) {
    fail(
      `Cannot accept ${what} name ${
        JSON.stringify(name.slice(0, 80))
      }: use 1-64 characters of a-z, A-Z, 0-9, _`,
    );
  }
  const prefix = /^(mb_|sqlite_|pg_)/i.exec(name)?.[1];
  if (what === "entity" && prefix) {
    fail(
      `Cannot accept entity name "${name}": the ${prefix.toLowerCase()} prefix is reserved`,
    );
  }
  return name;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function optNumber(
  f: Record<string, unknown>,
  key: string,
  where: string,
): number | undefined {
  const v = f[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) {
    fail(`Cannot accept ${where}.${key}: must be a number`);
  }
  return v;
}

function optBool(
  f: Record<string, unknown>,
  key: string,
  where: string,
): boolean {
  const v = f[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") {
    fail(`Cannot accept ${where}.${key}: must be true or false`);
  }
  return v;
}

function stringList(v: unknown, where: string, max: number): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > max) {
    fail(`Cannot accept ${where}: must be a list of 1-${max} strings`);
  }
  for (const s of v) {
    if (typeof s !== "string" || s === "" || s.length > 255) {
      fail(`Cannot accept ${where}: every entry must be a non-empty string`);
    }
  }
  if (new Set(v).size !== v.length) {
    fail(`Cannot accept ${where}: entries must be unique`);
  }
  return v as string[];
}

/** A media type `type/subtype` or `type/*` (RFC 6838 names), no parameters. */
const MEDIA_TYPE =
  /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126})$/i;

// A file field's `mime_types`: every entry a media type (`image/png`) or a
// wildcard of one type (`image/*`). `*/*` would match nothing (a file's type
// is never `*`): to accept any type, `mime_types` is left out.
function mimeTypes(v: unknown, where: string): string[] {
  const list = stringList(v, where, 100);
  for (const t of list) {
    if (t === "*/*") {
      fail(
        `Cannot accept ${where}: "*/*" is not a file type; leave mime_types out (or null) to accept any type, or name types such as "image/*" or "application/pdf"`,
      );
    }
    if (!MEDIA_TYPE.test(t)) {
      fail(
        `Cannot accept ${where}: ${
          JSON.stringify(t.slice(0, 64))
        } is not a media type; write type/subtype ("image/png") or type/* ("image/*")`,
      );
    }
  }
  if (new Set(list.map((t) => t.toLowerCase())).size !== list.length) {
    fail(`Cannot accept ${where}: entries must be unique`);
  }
  return list;
}

// A file field's `thumbs`: the thumbnail sizes made for anyone who may read
// the file (lib/schema/thumb_sizes.ts); at most 20.
function thumbSizes(v: unknown, where: string): string[] {
  const list = stringList(v, where, 20);
  for (const t of list) {
    const size = parseThumbSize(t);
    if (typeof size === "string") fail(`Cannot accept ${where}: ${size}`);
  }
  return list;
}

/**
 * Validates one field object. `id` is the field's id (kept or newly assigned).
 * `self` is the name of the entity being defined (a relation may point to it).
 */
export function validateField(
  raw: unknown,
  id: string,
  ctx: SchemaContext,
  self: string,
): FieldDef {
  if (!isObject(raw)) fail("Cannot accept field: must be an object");
  const name = checkName(raw.name, "field");
  const where = `field "${name}"`;
  if (RESERVED_FIELD_NAMES.has(name.toLowerCase())) {
    fail(`Cannot accept ${where}: the name is reserved for a built-in field`);
  }
  if (!isFieldType(raw.type)) {
    fail(
      `Cannot accept ${where}.type ${JSON.stringify(raw.type)}: use one of ${
        Object.keys(FIELD_TYPES).join(", ")
      }`,
    );
  }
  const spec = FIELD_TYPES[raw.type];
  for (const key of Object.keys(raw)) {
    if (
      !COMMON_KEYS.includes(key) && !spec.options.includes(key) && key !== "op"
    ) {
      fail(`Cannot accept ${where}: unknown key "${key}" for type ${raw.type}`);
    }
  }
  const field: FieldDef = {
    id,
    name,
    type: raw.type,
    required: optBool(raw, "required", where),
    unique: optBool(raw, "unique", where),
  };
  if (optBool(raw, "index", where)) {
    if (!spec.uniqueable) {
      fail(`Cannot accept ${where}.index: not for type ${raw.type}`);
    }
    field.index = true;
  }
  // Only string and text take the key (options of FIELD_TYPES).
  if (optBool(raw, "searchable", where)) field.searchable = true;
  if (field.unique && !spec.uniqueable) {
    fail(`Cannot accept ${where}.unique: not for type ${raw.type}`);
  }
  const min = optNumber(raw, "min", where), max = optNumber(raw, "max", where);
  if (min !== undefined) field.min = min;
  if (max !== undefined) field.max = max;
  if (min !== undefined && max !== undefined && min > max) {
    fail(`Cannot accept ${where}: min > max`);
  }
  if (raw.pattern !== undefined && raw.pattern !== null && raw.pattern !== "") {
    if (typeof raw.pattern !== "string") {
      fail(`Cannot accept ${where}.pattern: must be a regular expression`);
    }
    const problem = patternProblem(raw.pattern);
    if (problem !== undefined) {
      fail(`Cannot accept ${where}.pattern: ${problem}`);
    }
    field.pattern = raw.pattern;
  }
  if (raw.type === "select") {
    field.values = stringList(raw.values, `${where}.values`, 500);
  }
  if (raw.mime_types !== undefined && raw.mime_types !== null) {
    field.mime_types = mimeTypes(raw.mime_types, `${where}.mime_types`);
  }
  if (raw.thumbs !== undefined && raw.thumbs !== null) {
    field.thumbs = thumbSizes(raw.thumbs, `${where}.thumbs`);
  }
  if (raw.type === "relation") {
    field.foreign_key = foreignKey(raw.foreign_key, where, ctx, self);
    if (optBool(raw, "multiple", where)) {
      field.multiple = true;
      multipleOptions(field, where);
    } else if (field.max !== undefined) {
      fail(
        `Cannot accept ${where}.max: only a multiple relation ("multiple": true) has a maximum (of record ids)`,
      );
    }
  }
  if (raw.default === CALLER_DEFAULT && raw.type === "relation") {
    const target = field.foreign_key!.entity;
    if (ctx.entityType(target) !== "auth") {
      fail(
        `Cannot accept ${where}.default: "${CALLER_DEFAULT}" (the caller) needs a relation to an auth entity; ${target} is not one`,
      );
    }
    field.default = CALLER_DEFAULT;
  } else if (raw.default !== undefined && raw.default !== null) {
    if (raw.type === "relation") {
      fail(
        `Cannot accept ${where}.default: a relation takes only "${CALLER_DEFAULT}" (the caller, for a relation to an auth entity)`,
      );
    }
    if (raw.type === "file" || raw.type === "files") {
      fail(`Cannot accept ${where}.default: not for type ${raw.type}`);
    }
    resetPatternBudget(); // a default is checked on its own
    const checked = checkValue(field, raw.default);
    if (!checked.ok) fail(`Cannot accept ${where}.default: ${checked.message}`);
    field.default = checked.value;
  }
  return field;
}

// A multiple relation: no unique index (a list is no key), `max` a count
// of ids within MAX_RELATED.
function multipleOptions(field: FieldDef, where: string): void {
  if (field.unique) {
    fail(
      `Cannot accept ${where}.unique: not for a multiple relation (it holds a list of ids)`,
    );
  }
  const max = field.max;
  if (
    max !== undefined &&
    (!Number.isInteger(max) || max < 1 || max > MAX_RELATED)
  ) {
    fail(
      `Cannot accept ${where}.max: the most record ids the field holds, an integer from 1 to ${MAX_RELATED}`,
    );
  }
}

function foreignKey(
  raw: unknown,
  where: string,
  ctx: SchemaContext,
  self: string,
): NonNullable<FieldDef["foreign_key"]> {
  if (!isObject(raw)) {
    fail(`Cannot accept ${where}.foreign_key: must be {entity, on_delete}`);
  }
  for (const key of Object.keys(raw)) {
    if (key !== "entity" && key !== "on_delete") {
      fail(`Cannot accept ${where}.foreign_key: unknown key "${key}"`);
    }
  }
  const entity = typeof raw.entity === "string" ? raw.entity : "";
  const type = entity.toLowerCase() === self.toLowerCase()
    ? "base"
    : ctx.entityType(entity);
  if (!type || type === "view" || entity.toLowerCase().startsWith("mb_")) {
    fail(
      `Cannot accept ${where}.foreign_key.entity: no base or auth entity named ${
        JSON.stringify(entity)
      }`,
    );
  }
  const onDelete = raw.on_delete ?? "set null";
  if (!ON_DELETE.includes(onDelete as typeof ON_DELETE[number])) {
    fail(
      `Cannot accept ${where}.foreign_key.on_delete: use one of ${
        ON_DELETE.join(", ")
      }`,
    );
  }
  return { entity, on_delete: onDelete as typeof ON_DELETE[number] };
}

export { checkViewQuery } from "./view_query.ts";
