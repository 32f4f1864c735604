/**
 * A new entity's schema from a create request: every key checked, fields
 * validated, nothing written. The registry claims the name and writes it.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { newFieldId, uuidv7 } from "../ids.ts";
import {
  checkName,
  checkViewQuery,
  type SchemaContext,
  validateField,
} from "./validate.ts";
import { validateRules } from "./validate_rules.ts";
import type { EntitySchema } from "./types.ts";
import { checkSchemaKeys } from "./keys.ts";
import { checkIndexes, newIndexes } from "./indexes.ts";
import { checkAuthOptions, defaultAuthOptions } from "./auth_options.ts";

/**
 * Ids a change may keep from its input (an import, a migration file), so
 * that the same schema has the same ids on every server: an entity, field
 * or index given with an id it does not have yet is created under that id
 * when the id is well formed and free (`entityFree`: no entity has it;
 * `indexFree`: no index of any entity has it).
 */
export interface KeptIds {
  entityFree(id: string): boolean;
  indexFree(id: string): boolean;
}

/** A field or index id as the server makes them: 16 hex characters. */
export const PART_ID = /^[0-9a-f]{16}$/;
/** An entity id as the server makes them (a UUID). */
const ENTITY_ID =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

function checkBool(v: unknown, key: string): boolean {
  if (typeof v !== "boolean") {
    bad(`Cannot accept ${key}: must be true or false`);
  }
  return v;
}

/**
 * The schema a create request describes; `claim(name)` runs once the name is
 * valid (the registry refuses a taken name there, before the rest is checked).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newSchema } from "moonbase/lib/schema/new_schema.ts";
 * const ctx = { entityType: () => undefined, checkExpr: () => undefined };
 * const s = newSchema({ name: "posts", type: "base", fields: [] }, ctx, () => {});
 * assert.deepEqual([s.name, s.type, s.fields, s.has_api], ["posts", "base", [], true]);
 * assert.throws(() => newSchema({ name: "posts", type: "base" }, ctx, () => {}), /fields is required/);
 * ```
 */
export function newSchema(
  input: Record<string, unknown>,
  ctx: SchemaContext,
  claim: (name: string) => void,
  keep?: KeptIds,
): EntitySchema {
  checkSchemaKeys(input, "create");
  const name = checkName(input.name, "entity");
  claim(name);
  const type = input.type;
  if (type !== "base" && type !== "auth" && type !== "view") {
    bad(`Cannot create entity: type must be base, auth or view`);
  }
  const now = new Date().toISOString();
  const given = input.id;
  const schema: EntitySchema = {
    id: keep && typeof given === "string" && ENTITY_ID.test(given) &&
        keep.entityFree(given)
      ? given
      : uuidv7(),
    name,
    type,
    fields: [],
    view_query: "",
    rules: validateRules(input.rules, ctx),
    has_api: input.has_api === undefined
      ? true
      : checkBool(input.has_api, "has_api"),
    is_system: false,
    created: now,
    updated: now,
  };
  if (type !== "auth" && input.auth !== undefined) {
    bad("Cannot create entity: only auth entities have auth");
  }
  if (type === "view") {
    if (Array.isArray(input.fields) && input.fields.length > 0) {
      bad("Cannot create entity: a view has no fields");
    }
    checkIndexes(input.indexes, schema);
    schema.view_query = checkViewQuery(input.view_query);
    return schema;
  }
  const fields = input.fields;
  if (!Array.isArray(fields)) {
    bad(
      `Cannot create entity: fields is required for ${type} entities (a list; [] for none)`,
    );
  }
  if (fields.length > 200) bad("Cannot create entity: at most 200 fields");
  const seen = new Set<string>();
  for (const raw of fields) {
    if (
      raw && typeof raw === "object" &&
      (raw as { system?: unknown }).system === true
    ) continue;
    const id = raw && typeof raw === "object"
      ? (raw as { id?: unknown }).id
      : undefined;
    const f = validateField(
      raw,
      keep && typeof id === "string" && PART_ID.test(id) &&
        !schema.fields.some((o) => o.id === id)
        ? id
        : newFieldId(),
      ctx,
      name,
    );
    if (seen.has(f.name.toLowerCase())) {
      bad(`Cannot create entity: field "${f.name}" is declared twice`);
    }
    seen.add(f.name.toLowerCase());
    schema.fields.push(f);
  }
  schema.indexes = newIndexes(input.indexes, schema, keep?.indexFree);
  if (type === "auth") {
    schema.auth = checkAuthOptions(
      input.auth ?? {},
      defaultAuthOptions(),
      schema.fields,
    );
  }
  return schema;
}
