/**
 * The keys of a schema object: the one list the create and change paths
 * (new_schema.ts, migrate.ts) check input against.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** Keys a client may set when creating or changing an entity. */
export const WRITABLE_SCHEMA_KEYS: ReadonlySet<string> = new Set([
  "name",
  "type",
  "fields",
  "indexes",
  "view_query",
  "rules",
  "auth",
  "has_api",
]);

/** Keys the server sets; accepted in input (a GET's answer sent back) and ignored. */
export const READ_ONLY_SCHEMA_KEYS: ReadonlySet<string> = new Set([
  "id",
  "is_system",
  "created",
  "updated",
]);

/**
 * Refuses input with a key a schema does not have (400).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSchemaKeys } from "moonbase/lib/schema/keys.ts";
 * checkSchemaKeys({ name: "posts", id: "ignored" }, "create");
 * assert.throws(() => checkSchemaKeys({ nmae: "posts" }, "change"), /unknown key "nmae"/);
 * ```
 */
export function checkSchemaKeys(
  input: Record<string, unknown>,
  action: "create" | "change",
): void {
  for (const key of Object.keys(input)) {
    if (!WRITABLE_SCHEMA_KEYS.has(key) && !READ_ONLY_SCHEMA_KEYS.has(key)) {
      throw new MoonbaseError(
        "invalid",
        `Cannot ${action} entity: unknown key "${key.slice(0, 64)}"`,
      );
    }
  }
}
