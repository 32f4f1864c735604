/**
 * An update or a delete of one record and the append of its change as one
 * statement (PostgreSQL, `WriteSteps.fuseReturning`), as a create is
 * (`WriteSteps.fuse`): one round trip instead of a transaction's five.
 * The database reads the record as it was (locked, `FOR UPDATE`), writes
 * it, and builds the change's bodies itself (lib/records/record_json.ts),
 * so nothing is read first. Only for writes with nothing to run in between:
 * no before-hook, no per-row check, no files, no relation to check, and for
 * a delete no relation pointing at the entity.
 *
 * @module
 */

import type { Row, Storage } from "../db/storage.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { allFields } from "../schema/builtin.ts";
import { BODY_COLUMNS, type ChangeHead, type FusedWrite } from "./changes.ts";
import type { SqlStatement } from "./changes.ts";
import type { Where } from "./list_query.ts";
import type { UpdateStatement } from "./update_sql.ts";
import { recordJsonSql } from "./record_json.ts";

/** `ChangeJournal.togetherReturning` bound to one write (`WriteJournal.fuseReturning`). */
export type FuseReturning = (
  write: SqlStatement,
  head: ChangeHead,
  columns: string,
) => FusedWrite;

const written = new WeakMap<EntitySchema, string>();

/** The entity's columns as the fused statement's outer SELECT names them. */
function writtenColumns(schema: EntitySchema): string {
  let s = written.get(schema);
  if (s === undefined) {
    s = allFields(schema).map((f) => `"mb_write".${columnOf(f.name)}`)
      .join(", ");
    written.set(schema, s);
  }
  return s;
}

function and(sql: string, where?: Where): string {
  return where ? `${sql} AND (${where.sql})` : sql;
}

/**
 * Runs `u` on record `id` (within `where`) fused with its change; the row
 * as stored, or undefined when no record matched (nothing written, no
 * change); `select`: the entity's column list (`selectList`). `fused`
 * false: the entity cannot be fused (`recordJsonSql`), nothing ran.
 */
export async function fusedUpdate(
  store: Storage,
  schema: EntitySchema,
  select: string,
  id: string,
  u: UpdateStatement,
  where: Where | undefined,
  fuse: FuseReturning,
): Promise<{ fused: boolean; row?: Row }> {
  const json = recordJsonSql(schema);
  if (!json) return { fused: false };
  const sql = cached(updates, schema, u.head, where?.sql ?? "", () => {
    const table = tableOf(schema.name);
    // The row as it was, locked first (a concurrent write waits or is
    // waited for; the locked version is the one updated), with its JSON.
    const old = and(
      `SELECT "id" AS "mb:id", ${json} AS ${BODY_COLUMNS.previous} FROM ${table} WHERE "id" = ?`,
      where,
    );
    return `${u.head} FROM (${old} FOR UPDATE) AS "mb_old" WHERE ${table}."id" = "mb_old"."mb:id" RETURNING ${select}, ${json} AS ${BODY_COLUMNS.record}, "mb_old".${BODY_COLUMNS.previous}`;
  });
  const write = { sql, params: [...u.params, id, ...(where?.params ?? [])] };
  return await run(store, schema, id, "update", write, fuse);
}

type Texts = WeakMap<EntitySchema, Map<string, Map<string, string>>>;
const updates: Texts = new WeakMap(), deletes: Texts = new WeakMap();

/**
 * A statement's text, made once per schema object, head and rule: the same
 * string each time, so the driver's lookups by text (placeholders,
 * prepared statements) compare it by reference instead of hashing ~1.5 kB.
 */
function cached(
  texts: Texts,
  schema: EntitySchema,
  head: string,
  where: string,
  make: () => string,
): string {
  let byHead = texts.get(schema);
  if (!byHead) texts.set(schema, byHead = new Map());
  let byWhere = byHead.get(head);
  if (!byWhere) {
    if (byHead.size >= 64) byHead.clear();
    byHead.set(head, byWhere = new Map());
  }
  let sql = byWhere.get(where);
  if (sql === undefined) {
    if (byWhere.size >= 64) byWhere.clear();
    byWhere.set(where, sql = make());
  }
  return sql;
}

/**
 * Deletes record `id` (within `where`) fused with its change; the row as it
 * was, or undefined when none matched. `fused` false: the entity cannot be.
 */
export async function fusedDelete(
  store: Storage,
  schema: EntitySchema,
  select: string,
  id: string,
  where: Where | undefined,
  fuse: FuseReturning,
): Promise<{ fused: boolean; row?: Row }> {
  const json = recordJsonSql(schema);
  if (!json) return { fused: false };
  const sql = cached(
    deletes,
    schema,
    "",
    where?.sql ?? "",
    () =>
      and(`DELETE FROM ${tableOf(schema.name)} WHERE "id" = ?`, where) +
      ` RETURNING ${select}, ${json} AS ${BODY_COLUMNS.record}, NULL::text AS ${BODY_COLUMNS.previous}`,
  );
  const write = { sql, params: [id, ...(where?.params ?? [])] };
  return await run(store, schema, id, "delete", write, fuse);
}

async function run(
  store: Storage,
  schema: EntitySchema,
  id: string,
  action: "update" | "delete",
  write: SqlStatement,
  fuse: FuseReturning,
): Promise<{ fused: true; row?: Row }> {
  const fused = fuse(
    write,
    { entity: schema.name, entityId: schema.id, id, action },
    writtenColumns(schema),
  );
  const rows = await store.query(fused.statement.sql, fused.statement.params);
  fused.done(rows);
  return { fused: true, row: rows[0] };
}
