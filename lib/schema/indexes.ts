/**
 * Entity-level indexes (`indexes: [{fields, unique}]`, docs/guide/entities.md):
 * checking the list against an entity's fields, planning what a PATCH
 * drops and creates, and the 409 a unique one answers for a duplicate
 * combination of values.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { newFieldId } from "../ids.ts";
import {
  type ConstraintFailure,
  type Dialect,
  ident,
  physicalName,
} from "../db/storage.ts";
import { allFields } from "./builtin.ts";
import { indexEntry, indexNameOf, indexSql } from "./ddl.ts";
import type { EntitySchema, FieldDef, IndexDef } from "./types.ts";

/** Most indexes an entity may declare. */
export const MAX_INDEXES = 16;
/** Most fields one index may cover. */
export const MAX_INDEX_FIELDS = 8;

/** Types whose values are not compared as a whole (no index). */
const NOT_INDEXABLE = new Set(["json", "file", "files"]);
/** Types an index may fold (`fold(<field>)`). */
const FOLDABLE = new Set(["string", "text", "email", "url", "select"]);

/** An index as asked for (no id yet). */
export type IndexSpec = Omit<IndexDef, "id">;

function bad(key: string, message: string): never {
  throw new MoonbaseError("invalid", `Cannot accept ${key}: ${message}`, {
    fields: { [key]: { code: "invalid", message } },
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function fieldOf(schema: EntitySchema, name: string): FieldDef | undefined {
  return allFields(schema).find((f) => f.name === name);
}

/**
 * Checks an `indexes` list against the fields of `schema` (its final
 * fields, renames applied). Every problem is a 400 whose `data.fields`
 * names the entry (`indexes[1].fields`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkIndexes } from "moonbase/lib/schema/indexes.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const schema = {
 *   id: "0190", name: "items", type: "base" as const, view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "", rules: adminOnlyRules(),
 *   fields: [{ id: "ab12", name: "n", type: "int" as const, required: false, unique: false }],
 * };
 * assert.deepEqual(checkIndexes([{ fields: ["n", "created"] }], schema), [
 *   { fields: ["n", "created"], unique: false },
 * ]);
 * assert.throws(() => checkIndexes([{ fields: ["nope"] }], schema), /no field "nope"/);
 * ```
 */
export function checkIndexes(raw: unknown, schema: EntitySchema): IndexSpec[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    bad("indexes", "must be a list of {fields, unique}");
  }
  if (schema.type === "view" && raw.length > 0) {
    bad("indexes", "a view has no indexes");
  }
  if (raw.length > MAX_INDEXES) {
    bad("indexes", `at most ${MAX_INDEXES} indexes per entity`);
  }
  const out: IndexSpec[] = [];
  const seen = new Map<string, number>();
  for (const [i, item] of raw.entries()) {
    const at = `indexes[${i}]`;
    if (!isObject(item)) bad(at, "must be {fields, unique}");
    for (const key of Object.keys(item)) {
      if (key !== "fields" && key !== "unique" && key !== "id") {
        bad(at, `unknown key "${key.slice(0, 64)}" (use fields, unique)`);
      }
    }
    const spec = {
      fields: checkFields(item.fields, schema, `${at}.fields`),
      unique: checkUnique(item.unique, `${at}.unique`),
    };
    const key = spec.fields.join(",");
    const twin = seen.get(key);
    if (twin !== undefined) {
      bad(at, `it has the same fields as indexes[${twin}]`);
    }
    seen.set(key, i);
    out.push(spec);
  }
  return out;
}

function checkUnique(v: unknown, at: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") bad(at, "must be true or false");
  return v;
}

function checkFields(v: unknown, schema: EntitySchema, at: string): string[] {
  const list = `must be a list of 1-${MAX_INDEX_FIELDS} field names`;
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_INDEX_FIELDS) {
    bad(at, list);
  }
  const names: string[] = [];
  for (const entry of v) {
    if (typeof entry !== "string" || entry === "") bad(at, list);
    const { name, fold } = indexEntry(entry);
    const shown = JSON.stringify(name.slice(0, 64));
    const field = fieldOf(schema, name);
    if (!field) bad(at, `no field ${shown}`);
    if (NOT_INDEXABLE.has(field.type) || name === "password") {
      bad(at, `field ${shown} (${field.type}) cannot be indexed`);
    }
    if (fold && !FOLDABLE.has(field.type)) {
      bad(
        at,
        `fold(${
          name.slice(0, 64)
        }): only string, text, email, url and select fields can be folded`,
      );
    }
    if (names.includes(entry)) bad(at, `field ${shown} is listed twice`);
    names.push(entry);
  }
  return names;
}

/**
 * A new entity's indexes: checked, each with a new id (or, with `free`, the
 * id its entry gives when `free(id)`).
 */
export function newIndexes(
  raw: unknown,
  schema: EntitySchema,
  free?: (id: string) => boolean,
): IndexDef[] {
  const given = Array.isArray(raw) ? raw : [];
  const out: IndexDef[] = [];
  for (const [i, s] of checkIndexes(raw, schema).entries()) {
    out.push({ id: keptIndexId(given[i], free, out) ?? newFieldId(), ...s });
  }
  return out;
}

/** The id an index entry gives, when it may keep it. */
function keptIndexId(
  item: unknown,
  free: ((id: string) => boolean) | undefined,
  taken: readonly IndexDef[],
): string | undefined {
  if (!free || !isObject(item)) return undefined;
  const id = item.id;
  return typeof id === "string" && /^[0-9a-f]{16}$/.test(id) && free(id) &&
      !taken.some((t) => t.id === id)
    ? id
    : undefined;
}

/** What a PATCH does to an entity's indexes. */
export interface IndexPlan {
  indexes: IndexDef[];
  /** Run before the field statements (a column in an index cannot be dropped on SQLite). */
  drop: string[];
  /** Run after them (an index may cover a field added by the same PATCH). */
  create: string[];
}

/** An index's identity: its fields by id (a rename keeps it) and uniqueness. */
function keyOf(
  schema: EntitySchema,
  fields: string[],
  unique: boolean,
): string {
  const ids = fields.map((entry) => {
    const { name, fold } = indexEntry(entry);
    const id = fieldOf(schema, name)?.id ?? `?${name}`;
    return fold ? `fold(${id})` : id;
  });
  return `${unique ? "u" : "i"}:${ids.join(",")}`;
}

/**
 * Plans the indexes of a PATCH: `current` is the schema before it, `next`
 * after its field changes. Without `raw` (no `indexes` key) the indexes stay,
 * following renamed fields; a deleted field an index uses is refused. With
 * `raw` the list replaces the old one: entries with the same fields (by
 * field id) and uniqueness keep their index, others are dropped or created.
 * With `free`, a created index keeps the id its entry gives when
 * `free(id)` (an import or a migration file: the same ids everywhere).
 */
export function planIndexes(
  current: EntitySchema,
  next: EntitySchema,
  raw: unknown,
  dialect: Dialect,
  free?: (id: string) => boolean,
): IndexPlan {
  const old = current.indexes ?? [];
  if (raw === undefined) {
    const indexes = old.map((idx) => ({
      ...idx,
      fields: idx.fields.map((entry) => {
        const { name, fold } = indexEntry(entry);
        const id = fieldOf(current, name)?.id;
        const now = allFields(next).find((f) => f.id === id);
        if (!now) {
          throw new MoonbaseError(
            "invalid",
            `Cannot delete field "${name}": the index (${
              idx.fields.join(", ")
            }) uses it; send "indexes" without that index in the same change`,
            {
              fields: {
                indexes: {
                  code: "in_use",
                  message: `Field "${name}" is used by an index`,
                },
              },
            },
          );
        }
        return fold ? `fold(${now.name})` : now.name;
      }),
    }));
    return { indexes, drop: [], create: [] };
  }
  const oldKeys = old.map((i) => keyOf(current, i.fields, i.unique));
  const kept = new Set<number>();
  const indexes: IndexDef[] = [];
  const create: string[] = [];
  const given = Array.isArray(raw) ? raw : [];
  for (const [i, spec] of checkIndexes(raw, next).entries()) {
    const at = oldKeys.findIndex((k, i) =>
      !kept.has(i) && k === keyOf(next, spec.fields, spec.unique)
    );
    if (at >= 0) {
      kept.add(at);
      indexes.push({ id: old[at].id, ...spec });
      continue;
    }
    const id = keptIndexId(given[i], free, indexes);
    const idx = { id: id ?? newFieldId(), ...spec };
    indexes.push(idx);
    create.push(indexSql(next, idx, dialect));
  }
  const drop = old.filter((_, i) => !kept.has(i)).map((idx) =>
    `DROP INDEX IF EXISTS ${ident(indexNameOf(idx))}`
  );
  return { indexes, drop, create };
}

/**
 * The 409 for a write that breaks a unique entity-level index (the same
 * shape as a unique field's: every field of the index named in
 * `data.fields`), or undefined when `failure` is about something else.
 * PostgreSQL names the index; SQLite lists its columns (`t.a, t.b`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { indexConflict } from "moonbase/lib/schema/indexes.ts";
 * const schema = { name: "items", indexes: [{ id: "0a1b2c3d4e5f6071", fields: ["tag", "n"], unique: true }] };
 * const e = indexConflict(schema, { kind: "unique", column: "items.tag, items.n" });
 * assert.equal(e?.message, "Cannot save record: tag, n must be unique together");
 * assert.deepEqual(Object.keys(e?.data?.fields ?? {}), ["tag", "n"]);
 * assert.equal(indexConflict(schema, { kind: "unique", constraint: "mbx_0a1b2c3d4e5f6071" })?.code, "conflict");
 * assert.equal(indexConflict(schema, { kind: "unique", column: "items.tag" }), undefined);
 * ```
 */
export function indexConflict(
  schema: Pick<EntitySchema, "name" | "indexes">,
  failure: ConstraintFailure,
): MoonbaseError | undefined {
  if (failure.kind !== "unique") return undefined;
  const columns = failure.column?.split(/,\s*/).map((c) => c.split(".").pop())
    .join(",");
  const idx = (schema.indexes ?? []).find((i) =>
    i.unique && (failure.constraint === indexNameOf(i) ||
      columns === i.fields.map(physicalName).join(","))
  );
  if (!idx) return undefined;
  const names = idx.fields.join(", ");
  const message = `Values of ${names} must be unique together`;
  return new MoonbaseError(
    "conflict",
    `Cannot save record: ${names} must be unique together`,
    {
      fields: Object.fromEntries(
        idx.fields.map((
          f,
        ) => [indexEntry(f).name, { code: "unique", message }]),
      ),
    },
  );
}
