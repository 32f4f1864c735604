/**
 * A schema read from a backup, held to the schema API's own checks: a
 * restore creates tables and views from it, so an archive made or edited by
 * hand may hold nothing the API would refuse (a reserved name, an unknown
 * field type, a pattern that backtracks, a rule that does not parse, a
 * system entity). The create path (new_schema.ts) checks it; what is kept is
 * what that path makes, with the archive's ids and times. A view's reads are
 * checked once it exists (views.ts `guardView`).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { newSchema } from "./new_schema.ts";
import type { SchemaContext } from "./validate.ts";
import type { EntitySchema } from "./types.ts";

/** Ids the archive may carry (they name files' folders and indexes). */
const ID = /^[A-Za-z0-9-]{1,40}$/;

function refuse(why: string): never {
  throw new MoonbaseError("invalid", `Cannot restore backup: ${why}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function idOf(v: unknown, what: string, ids: Set<string>): string {
  if (typeof v !== "string" || !ID.test(v)) refuse(`${what} has no valid id`);
  // Index names are made of ids without dashes, lower case: one per database.
  const key = v.replaceAll("-", "").toLowerCase();
  if (ids.has(key)) refuse(`${what} has the id of another`);
  ids.add(key);
  return v;
}

/**
 * The schema `stored` (a row of a backup's `mb_tables`) as the schema API
 * would have made it; 400 ("Cannot restore backup: …") when the API would
 * refuse it. `claim(name)` refuses a name taken by another of the archive's
 * entities; `ctx` knows the archive's entities; `ids` holds the ids of
 * entities, fields and indexes met so far (each must be unique).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { restoredSchema } from "moonbase/lib/schema/restored_schema.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const ctx = { entityType: () => undefined, checkExpr: () => undefined };
 * const stored = { id: "0190aaaa-0000-7000-8000-000000000001", name: "notes", type: "base",
 *   fields: [{ id: "0a1b2c3d4e5f6071", name: "body", type: "string" }], view_query: "",
 *   rules: adminOnlyRules(), has_api: true, is_system: false,
 *   created: "2026-01-01T00:00:00.000Z", updated: "2026-01-01T00:00:00.000Z" };
 * const s = restoredSchema(stored, ctx, () => {}, new Set());
 * assert.deepEqual([s.id, s.fields[0].id, s.created], [stored.id, "0a1b2c3d4e5f6071", stored.created]);
 * assert.throws(() => restoredSchema({ ...stored, name: "mb_x" }, ctx, () => {}, new Set()), /prefix is reserved/);
 * ```
 */
export function restoredSchema(
  stored: unknown,
  ctx: SchemaContext,
  claim: (name: string) => void,
  ids: Set<string>,
): EntitySchema {
  if (!isObject(stored)) refuse("a schema of mb_tables is not an object");
  const label = typeof stored.name === "string"
    ? `entity ${JSON.stringify(stored.name.slice(0, 64))}`
    : "an entity";
  if (stored.is_system !== false && stored.is_system !== undefined) {
    refuse(`${label} is marked as a system entity, which no backup holds`);
  }
  const id = idOf(stored.id, label, ids);
  for (const key of ["created", "updated"]) {
    if (typeof stored[key] !== "string") refuse(`${label} has no ${key} time`);
  }
  const view = stored.type === "view";
  const fields = stored.fields;
  let schema: EntitySchema;
  try {
    schema = newSchema(
      {
        name: stored.name,
        type: stored.type,
        // A view's fields are what the database says it reads (guardView).
        fields: view ? [] : fields,
        view_query: stored.view_query,
        rules: stored.rules,
        has_api: stored.has_api,
        ...(stored.indexes !== undefined && { indexes: stored.indexes }),
        ...(stored.auth !== undefined && !view && { auth: stored.auth }),
      },
      ctx,
      claim,
    );
  } catch (err) {
    if (!(err instanceof MoonbaseError)) throw err;
    refuse(`${label}: ${err.message}`);
  }
  schema.id = id;
  schema.created = stored.created as string;
  schema.updated = stored.updated as string;
  // The checked fields are the declared ones, in their order: their ids back.
  const declared = view
    ? []
    : (fields as unknown[]).filter((f) => !(isObject(f) && f.system === true));
  schema.fields.forEach((f, i) => {
    const raw = declared[i] as Record<string, unknown>;
    f.id = idOf(raw.id, `field ${f.name} of ${label}`, ids);
  });
  const indexes = Array.isArray(stored.indexes) ? stored.indexes : [];
  schema.indexes?.forEach((x, i) => {
    const raw = indexes[i] as Record<string, unknown>;
    x.id = idOf(raw.id, `an index of ${label}`, ids);
  });
  return schema;
}
