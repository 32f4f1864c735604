/**
 * Writing schema rows inside a registry transaction.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";
import type { EntitySchema } from "./types.ts";

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
