/**
 * Deleting a record, with the `on_delete` of every relation that points at
 * it (set null, restrict, cascade), in one transaction.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Queryable, Row, Storage } from "../db/storage.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import {
  readRow,
  type RefsOf,
  type RelationRef,
  selectList,
  type WriteSteps,
} from "./crud.ts";
import { constraintError } from "./constraints.ts";
import type { Access } from "./caller_access.ts";
import { fusedDelete } from "./fused_writes.ts";

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
    // A multiple relation holds the id among others: "set null" takes it
    // out of each list, restrict and cascade look at every list holding it.
    const holds = ref.field.multiple
      ? store.dialect.jsonArrayContains(col)
      : `${col} = ?`;
    if (onDelete === "set null" && ref.field.multiple) {
      await removeFromLists(tx, store, ref, id, changed);
      continue;
    }
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
      `SELECT ${selectList(ref.schema)} FROM ${table} WHERE ${holds}`,
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

/**
 * `on_delete: "set null"` of a multiple relation: the id leaves every list
 * that holds it (the others keep their order), each record so changed
 * reported to `changed` as an update.
 */
async function removeFromLists(
  tx: Queryable,
  store: Storage,
  ref: RelationRef,
  id: string,
  changed: WriteSteps["changed"],
): Promise<void> {
  const table = tableOf(ref.schema.name), col = columnOf(ref.field.name);
  const holds = store.dialect.jsonArrayContains(col);
  const without = store.dialect.name === "postgres"
    ? `${col} - ?::text`
    : `(SELECT json_group_array("value") FROM (SELECT "value" FROM json_each(${col}) WHERE "value" <> ? ORDER BY "key"))`;
  const sql = `UPDATE ${table} SET ${col} = ${without} WHERE ${holds}`;
  if (!changed) {
    await tx.run(sql, [id, id]);
    return;
  }
  // The lists as they were, for the events' `previous`.
  const before = await tx.query(
    `SELECT "id", ${col} AS "mb_list" FROM ${table} WHERE ${holds}`,
    [id],
  );
  const was = new Map(before.map((r) => [String(r.id), r.mb_list]));
  const rows = await tx.query(
    `${sql} RETURNING ${selectList(ref.schema)}`,
    [id, id],
  );
  for (const row of rows) {
    const record = decodeRow(ref.schema, row, store.dialect);
    const previous = { ...record };
    previous[ref.field.name] = store.dialect.decode(
      "json",
      was.get(String(row.id)),
    );
    await changed(tx, {
      entity: ref.schema.name,
      entityId: ref.schema.id,
      id: String(row.id),
      action: "update",
      record,
      previous,
    });
  }
}

/**
 * A delete as one statement: without a journal, or with one that fuses it
 * with the change (`row` undefined: no record matched); undefined when it
 * must take a transaction.
 */
async function deleteAlone(
  store: Storage,
  schema: EntitySchema,
  id: string,
  where: Access["where"],
  steps: WriteSteps,
): Promise<{ row?: Row } | undefined> {
  if (!steps.changed) {
    const rows = await store.query(
      `DELETE FROM ${tableOf(schema.name)} WHERE "id" = ?${
        where ? ` AND (${where.sql})` : ""
      } RETURNING ${selectList(schema)}`,
      [id, ...(where?.params ?? [])],
    );
    return { row: rows[0] };
  }
  if (!steps.fuseReturning) return undefined;
  const out = await fusedDelete(
    store,
    schema,
    selectList(schema),
    id,
    where,
    steps.fuseReturning,
  );
  return out.fused ? { row: out.row } : undefined;
}

function deletedRow(store: Storage, schema: EntitySchema, row: Row): Deleted {
  const record = decodeRow(schema, row, store.dialect);
  return { record, deleted: [{ schema, record }] };
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
    if (!keep && !check && !before && refsOf(schema.name).length === 0) {
      // Nothing to read or check first, nothing pointing at it: one DELETE
      // … RETURNING is atomic on its own, and so is one that appends its
      // change too (PostgreSQL).
      const one = await deleteAlone(store, schema, id, where, steps);
      if (one) return one.row && deletedRow(store, schema, one.row);
    }
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
