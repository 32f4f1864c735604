/**
 * The SQL of expansions, one statement per batch of ids: records by id
 * (`id IN (…)`, a forward relation) and records whose relation field holds
 * one of the ids (`<field> IN (…)`, a back-relation, oldest first, at most
 * `per` per id), each within the caller's `Where`. Below any rule: the
 * expander hands in what the caller may see.
 *
 * @module
 */

import type { Queryable, Row, SqlValue } from "../../db/storage.ts";
import { columnOf, tableOf } from "../../schema/ddl.ts";
import type { EntitySchema } from "../../schema/types.ts";
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

/**
 * Stored rows of `schema` whose relation `field` holds one of `ids`,
 * within `where`, grouped by id and oldest first within each; at most
 * `limits.max + 1` rows in all.
 */
export async function rowsReferencing(
  db: Queryable,
  schema: EntitySchema,
  field: string,
  ids: readonly string[],
  where: Where | undefined,
  limits: ReferencingLimits,
): Promise<Row[]> {
  const out: Row[] = [];
  const col = columnOf(field);
  const w = and(where);
  const table = tableOf(schema.name);
  const cols = selectList(schema);
  for (const part of chunks(ids)) {
    const left = limits.max + 1 - out.length;
    if (left <= 0) break;
    const inner = `SELECT ${cols} FROM ${table} WHERE ${col} IN (${
      marks(part.length)
    })${w.sql}`;
    const sql = limits.per > 0
      ? `SELECT * FROM (SELECT ${cols}, ROW_NUMBER() OVER (PARTITION BY ${col} ORDER BY "created" ASC, "id" ASC) AS "mb_rank" FROM ${table} WHERE ${col} IN (${
        marks(part.length)
      })${w.sql}) AS "mb_ranked" WHERE "mb_rank" <= ${
        Math.trunc(limits.per)
      } ORDER BY ${col}, "mb_rank" LIMIT ${left}`
      : `${inner} ORDER BY ${col}, "created" ASC, "id" ASC LIMIT ${left}`;
    out.push(...await db.query(sql, [...part, ...w.params]));
  }
  return out;
}
