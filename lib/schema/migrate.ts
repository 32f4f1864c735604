/**
 * Planning a schema PATCH: fields matched by `id` (rename keeps data), new
 * fields added, `{id, op: "delete"}` dropped, rules merged. The plan is a
 * list of DDL statements the registry runs in one transaction.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { newFieldId } from "../ids.ts";
import { type Dialect, ident, type SqlValue } from "../db/storage.ts";
import { kindOf } from "./field_types.ts";
import {
  columnOf,
  columnSql,
  createSql,
  dropSql,
  fieldIndexSql,
  relationIndexOf,
  tableOf,
  uniqueIndexOf,
} from "./ddl.ts";
import {
  checkName,
  checkViewQuery,
  type SchemaContext,
  validateField,
} from "./validate.ts";
import { validateRules } from "./validate_rules.ts";
import { checkSchemaKeys } from "./keys.ts";
import { checkIndexes, planIndexes } from "./indexes.ts";
import { planSearch } from "./search_ddl.ts";
import {
  type AuthOptions,
  authOptions,
  checkAuthOptions,
} from "./auth_options.ts";
import { CALLER_DEFAULT, type EntitySchema, type FieldDef } from "./types.ts";
import { type KeptIds, PART_ID } from "./new_schema.ts";

/** What a PATCH will do. */
export interface PatchPlan {
  schema: EntitySchema;
  statements: string[];
  /** Updates run after the statements (existing rows get a new field's default). */
  fills: { sql: string; params: SqlValue[] }[];
  /** The search table was made anew: fill it from the records (after `fills`). */
  fillSearch?: boolean;
}

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

function dropIndexSql(name: string): string {
  return `DROP INDEX IF EXISTS ${ident(name)}`;
}

export type { KeptIds };

/** Plans the changes of `input` against the current schema (nothing runs here). */
export function planPatch(
  current: EntitySchema,
  input: Record<string, unknown>,
  ctx: SchemaContext,
  dialect: Dialect,
  byName: (name: string) => { id: string } | undefined,
  keep?: KeptIds,
): PatchPlan {
  checkSchemaKeys(input, "change");
  if (input.type !== undefined && input.type !== current.type) {
    bad("Cannot change entity: type cannot change");
  }
  if (input.auth !== undefined && current.type !== "auth") {
    bad("Cannot change entity: only auth entities have auth");
  }
  const schema: EntitySchema = structuredClone({
    ...current,
    fields: current.fields.filter((f) => !f.system),
  });
  const statements: string[] = [];
  const fills: PatchPlan["fills"] = [];
  if (input.name !== undefined && input.name !== current.name) {
    const name = checkName(input.name, "entity");
    const other = byName(name);
    if (other && other.id !== current.id) {
      throw new MoonbaseError(
        "conflict",
        `Cannot rename entity: "${name}" already exists`,
      );
    }
    // A view is renamed by creating it anew below (SQLite cannot rename views).
    if (current.type !== "view") {
      statements.push(
        `ALTER TABLE ${tableOf(current.name)} RENAME TO ${tableOf(name)}`,
      );
    }
    schema.name = name;
    for (const f of schema.fields) {
      if (f.foreign_key?.entity.toLowerCase() === current.name.toLowerCase()) {
        f.foreign_key.entity = name;
      }
    }
  }
  if (input.has_api !== undefined) {
    if (typeof input.has_api !== "boolean") {
      bad("Cannot accept has_api: must be true or false");
    }
    schema.has_api = input.has_api;
  }
  if (input.rules !== undefined) {
    schema.rules = validateRules(input.rules, ctx, current.rules);
  }
  if (current.type === "view") {
    if (
      input.fields !== undefined && Array.isArray(input.fields) &&
      input.fields.length > 0
    ) bad("Cannot change entity: a view has no fields");
    checkIndexes(input.indexes, schema);
    if (input.view_query !== undefined) {
      schema.view_query = checkViewQuery(input.view_query);
    }
    if (
      schema.view_query !== current.view_query || schema.name !== current.name
    ) {
      statements.push(dropSql(current), ...createSql(schema, dialect));
    }
    return { schema, statements, fills };
  }
  if (input.view_query !== undefined && input.view_query !== "") {
    bad("Cannot change entity: only views have view_query");
  }
  const fieldStatements: string[] = [];
  if (input.fields !== undefined) {
    if (!Array.isArray(input.fields)) {
      bad("Cannot change entity: fields must be an array");
    }
    planFields(
      schema,
      input.fields,
      ctx,
      dialect,
      fieldStatements,
      fills,
      keep !== undefined,
    );
  }
  // Indexes follow the fields: dropped before a column goes, created after one comes.
  const indexes = planIndexes(
    current,
    schema,
    input.indexes,
    dialect,
    keep?.indexFree,
  );
  schema.indexes = indexes.indexes;
  statements.push(...indexes.drop, ...fieldStatements, ...indexes.create);
  // The search triggers name the table and its columns: dropped before any
  // of them changes (the rename above included), made again after.
  const search = planSearch(current, schema, dialect);
  statements.unshift(...search.before);
  statements.push(...search.after);
  if (current.type === "auth") {
    schema.auth = checkAuthOptions(
      input.auth ?? {},
      followRenames(authOptions(current), current.fields, schema.fields),
      schema.fields,
    );
  }
  return { schema, statements, fills, fillSearch: search.fill };
}

/** The `auth` object with its field names after the fields' renames (by field id). */
function followRenames(
  options: AuthOptions,
  before: readonly FieldDef[],
  after: readonly FieldDef[],
): AuthOptions {
  const renamed = (name: string | null) => {
    const id = before.find((f) => f.name === name)?.id;
    return after.find((f) => f.id === id)?.name ?? name;
  };
  const { name, avatar } = options.oauth2.fields;
  return {
    ...options,
    oauth2: {
      ...options.oauth2,
      fields: { name: renamed(name), avatar: renamed(avatar) },
    },
  };
}

function planFields(
  schema: EntitySchema,
  items: unknown[],
  ctx: SchemaContext,
  dialect: Dialect,
  statements: string[],
  fills: PatchPlan["fills"],
  keepIds: boolean,
): void {
  const table = tableOf(schema.name);
  for (const raw of items) {
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
      bad("Cannot change entity: every field must be an object");
    }
    const item = raw as Record<string, unknown>;
    if (item.system === true) continue;
    if (item.op !== undefined && item.op !== "delete") {
      bad(`Cannot change entity: unknown field op ${JSON.stringify(item.op)}`);
    }
    const id = typeof item.id === "string" ? item.id : undefined;
    const index = id === undefined
      ? -1
      : schema.fields.findIndex((f) => f.id === id);
    // A new field given the id it has elsewhere (an import, a migration).
    const kept = keepIds && id !== undefined && index < 0 &&
        item.op !== "delete" && PART_ID.test(id)
      ? id
      : undefined;
    if (id !== undefined && index < 0 && kept === undefined) {
      bad(
        `Cannot change entity: no field with id ${
          JSON.stringify(id.slice(0, 64))
        }`,
      );
    }
    if (item.op === "delete") {
      if (index < 0) {
        bad("Cannot change entity: a field to delete needs its id");
      }
      const old = schema.fields[index];
      statements.push(
        ...dropIndexes(schema, old),
        `ALTER TABLE ${table} DROP COLUMN ${columnOf(old.name)}`,
      );
      schema.fields.splice(index, 1);
      continue;
    }
    if (index < 0) {
      const f = validateField(item, kept ?? newFieldId(), ctx, schema.name);
      schema.fields.push(f);
      statements.push(
        `ALTER TABLE ${table} ADD COLUMN ${columnSql(f, dialect)}`,
      );
      // Existing rows take the default, as a record created now would
      // (the caller default has no caller for them: they stay empty).
      if (f.default !== undefined && f.default !== CALLER_DEFAULT) {
        fills.push({
          sql: `UPDATE ${table} SET ${columnOf(f.name)} = ?`,
          params: [dialect.encode(kindOf(f), f.default)],
        });
      } else if (f.multiple) {
        // A multiple relation is never null: existing rows hold no ids.
        fills.push({
          sql: `UPDATE ${table} SET ${columnOf(f.name)} = ?`,
          params: [dialect.encode("json", [])],
        });
      }
      statements.push(...fieldIndexSql(schema, f, dialect));
      continue;
    }
    const old = schema.fields[index];
    if (
      item.multiple !== undefined && !!item.multiple !== !!old.multiple
    ) {
      // The column's kind changes (text ↔ JSON) and a list of several ids has
      // no single-id form: refused rather than guessed.
      throw new MoonbaseError(
        "conflict",
        `Cannot change field "${old.name}": "multiple" cannot change on an existing field (its stored values are ${
          old.multiple ? "lists of ids" : "single ids"
        }); add a new relation field with "multiple": ${!old
          .multiple}, copy the values (a batch can do it in one transaction), then delete this one`,
      );
    }
    const next = validateField(
      { ...stripUndefined(old), ...item },
      old.id,
      ctx,
      schema.name,
    );
    if (next.type !== old.type) {
      bad(
        `Cannot change field "${old.name}": its type cannot change (add a new field instead)`,
      );
    }
    if (
      JSON.stringify(next.foreign_key) !== JSON.stringify(old.foreign_key) &&
      next.foreign_key?.entity !== old.foreign_key?.entity
    ) {
      bad(
        `Cannot change field "${old.name}": its foreign_key entity cannot change`,
      );
    }
    if (next.name !== old.name) {
      statements.push(
        `ALTER TABLE ${table} RENAME COLUMN ${columnOf(old.name)} TO ${
          columnOf(next.name)
        }`,
      );
    }
    if (next.unique !== old.unique || !!next.index !== !!old.index) {
      statements.push(...dropIndexes(schema, old));
      statements.push(...fieldIndexSql(schema, next, dialect));
    }
    schema.fields[index] = next;
  }
  const seen = new Set<string>();
  for (const f of schema.fields) {
    if (seen.has(f.name.toLowerCase())) {
      bad(`Cannot change entity: field "${f.name}" is declared twice`);
    }
    seen.add(f.name.toLowerCase());
  }
  if (schema.fields.length > 200) {
    bad("Cannot change entity: at most 200 fields");
  }
}

function dropIndexes(schema: EntitySchema, f: FieldDef): string[] {
  const out: string[] = [];
  if (f.unique) out.push(dropIndexSql(uniqueIndexOf(schema, f)));
  if (f.type === "relation" || f.index) {
    out.push(dropIndexSql(relationIndexOf(f)));
  }
  return out;
}

function stripUndefined(f: FieldDef): Record<string, unknown> {
  const { id: _id, system: _s, ...rest } = f;
  return Object.fromEntries(
    Object.entries(rest).filter(([, v]) => v !== undefined),
  );
}
