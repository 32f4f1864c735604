/**
 * Reading and writing schema rows and view columns inside a registry
 * transaction.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import {
  physicalName,
  type Queryable,
  type Row,
  type Storage,
} from "../db/storage.ts";
import type { EntitySchema } from "./types.ts";

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/** Writes a changed schema to `mb_tables`. */
export async function saveSchema(
  tx: Queryable,
  schema: EntitySchema,
): Promise<void> {
  schema.updated = new Date().toISOString();
  await tx.run(
    `UPDATE "mb_tables" SET "name" = ?, "lname" = ?, "schema" = ?, "updated" = ? WHERE "id" = ?`,
    [
      schema.name,
      schema.name.toLowerCase(),
      JSON.stringify(schema),
      schema.updated,
      schema.id,
    ],
  );
}

/** The columns of a just-created view, as read-only fields (an `id` column is required). */
export async function viewFields(
  tx: Queryable,
  store: Storage,
  name: string,
): Promise<EntitySchema["fields"]> {
  const sql = store.dialect.name === "sqlite"
    ? `SELECT "name" FROM pragma_table_info(?)`
    : `SELECT column_name AS "name" FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`;
  let rows: Row[];
  try {
    rows = await tx.query(sql, [physicalName(name)]);
  } catch {
    bad(
      "Cannot create view: its query does not run (a missing table or column?)",
    );
  }
  const names = rows.map((r) => String(r.name));
  const odd = names.find((n) => !/^[A-Za-z0-9_]{1,63}$/.test(n));
  if (odd !== undefined) {
    bad(
      `Cannot create view: column ${
        JSON.stringify(odd.slice(0, 64))
      } must be named with a-z, A-Z, 0-9, _ (use AS)`,
    );
  }
  if (!names.includes("id")) {
    bad("Cannot create view: view_query must return an id column");
  }
  return names.map((n) => ({
    id: n,
    name: n,
    type: "json",
    required: false,
    unique: false,
  }));
}
