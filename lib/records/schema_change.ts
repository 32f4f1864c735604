/**
 * The pieces of a schema change that run inside its transaction, for
 * `Registry`: the transaction itself with its error mapping, the stored file
 * names of dropped file fields, and relation fields following a rename.
 *
 * @module
 */

import { MoonbaseError, StorageUnavailableError } from "../errors.ts";
import type { Dialect, Queryable, Storage } from "../db/storage.ts";
import { uuidv7 } from "../ids.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import { ddlReason, isViewDependency } from "../schema/ddl_errors.ts";
import { saveSchema } from "../schema/stored.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { decodeRow } from "./codec.ts";
import type { RelationRef } from "./crud.ts";
import { fileNames } from "./file_values.ts";

/**
 * Runs `fn` in one transaction that also bumps `schema_version`, and turns a
 * database failure into a client error: duplicate values (409), a view that
 * reads the table (409, naming `readers()`), or the reason the statement
 * failed (400). Outages stay 503.
 */
export async function runSchemaChange(
  store: Storage,
  schema: EntitySchema,
  action: string,
  fn: (tx: Queryable) => Promise<void>,
  readers: () => Promise<string[]>,
): Promise<void> {
  try {
    await store.transaction(async (tx) => {
      // A schema change may rewrite a big table: no statement timeout.
      if (store.dialect.name === "postgres") {
        await tx.exec("SET LOCAL statement_timeout = 0");
      }
      await fn(tx);
      await tx.run(
        `UPDATE "mb_meta" SET "value" = ? WHERE "key" = 'schema_version'`,
        [uuidv7()],
      );
    });
  } catch (err) {
    if (err instanceof MoonbaseError) throw err;
    if (err instanceof StorageUnavailableError) throw err; // 503, not a 400
    const failure = store.dialect.constraintFailure(err);
    if (failure?.kind === "unique") {
      throw new MoonbaseError(
        "conflict",
        `Cannot change entity ${schema.name}: existing records have duplicate values`,
      );
    }
    if (isViewDependency(err)) {
      const names = await readers().catch(() => []);
      throw new MoonbaseError(
        "conflict",
        `Cannot ${action} entity ${schema.name}: read by ${
          names.length > 0 ? `view ${names.join(", ")}` : "a view"
        } (change or delete the view first)`,
      );
    }
    throw new MoonbaseError(
      "invalid",
      schema.type === "view"
        ? `Cannot accept view_query: it does not run (${ddlReason(err)})`
        : `Cannot ${action} entity ${schema.name}: ${ddlReason(err)}`,
    );
  }
}

/**
 * The stored file names held by `fields` (file fields about to be dropped)
 * in every record of an entity, read before their columns go.
 */
export async function storedFileNames(
  tx: Queryable,
  dialect: Dialect,
  schema: EntitySchema,
  fields: FieldDef[],
): Promise<string[]> {
  if (fields.length === 0) return [];
  const cols = fields.map((f) => columnOf(f.name)).join(", ");
  const rows = await tx.query(`SELECT ${cols} FROM ${tableOf(schema.name)}`);
  // One schema object for every row: decode plans are cached per object.
  const files = { ...schema, fields };
  return rows.flatMap((row) =>
    fileNames(files, decodeRow(files, row, dialect))
  );
}

/** Points the relation fields `refs` at an entity's new name. */
export async function retarget(
  tx: Queryable,
  refs: RelationRef[],
  from: string,
  to: string,
): Promise<void> {
  for (const ref of refs) {
    const other = structuredClone(ref.schema);
    other.fields = other.fields.filter((f) => !f.system);
    for (const f of other.fields) {
      if (f.foreign_key?.entity.toLowerCase() === from.toLowerCase()) {
        f.foreign_key.entity = to;
      }
    }
    await saveSchema(tx, other);
  }
}
