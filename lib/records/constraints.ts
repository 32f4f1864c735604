/**
 * What the database refuses in a record write and how the write says so:
 * a constraint failure mapped to a 409/400 naming the field, and the check
 * that relation values name existing records (run inside the write's
 * transaction; the referenced row is locked on PostgreSQL).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { physicalName, type Queryable, type Storage } from "../db/storage.ts";
import { tableOf, uniqueIndexOf } from "../schema/ddl.ts";
import { indexConflict } from "../schema/indexes.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { allFields } from "../schema/builtin.ts";
import type { CheckedInput } from "./codec.ts";

/** Maps a constraint failure to a 409/400 naming the field. */
export function constraintError(
  store: Storage,
  schema: EntitySchema,
  err: unknown,
): unknown {
  const failure = store.dialect.constraintFailure(err);
  if (!failure) return err;
  if (failure.kind === "unique") {
    const composite = indexConflict(schema, failure);
    if (composite) return composite;
    const field = allFields(schema).find((f) =>
      failure.column?.split(".").pop() === physicalName(f.name) ||
      failure.constraint === uniqueIndexOf(schema, f)
    );
    const name = field?.name ?? "record";
    return new MoonbaseError(
      "conflict",
      `Cannot save record: ${name} must be unique`,
      {
        fields: { [name]: { code: "unique", message: "Value must be unique" } },
      },
    );
  }
  if (failure.kind === "foreign_key") {
    return new MoonbaseError(
      "conflict",
      "Cannot save record: a relation points to a missing record, or other records still reference it",
    );
  }
  if (failure.kind === "too_long") {
    return new MoonbaseError(
      "invalid",
      "Cannot save record: a value is too long for an index (keep indexed text under 2 kB)",
    );
  }
  return new MoonbaseError(
    "invalid",
    "Cannot save record: a value violates a constraint",
  );
}

/** The ids a relation value names (one, or a multiple relation's list). */
function relatedIds(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) {
    return value.filter((v): v is string => typeof v === "string");
  }
  return [];
}

/** A relation field a write sets, and the ids it names. */
export interface RelationTarget {
  readonly field: FieldDef;
  /** The quoted table of the entity it points at. */
  readonly table: string;
  readonly ids: readonly string[];
}

/** The relations a write sets (fields whose value names at least one id). */
export function relationTargets(
  schema: EntitySchema,
  values: CheckedInput,
): RelationTarget[] {
  const out: RelationTarget[] = [];
  for (const f of schema.fields) {
    if (f.type !== "relation" || !f.foreign_key) continue;
    const ids = relatedIds(values.get(f.name));
    if (ids.length > 0) {
      out.push({ field: f, table: tableOf(f.foreign_key.entity), ids });
    }
  }
  return out;
}

/**
 * Refuses (400) a write whose relation values name missing records: one
 * error per field, naming each missing id of a multiple relation. Only
 * existence is checked (not the target's rules), the same for one id or a
 * list: ids are random UUIDv7s, and the caller learns nothing about a record
 * whose id it did not already hold.
 */
export async function checkRelations(
  tx: Queryable,
  dialect: string,
  schema: EntitySchema,
  values: CheckedInput,
): Promise<void> {
  const lock = dialect === "postgres" ? " FOR SHARE" : "";
  const targets = relationTargets(schema, values);
  const found: Set<string>[] = [];
  for (const { table, ids } of targets) {
    const seen = new Set<string>();
    for (let i = 0; i < ids.length; i += IDS_PER_CHECK) {
      const part = ids.slice(i, i + IDS_PER_CHECK);
      const rows = await tx.query(
        `SELECT "id" FROM ${table} WHERE "id" IN (${
          part.map(() => "?").join(", ")
        })${lock}`,
        part,
      );
      for (const r of rows) seen.add(String(r.id));
    }
    found.push(seen);
  }
  const refusal = missingRelations(targets, found);
  if (refusal) throw refusal;
}

/**
 * The 400 of `checkRelations` when some of `targets`' ids were not found
 * (`found[i]`: the ids of `targets[i]` that exist), else undefined.
 */
export function missingRelations(
  targets: readonly RelationTarget[],
  found: readonly ReadonlySet<string>[],
): MoonbaseError | undefined {
  const errors: Record<string, { code: string; message: string }> = {};
  targets.forEach(({ field: f, ids }, i) => {
    const missing = ids.filter((id) => !found[i].has(id));
    if (missing.length === 0) return;
    errors[f.name] = {
      code: "invalid_reference",
      message: f.multiple
        ? `No such record: ${
          missing.slice(0, 20).map((id) => JSON.stringify(id)).join(", ")
        }${missing.length > 20 ? ` and ${missing.length - 20} more` : ""}`
        : "No such record",
    };
  });
  if (Object.keys(errors).length === 0) return undefined;
  return new MoonbaseError(
    "invalid",
    `Cannot save record: relation to a missing record (${
      Object.keys(errors).join(", ")
    })`,
    { fields: errors },
  );
}

/** Ids per existence check (well under either database's parameter limit). */
export const IDS_PER_CHECK = 500;

/** True when a write sets a relation (checked inside a transaction). */
export function hasRelationValue(
  schema: EntitySchema,
  values: CheckedInput,
): boolean {
  return schema.fields.some((f) =>
    f.type === "relation" && relatedIds(values.get(f.name)).length > 0
  );
}
