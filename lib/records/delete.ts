/**
 * Deleting a record, with the `on_delete` of every relation that points at
 * it (set null, restrict, cascade), in one transaction.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Queryable, Storage } from "../db/storage.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import { readRow, type RefsOf, selectList, type WriteSteps } from "./crud.ts";
import { constraintError } from "./constraints.ts";
import type { Access } from "./caller_access.ts";

/** One record a delete removed. */
export interface DeletedRecord {
  schema: EntitySchema;
  record: RecordData;
}

/** What a delete produced. */
export interface Deleted {
  /** The record asked for, as it was. */
  record: RecordData;
  /** Every record deleted, that one first, then its cascades. */
  deleted: DeletedRecord[];
}

/** Applies the `on_delete` of every relation pointing at a record being deleted. */
async function releaseRefs(
  tx: Queryable,
  store: Storage,
  schema: EntitySchema,
  id: string,
  refsOf: RefsOf,
  seen: Set<string>,
  deleted: DeletedRecord[],
  changed: WriteSteps["changed"],
): Promise<void> {
  seen.add(`${schema.name}/${id}`);
  for (const ref of refsOf(schema.name)) {
    const table = tableOf(ref.schema.name), col = columnOf(ref.field.name);
    const onDelete = ref.field.foreign_key?.on_delete ?? "set null";
    if (onDelete === "set null") {
      const sql = `UPDATE ${table} SET ${col} = NULL WHERE ${col} = ?`;
      if (!changed) {
        await tx.run(sql, [id]);
        continue;
      }
      const rows = await tx.query(
        `${sql} RETURNING ${selectList(ref.schema)}`,
        [
          id,
        ],
      );
      for (const row of rows) {
        const record = decodeRow(ref.schema, row, store.dialect);
        await changed(tx, {
          entity: ref.schema.name,
          entityId: ref.schema.id,
          id: String(row.id),
          action: "update",
          record,
          previous: { ...record, [ref.field.name]: id },
        });
      }
      continue;
    }
    const rows = await tx.query(
      `SELECT ${selectList(ref.schema)} FROM ${table} WHERE ${col} = ?`,
      [id],
    );
    const children = rows.filter((r) =>
      !seen.has(`${ref.schema.name}/${r.id}`)
    );
    if (children.length === 0) continue;
    if (onDelete === "restrict") {
      throw new MoonbaseError(
        "conflict",
        `Cannot delete record: records of ${ref.schema.name} reference it (${ref.field.name})`,
      );
    }
    if (seen.size > 10_000) {
      throw new MoonbaseError(
        "conflict",
        "Cannot delete record: cascade too large",
      );
    }
    for (const child of children) {
      const childId = String(child.id);
      await releaseRefs(
        tx,
        store,
        ref.schema,
        childId,
        refsOf,
        seen,
        deleted,
        changed,
      );
      await tx.run(`DELETE FROM ${table} WHERE "id" = ?`, [childId]);
      const record = decodeRow(ref.schema, child, store.dialect);
      deleted.push({ schema: ref.schema, record });
      await changed?.(tx, {
        entity: ref.schema.name,
        entityId: ref.schema.id,
        id: childId,
        action: "delete",
        record,
      });
    }
  }
}

/** Deletes a record; undefined when it does not exist or `access` hides it. */
export async function deleteRecord(
  store: Storage,
  schema: EntitySchema,
  id: string,
  refsOf: RefsOf,
  access: Access = {},
  steps: WriteSteps = {},
): Promise<Deleted | undefined> {
  const { where, keep, check } = access;
  const { before, changed } = steps;
  try {
    return await store.transaction(async (tx) => {
      const current = await readRow(
        tx,
        schema,
        id,
        where,
        store.dialect.name === "postgres",
      );
      if (!current) return undefined;
      const record = decodeRow(schema, current, store.dialect);
      if (keep && !(await keep(record, tx))) return undefined;
      await check?.(record, tx);
      await before?.(record, tx, record);
      const deleted: DeletedRecord[] = [];
      await releaseRefs(
        tx,
        store,
        schema,
        id,
        refsOf,
        new Set(),
        deleted,
        changed,
      );
      await tx.run(`DELETE FROM ${tableOf(schema.name)} WHERE "id" = ?`, [id]);
      await changed?.(tx, {
        entity: schema.name,
        entityId: schema.id,
        id,
        action: "delete",
        record,
      });
      return { record, deleted: [{ schema, record }, ...deleted] };
    });
  } catch (err) {
    throw constraintError(store, schema, err);
  }
}
