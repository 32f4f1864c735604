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
import type { EntitySchema } from "../schema/types.ts";
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

/** Refuses (400) a write whose relation values name missing records. */
export async function checkRelations(
  tx: Queryable,
  dialect: string,
  schema: EntitySchema,
  values: CheckedInput,
): Promise<void> {
  const errors: Record<string, { code: string; message: string }> = {};
  for (const f of schema.fields) {
    const v = values.get(f.name);
    if (f.type !== "relation" || !f.foreign_key || typeof v !== "string") {
      continue;
    }
    const lock = dialect === "postgres" ? " FOR SHARE" : "";
    const rows = await tx.query(
      `SELECT 1 AS ok FROM ${
        tableOf(f.foreign_key.entity)
      } WHERE "id" = ?${lock}`,
      [v],
    );
    if (rows.length === 0) {
      errors[f.name] = { code: "invalid_reference", message: "No such record" };
    }
  }
  if (Object.keys(errors).length > 0) {
    throw new MoonbaseError(
      "invalid",
      "Cannot save record: relation to a missing record",
      { fields: errors },
    );
  }
}

/** True when a write sets a relation (checked inside a transaction). */
export function hasRelationValue(
  schema: EntitySchema,
  values: CheckedInput,
): boolean {
  return schema.fields.some((f) =>
    f.type === "relation" && typeof values.get(f.name) === "string"
  );
}
