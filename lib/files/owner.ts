/**
 * Finding the record that references a stored file.
 *
 * @module
 */

import type { Entity } from "../records/entity.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { Storage } from "../db/storage.ts";

/**
 * Id of a record of `entity` whose file fields reference `name`, or
 * undefined.
 *
 * @example
 * ```ts ignore
 * const id = await fileOwner(app.storage, app.schemas.get("docs")!, "a_0123456789.png");
 * ```
 */
export async function fileOwner(
  store: Storage,
  entity: Entity,
  name: string,
): Promise<string | undefined> {
  const conds: string[] = [];
  const params: string[] = [];
  for (const f of entity.schema.fields) {
    if (f.type === "file") conds.push(`${columnOf(f.name)} = ?`);
    else if (f.type === "files") {
      conds.push(store.dialect.jsonArrayContains(columnOf(f.name)));
    } else continue;
    params.push(name);
  }
  if (conds.length === 0) return undefined;
  const rows = await store.query(
    `SELECT "id" FROM ${tableOf(entity.name)} WHERE ${
      conds.join(" OR ")
    } LIMIT 1`,
    params,
  );
  return rows[0] ? String(rows[0].id) : undefined;
}
