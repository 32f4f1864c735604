/**
 * Built-in fields of `base` and `auth` entities.
 *
 * @module
 */

import type { EntitySchema, EntityType, FieldDef } from "./types.ts";

function sys(
  name: string,
  type: FieldDef["type"],
  required: boolean,
  unique = false,
): FieldDef {
  return { id: name, name, type, required, unique, system: true };
}

const BASE: readonly FieldDef[] = [
  sys("id", "string", true, true),
  sys("created", "date", true),
  sys("updated", "date", true),
];

const AUTH: readonly FieldDef[] = [
  sys("email", "email", true, true),
  sys("password", "string", true),
  { ...sys("verified", "bool", false), default: false },
];

/** Names no declared field may use (case-insensitive). */
export const RESERVED_FIELD_NAMES: ReadonlySet<string> = new Set(
  [...BASE, ...AUTH].map((f) => f.name),
);

/**
 * Built-in fields of an entity type (`view` has none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { builtinFields } from "moonbase/lib/schema/builtin.ts";
 * assert.ok(builtinFields("auth").some((f) => f.name === "password"));
 * ```
 */
export function builtinFields(type: EntityType): readonly FieldDef[] {
  if (type === "view") return [];
  return type === "auth" ? [...BASE, ...AUTH] : BASE;
}

/** Every field of an entity: built-ins first, then declared ones. */
export function allFields(schema: EntitySchema): FieldDef[] {
  return [
    ...builtinFields(schema.type),
    ...schema.fields.filter((f) => !f.system),
  ];
}
