/**
 * The JSON Schemas of one entity's records as a caller meets them: `<Entity>`
 * (what a read returns, `expand` typed by the relation targets the caller
 * may read), `<Entity>Create` and `<Entity>Update` (what a write accepts:
 * required, bounds, pattern, select values, relation ids), and the
 * multipart form of a write with file parts. JSON Schema 2020-12, the
 * dialect of OpenAPI 3.1.
 *
 * @module
 */

import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { allFields } from "../schema/builtin.ts";
import { MAX_PASSWORD, MIN_PASSWORD } from "../records/codec.ts";

/** A JSON Schema object. */
export type JsonSchema = { [key: string]: unknown };

/** One entity as the description shows it to a caller. */
export interface DescribedEntity {
  /** The entity's name (its path segment). */
  readonly name: string;
  /** Its type name (lib/openapi/names.ts): `Posts`. */
  readonly typeName: string;
  readonly schema: EntitySchema;
  /** What the caller may use: list, get, add, update, delete. */
  readonly ops: ReadonlySet<string>;
}

/** What the schemas of one entity need to know of the others. */
export interface SchemaScope {
  /** The caller is an admin (may set `verified`). */
  readonly admin: boolean;
  /** Every entity described to this caller, by name. */
  readonly entities: ReadonlyMap<string, DescribedEntity>;
  /** A `$ref` to the read schema of a type name. */
  ref(typeName: string): string;
}

/** True for a field no read shows (the password of an auth entity). */
export function isWriteOnly(f: FieldDef): boolean {
  return f.name === "password" && f.system === true;
}

/** Keys a client may send but that are never written. */
const READ_ONLY = new Set(["id", "created", "updated"]);

const DATE_INPUT =
  "^\\d{4}-\\d{2}-\\d{2}(?:[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?$";

/**
 * The schema of one field's value (never null: see `nullable`). A
 * relation names its target entity only when `shows(target)` (default:
 * always): a caller's document never names an entity it cannot use.
 */
export function valueSchema(
  f: FieldDef,
  mode: "read" | "write",
  shows: (entity: string) => boolean = () => true,
): JsonSchema {
  const bounds = (lo: string, hi: string): JsonSchema => ({
    ...(f.min !== undefined && { [lo]: f.min }),
    ...(f.max !== undefined && { [hi]: f.max }),
  });
  switch (f.type) {
    case "string":
    case "text":
      return {
        type: "string",
        ...bounds("minLength", "maxLength"),
        ...(f.pattern !== undefined && { pattern: f.pattern }),
      };
    case "email":
      return { type: "string", format: "email", maxLength: 254 };
    case "url":
      return { type: "string", format: "uri", maxLength: 2048 };
    case "int":
      return { type: "integer", ...bounds("minimum", "maximum") };
    case "double":
      return { type: "number", ...bounds("minimum", "maximum") };
    case "bool":
      return { type: "boolean" };
    case "date":
      return mode === "read" ? { type: "string", format: "date-time" } : {
        type: "string",
        pattern: DATE_INPUT,
        description: "an ISO 8601 date, stored as UTC",
      };
    case "json":
      return {};
    case "select":
      return { type: "string", enum: [...(f.values ?? [])] };
    case "file":
      return {
        type: "string",
        maxLength: 255,
        description: "the stored name of a file (served at /api/files/…)",
      };
    case "files":
      return {
        type: "array",
        items: { type: "string", maxLength: 255 },
        ...bounds("minItems", "maxItems"),
        description: "the stored names of files (served at /api/files/…)",
      };
    case "relation": {
      const target = f.foreign_key && shows(f.foreign_key.entity)
        ? f.foreign_key.entity
        : undefined;
      return {
        type: "string",
        maxLength: 64,
        description: `the id of a ${target ?? "related"} record`,
        ...(target && { "x-moonbase-relation": target }),
      };
    }
  }
}

/** `schema`, or null too. */
function nullable(schema: JsonSchema): JsonSchema {
  const t = schema.type;
  if (t === undefined) return schema; // any JSON value: null included
  if (Array.isArray(schema.enum)) {
    return { ...schema, type: [t, "null"], enum: [...schema.enum, null] };
  }
  return { ...schema, type: [t, "null"] };
}

/** Whether a stored value of `f` may be null (every column of a view may). */
export function mayBeNull(f: FieldDef, view: boolean): boolean {
  if (view) return true;
  return !f.system && !f.required; // built-ins always hold a value
}

/** Whether the caller's document describes `entity` (case-insensitive). */
function shownIn(scope: Pick<SchemaScope, "entities">) {
  const names = new Set([...scope.entities.keys()].map((n) => n.toLowerCase()));
  return (entity: string) => names.has(entity.toLowerCase());
}

/** The fields a read shows. */
export function readableFields(schema: EntitySchema): FieldDef[] {
  const fields = schema.type === "view" ? schema.fields : allFields(schema);
  return fields.filter((f) => !isWriteOnly(f) && f.name !== "expand");
}

/** The fields a write may set, for this caller. */
export function writableFields(
  schema: EntitySchema,
  admin: boolean,
): FieldDef[] {
  if (schema.type === "view") return [];
  return allFields(schema).filter((f) =>
    !READ_ONLY.has(f.name) &&
    !(schema.type === "auth" && f.name === "verified" && !admin)
  );
}

/** A forward or back relation a read may expand, as the caller can see it. */
export interface Expansion {
  /** The key under `expand` (`author`, `comments_via_post`). */
  readonly key: string;
  /** The entity expanded into. */
  readonly target: DescribedEntity;
  /** A back-relation: an array of records. */
  readonly many: boolean;
}

/**
 * What `expand` may hold on `entity`'s records for this caller: each
 * relation field whose target the caller may `get`, and each relation
 * field of another entity the caller may `list` that points at `entity`
 * (`<entity>_via_<field>`).
 */
export function expansions(
  entity: DescribedEntity,
  scope: SchemaScope,
): Expansion[] {
  const out: Expansion[] = [];
  const byLower = new Map<string, DescribedEntity>();
  for (const e of scope.entities.values()) byLower.set(e.name.toLowerCase(), e);
  for (const f of readableFields(entity.schema)) {
    if (f.type !== "relation" || !f.foreign_key) continue;
    const target = byLower.get(f.foreign_key.entity.toLowerCase());
    if (target?.ops.has("get")) out.push({ key: f.name, target, many: false });
  }
  if (entity.schema.type === "view") return out;
  const self = entity.name.toLowerCase();
  for (const other of scope.entities.values()) {
    if (!other.ops.has("list") || other.schema.type === "view") continue;
    for (const f of other.schema.fields) {
      if (f.type !== "relation" || f.system) continue;
      if (f.foreign_key?.entity.toLowerCase() !== self) continue;
      out.push({
        key: `${other.name}_via_${f.name}`,
        target: other,
        many: true,
      });
    }
  }
  return out;
}

/** `<Entity>`: a record as a read returns it. */
export function readSchema(
  entity: DescribedEntity,
  scope: SchemaScope,
): JsonSchema {
  const view = entity.schema.type === "view";
  const properties: Record<string, JsonSchema> = {};
  const fields = readableFields(entity.schema);
  const shows = shownIn(scope);
  for (const f of fields) {
    const value = valueSchema(f, "read", shows);
    properties[f.name] = mayBeNull(f, view) ? nullable(value) : value;
  }
  const expand = expansions(entity, scope);
  if (expand.length > 0) {
    const inner: Record<string, JsonSchema> = {};
    for (const x of expand) {
      const ref = { $ref: scope.ref(x.target.typeName) };
      inner[x.key] = x.many ? { type: "array", items: ref } : ref;
    }
    properties.expand = {
      type: "object",
      description:
        "related records asked for with ?expand= (absent when none, or hidden from the caller)",
      properties: inner,
      additionalProperties: false,
    };
  }
  return {
    type: "object",
    title: entity.typeName,
    description: `A record of ${entity.name}${
      view ? " (a read-only view)" : ""
    }.`,
    properties,
    required: fields.map((f) => f.name),
    additionalProperties: false,
  };
}

/** Whether a create must carry a value of `f` (file fields: by multipart). */
export function requiredOnCreate(f: FieldDef): boolean {
  if (!f.required) return false;
  if (f.type === "file" || f.type === "files") return false; // multipart
  // A default fills it (`@auth`: the caller's id, for a user of the target).
  return f.default === undefined || f.default === null || f.default === "";
}

function writeProperty(
  f: FieldDef,
  shows: (entity: string) => boolean,
): JsonSchema {
  if (isWriteOnly(f)) {
    return {
      type: "string",
      minLength: MIN_PASSWORD,
      maxLength: MAX_PASSWORD,
      writeOnly: true,
      description: "hashed when stored, never returned",
    };
  }
  const value = valueSchema(f, "write", shows);
  return f.required ? value : nullable(value);
}

/** `<Entity>Create` or `<Entity>Update`: what a JSON write accepts. */
export function writeSchema(
  entity: DescribedEntity,
  mode: "create" | "update",
  scope: SchemaScope,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const shows = shownIn(scope);
  for (const f of writableFields(entity.schema, scope.admin)) {
    properties[f.name] = writeProperty(f, shows);
    if (mode === "create" && requiredOnCreate(f)) required.push(f.name);
  }
  if (mode === "update" && entity.schema.type === "auth") {
    properties.oldPassword = {
      type: "string",
      writeOnly: true,
      description:
        "the current password: a user changing their own password or email must send it",
    };
  }
  return {
    type: "object",
    title: `${entity.typeName}${mode === "create" ? "Create" : "Update"}`,
    description: mode === "create"
      ? `A new record of ${entity.name} (id, created and updated are set by the server).`
      : `The fields to change on a record of ${entity.name} (partial).`,
    properties,
    ...(required.length > 0 && { required }),
    additionalProperties: false,
  };
}

/** True when the entity has file fields (writes may be multipart). */
export function hasFiles(schema: EntitySchema): boolean {
  return schema.fields.some((f) => f.type === "file" || f.type === "files");
}

/**
 * The multipart form of a write: text parts are field values (converted by
 * field type), file parts upload files, `@jsonPayload` may carry the
 * non-file fields as one JSON object.
 */
export function multipartSchema(
  entity: DescribedEntity,
  mode: "create" | "update",
  scope: Pick<SchemaScope, "admin" | "entities">,
): JsonSchema {
  const binary = {
    type: "string",
    contentMediaType: "application/octet-stream",
  };
  const properties: Record<string, JsonSchema> = {
    "@jsonPayload": {
      type: "string",
      contentMediaType: "application/json",
      description: "the non-file fields as one JSON object",
    },
  };
  for (const f of writableFields(entity.schema, scope.admin)) {
    if (f.type === "file") properties[f.name] = binary;
    else if (f.type === "files") {
      properties[f.name] = { type: "array", items: binary };
    } else properties[f.name] = writeProperty(f, shownIn(scope));
  }
  // No `required`: a field may come as a part or in `@jsonPayload`.
  return {
    type: "object",
    description: `${
      mode === "create" ? "A new record" : "The fields to change"
    } of ${entity.name}, as form parts; file parts upload files.`,
    properties,
  };
}
