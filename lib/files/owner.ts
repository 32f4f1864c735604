/**
 * Finding the record that references a stored file.
 *
 * @module
 */

import type { Entity } from "../records/entity.ts";
import type { FieldDef } from "../schema/types.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { Storage } from "../db/storage.ts";

/** The record that references a file, and the field that holds it. */
export interface FileOwner {
  id: string;
  field: FieldDef;
}

/**
 * The record of `entity` whose file fields reference `name` (and which
 * field), or undefined.
 *
 * @example
 * ```ts ignore
 * const owner = await fileOwner(app.storage, app.schemas.get("docs")!, "a_0123456789.png");
 * ```
 */
export async function fileOwner(
  store: Storage,
  entity: Entity,
  name: string,
): Promise<FileOwner | undefined> {
  const fields: FieldDef[] = [];
  const conds: string[] = [];
  for (const f of entity.schema.fields) {
    if (f.type === "file") conds.push(`${columnOf(f.name)} = ?`);
    else if (f.type === "files") {
      conds.push(store.dialect.jsonArrayContains(columnOf(f.name)));
    } else continue;
    fields.push(f);
  }
  if (conds.length === 0) return undefined;
  // Which field holds it: the first condition that matches.
  const slot = conds.length === 1
    ? "0"
    : `CASE ${conds.map((c, i) => `WHEN ${c} THEN ${i}`).join(" ")} END`;
  const names = conds.map(() => name);
  const rows = await store.query(
    `SELECT "id", ${slot} AS "slot" FROM ${tableOf(entity.name)} WHERE ${
      conds.join(" OR ")
    } LIMIT 1`,
    conds.length === 1 ? names : [...names, ...names],
  );
  if (!rows[0]) return undefined;
  const field = fields[Number(rows[0].slot)] ?? fields[0];
  return { id: String(rows[0].id), field };
}
