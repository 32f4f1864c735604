/**
 * The SQL of expansions, one statement per batch of ids: records by id
 * (`id IN (…)`, a forward relation) and records whose relation field holds
 * one of the ids (`<field> IN (…)`, a back-relation, oldest first, at most
 * `per` per id), each within the caller's `Where`. Below any rule: the
 * expander hands in what the caller may see.
 *
 * @module
 */

import type { Dialect, Queryable, Row, SqlValue } from "../../db/storage.ts";
import { columnOf, tableOf } from "../../schema/ddl.ts";
import type { EntitySchema, FieldDef } from "../../schema/types.ts";
import { selectList } from "../crud.ts";
import type { Where } from "../list_query.ts";

/** Ids per statement (well under either database's parameter limit). */
export const IDS_PER_QUERY = 500;

function chunks<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += IDS_PER_QUERY) {
    out.push(list.slice(i, i + IDS_PER_QUERY));
  }
  return out;
}

function marks(n: number): string {
  return new Array(n).fill("?").join(", ");
}

function and(where: Where | undefined): { sql: string; params: SqlValue[] } {
  return where
    ? { sql: ` AND (${where.sql})`, params: where.params }
    : { sql: "", params: [] };
}

/** Stored rows of `schema` whose id is one of `ids`, within `where`. */
export async function rowsByIds(
  db: Queryable,
  schema: EntitySchema,
  ids: readonly string[],
  where?: Where,
): Promise<Row[]> {
  const out: Row[] = [];
  const w = and(where);
  for (const part of chunks(ids)) {
    out.push(
      ...await db.query(
        `SELECT ${selectList(schema)} FROM ${
          tableOf(schema.name)
        } WHERE "id" IN (${marks(part.length)})${w.sql}`,
        [...part, ...w.params],
      ),
    );
  }
  return out;
}

/** How many rows a back-relation reads. */
export interface ReferencingLimits {
  /**
   * Rows per id, oldest first (`created`, then `id`), counted within
   * `where`; 0: no cap in SQL (a per-row rule decides after, the caller
   * caps).
   */
  per: number;
  /** Rows in all: one more is read, so the caller knows it passed. */
  max: number;
}

/** The column naming the id a back-relation's row was found under. */
export const PARENT_COLUMN = "mb_parent";

/**
 * Stored rows of `schema` whose relation `field` holds one of `ids`,
 * within `where`, grouped by id and oldest first within each; at most
 * `limits.max + 1` rows in all. Each row carries the id it was found under
 * in {@link PARENT_COLUMN}: a record of a multiple relation is one row per
 * id of `ids` its list holds.
 */
export async function rowsReferencing(
  db: Queryable,
  dialect: Dialect,
  schema: EntitySchema,
  field: FieldDef,
  ids: readonly string[],
  where: Where | undefined,
  limits: ReferencingLimits,
): Promise<Row[]> {
  const out: Row[] = [];
  const w = and(where);
  const table = tableOf(schema.name);
  const cols = selectList(schema);
  const parent = `"${PARENT_COLUMN}"`;
  for (const part of chunks(ids)) {
    const left = limits.max + 1 - out.length;
    if (left <= 0) break;
    const from = field.multiple
      ? heldIn(dialect, table, columnOf(field.name), part)
      : {
        sql: `${table} WHERE ${columnOf(field.name)} IN (${
          marks(part.length)
        })`,
        params: part,
        parent: columnOf(field.name),
        pick: `${columnOf(field.name)} AS ${parent}`,
      };
    const sql = limits.per > 0
      ? `SELECT * FROM (SELECT ${cols}, ${from.pick}, ROW_NUMBER() OVER (PARTITION BY ${from.parent} ORDER BY "created" ASC, "id" ASC) AS "mb_rank" FROM ${from.sql}${w.sql}) AS "mb_ranked" WHERE "mb_rank" <= ${
        Math.trunc(limits.per)
      } ORDER BY ${parent}, "mb_rank" LIMIT ${left}`
      : `SELECT ${cols}, ${from.pick} FROM ${from.sql}${w.sql} ORDER BY ${from.parent}, "created" ASC, "id" ASC LIMIT ${left}`;
    out.push(...await db.query(sql, [...from.params, ...w.params]));
  }
  return out;
}

/** The rows a back-relation reads from (ending in a WHERE clause). */
interface From {
  sql: string;
  params: readonly string[];
  /** The parent id's expression in `sql`. */
  parent: string;
  /** The parent id, selected as {@link PARENT_COLUMN}. */
  pick: string;
}

/**
 * The rows whose list `col` holds one of `ids`, one row per id held (in
 * {@link PARENT_COLUMN}), as a derived table under the table's own name (a
 * rule's conditions read its columns unqualified, never the list's
 * elements). PostgreSQL finds the rows through the column's GIN index
 * (`@>`); SQLite reads the table.
 */
function heldIn(
  dialect: Dialect,
  table: string,
  col: string,
  ids: readonly string[],
): From {
  const list = `${table}.${col}`;
  const parent = `"${PARENT_COLUMN}"`;
  if (dialect.name === "postgres") {
    const one = new Array(ids.length).fill("jsonb_build_array(?::text)");
    return {
      sql:
        `(SELECT ${table}.*, "mb_held"."value" AS ${parent} FROM ${table} CROSS JOIN LATERAL jsonb_array_elements_text(${list}) AS "mb_held"("value") WHERE ${list} @> ANY (ARRAY[${
          one.join(", ")
        }]) AND "mb_held"."value" IN (${
          marks(ids.length)
        })) AS ${table} WHERE 1 = 1`,
      params: [...ids, ...ids],
      parent,
      pick: parent,
    };
  }
  return {
    sql:
      `(SELECT ${table}.*, "mb_held"."value" AS ${parent} FROM ${table}, json_each(${list}) AS "mb_held" WHERE "mb_held"."value" IN (${
        marks(ids.length)
      })) AS ${table} WHERE 1 = 1`,
    params: ids,
    parent,
    pick: parent,
  };
}
