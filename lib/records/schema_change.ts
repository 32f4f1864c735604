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
import {
  ddlReason,
  isViewDependency,
  repeatedViewColumn,
} from "../schema/ddl_errors.ts";
import { repeatedColumn } from "../schema/view_fields.ts";
import { saveSchema } from "../schema/stored.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { decodeRow } from "./codec.ts";
import type { RelationRef } from "./crud.ts";
import { fileNames } from "./file_values.ts";

/**
 * A schema change planned against a schema version another change has
 * replaced meanwhile (another request, isolate or instance): plan it again.
 */
export class SchemaMoved extends Error {
  constructor() {
    super("Cannot change entity: the schemas changed meanwhile");
  }
}

/** What a schema change is about: the entity it changes, for its error messages. */
export interface ChangeSubject {
  schema: EntitySchema;
  action: string;
  /** The table views would read (the name before a rename). */
  table: string;
}

/** Thrown inside a dry run's transaction to roll it back. */
class DryRun extends Error {}

/**
 * Runs `fn` in one transaction that also bumps `schema_version`, and turns a
 * database failure into a client error about the change `fn` last named
 * with `mark` (a set of changes names each as it starts): duplicate values
 * (409), a view that reads the table (409, naming `readers(table)`), or the
 * reason the statement failed (400). Outages stay 503. The change was
 * planned at schema version `planned`: when the stored version is another
 * one (read under the write lock), it throws {@link SchemaMoved} and changes
 * nothing. With `rollback` (a dry run) the transaction is rolled back once
 * `fn` succeeded.
 */
export async function runSchemaChange(
  store: Storage,
  fn: (tx: Queryable, mark: (subject: ChangeSubject) => void) => Promise<void>,
  readers: (table: string) => Promise<string[]>,
  planned?: string,
  rollback = false,
): Promise<void> {
  let subject: ChangeSubject | undefined;
  try {
    await store.transaction(async (tx) => {
      const pg = store.dialect.name === "postgres";
      // A schema change may rewrite a big table: no statement timeout.
      if (pg) await tx.exec("SET LOCAL statement_timeout = 0");
      if (planned !== undefined) {
        // PostgreSQL: the row lock orders concurrent changes; SQLite holds
        // the write lock already.
        const [row] = await tx.query(
          `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'${
            pg ? " FOR UPDATE" : ""
          }`,
        );
        if (String(row?.value ?? "0") !== planned) throw new SchemaMoved();
      }
      await fn(tx, (s) => subject = s);
      await tx.run(
        `UPDATE "mb_meta" SET "value" = ? WHERE "key" = 'schema_version'`,
        [uuidv7()],
      );
      if (rollback) throw new DryRun();
    });
  } catch (err) {
    if (err instanceof DryRun) return;
    if (err instanceof MoonbaseError || err instanceof SchemaMoved) throw err;
    if (err instanceof StorageUnavailableError) throw err; // 503, not a 400
    if (!subject) throw err; // before any change: a failure of the database
    const { schema, action, table } = subject;
    const failure = store.dialect.constraintFailure(err);
    if (failure?.kind === "unique") {
      throw new MoonbaseError(
        "conflict",
        `Cannot change entity ${schema.name}: existing records have duplicate values`,
      );
    }
    if (isViewDependency(err)) {
      // Naming the views is a courtesy: when that read fails too, the
      // conflict below still says what to do.
      const names = await readers(table).catch(() => []);
      throw new MoonbaseError(
        "conflict",
        `Cannot ${action} entity ${schema.name}: read by ${
          names.length > 0 ? `view ${names.join(", ")}` : "a view"
        } (change or delete the view first)`,
      );
    }
    const repeated = schema.type === "view"
      ? repeatedViewColumn(err)
      : undefined;
    if (repeated !== undefined) throw repeatedColumn(repeated);
    throw new MoonbaseError(
      "invalid",
      schema.type === "view"
        ? `Cannot accept view_query: it does not run (${
          ddlReason(err, schema.view_query)
        })`
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

/** Points the relation fields `refs` at an entity's new name; returns the schemas saved. */
export async function retarget(
  tx: Queryable,
  refs: RelationRef[],
  from: string,
  to: string,
): Promise<EntitySchema[]> {
  const out: EntitySchema[] = [];
  for (const ref of refs) {
    const other = structuredClone(ref.schema);
    other.fields = other.fields.filter((f) => !f.system);
    for (const f of other.fields) {
      if (f.foreign_key?.entity.toLowerCase() === from.toLowerCase()) {
        f.foreign_key.entity = to;
      }
    }
    await saveSchema(tx, other);
    out.push(other);
  }
  return out;
}
