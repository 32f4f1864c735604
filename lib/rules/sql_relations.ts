/**
 * The SQL of reads through relations (`relations.ts` binds them): a record
 * the compiler reads columns of (the row itself, a row of a subquery, or
 * the record a relation points at, one scalar subquery per column), a
 * back-relation's records (how a row of them is linked to its parent), and
 * the conditions over them: `EXISTS` for `.some`/`.every`, `COUNT(*)` for
 * `.length`, and `<relation> IN (SELECT "id" … WHERE …)` for a condition
 * that reads one related record only (the form the index on the relation
 * column serves).
 *
 * A back-relation through a relation field holding several ids (`multiple`)
 * links by membership in the JSON list (`heldBy`); `.some`, `.every` and
 * `.length` are built on a `ListRef`'s `link` alone, so a multiple relation
 * read forward (`record.tags.some(t => …)`) is a `ListRef` whose link is
 * `<alias>."id"` among the record's list's ids (`idIn`).
 *
 * @module
 */

import type { SqlTable } from "./sql_context.ts";
import { and, type Cond, type Frag, not, or, sql } from "./sql_fragment.ts";

/** A record whose fields the compiler reads. */
export interface RecordRef {
  /** The quoted SQL of a field's value where it is read, or undefined if none. */
  column(name: string): string | undefined;
  /** The declared type of a field. */
  fieldType(name: string): string | undefined;
}

/** The records of a back-relation, or of a relation holding several ids. */
export interface ListRef {
  /** The entity of the records. */
  readonly entity: string;
  readonly table: SqlTable;
  /** Condition: the row `alias` belongs to the list. */
  link(alias: string): Frag;
  /** The reader's condition on a row `alias` (filters; `true` for rules). */
  guard(alias: string): Cond;
}

/**
 * A row of a subquery's `FROM`, named `alias`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { aliasRef } from "moonbase/lib/rules/sql_relations.ts";
 * const t = { table: '"users"', column: (n: string) => `"${n}"`, fieldType: () => "string" };
 * assert.equal(aliasRef(t, '"mb_r1"').column("name"), '"mb_r1"."name"');
 * ```
 */
export function aliasRef(table: SqlTable, alias: string): RecordRef {
  return {
    column: (name) => {
      const c = table.column(name);
      return c === undefined ? undefined : `${alias}.${c}`;
    },
    fieldType: (name) => table.fieldType(name),
  };
}

/**
 * The condition "`list` names `id`": equality for a relation holding one id,
 * membership in the JSON list of ids for one holding several (`many`). Used
 * inside a subquery's `WHERE` only (a NULL there counts as false).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heldBy } from "moonbase/lib/rules/sql_relations.ts";
 * assert.equal(heldBy('"a"."post"', '"posts"."id"', false, "sqlite"), '"a"."post" = "posts"."id"');
 * assert.equal(heldBy('"a"."tags"', '"t"."id"', true, "postgres"), '"a"."tags" @> jsonb_build_array("t"."id")');
 * ```
 */
export function heldBy(
  list: string,
  id: string,
  many: boolean,
  dialect: "sqlite" | "postgres",
): string {
  if (!many) return `${list} = ${id}`;
  return dialect === "postgres"
    ? `${list} @> jsonb_build_array(${id})`
    : `EXISTS (SELECT 1 FROM json_each(${list}) WHERE json_each.value = ${id})`;
}

/**
 * The condition "`id` is one of the ids in the JSON list `list`" (a
 * multiple relation read forward: the related row `id` belongs to the
 * record's list), as `id IN (<the list's elements>)` so the related table's
 * primary key serves it. Used inside a subquery's `WHERE` only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idIn } from "moonbase/lib/rules/sql_relations.ts";
 * assert.equal(idIn('"a"."id"', '"t"."tags"', "sqlite"), '"a"."id" IN (SELECT json_each.value FROM json_each("t"."tags"))');
 * assert.equal(idIn('"a"."id"', '"t"."tags"', "postgres"), '"a"."id" IN (SELECT jsonb_array_elements_text("t"."tags"))');
 * ```
 */
export function idIn(
  id: string,
  list: string,
  dialect: "sqlite" | "postgres",
): string {
  return dialect === "postgres"
    ? `${id} IN (SELECT jsonb_array_elements_text(${list}))`
    : `${id} IN (SELECT json_each.value FROM json_each(${list}))`;
}

/**
 * `EXISTS (SELECT 1 FROM <table> AS <alias> WHERE <where>)`, folded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exists } from "moonbase/lib/rules/sql_relations.ts";
 * assert.equal(exists('"c"', '"a"', false), false);
 * assert.deepEqual(exists('"c"', '"a"', true), { sql: 'EXISTS (SELECT 1 FROM "c" AS "a")', params: [] });
 * ```
 */
export function exists(table: string, alias: string, where: Cond): Cond {
  if (where === false) return false;
  return sql(
    `EXISTS (SELECT 1 FROM ${table} AS ${alias}`,
    where === true ? "" : sql(" WHERE ", where),
    ")",
  );
}

/**
 * `.some(c => cond)` / `.every(c => cond)` over a list, `cond` reading the
 * row `alias`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quantified } from "moonbase/lib/rules/sql_relations.ts";
 * const list = {
 *   entity: "c",
 *   table: { table: '"c"', column: (n: string) => `"${n}"`, fieldType: () => "string" },
 *   link: (a: string) => ({ sql: `${a}."post" = "posts"."id"`, params: [] }),
 *   guard: () => true,
 * };
 * assert.deepEqual(quantified("every", list, '"a"', true), true);
 * ```
 */
export function quantified(
  method: "some" | "every",
  list: ListRef,
  alias: string,
  cond: Cond,
): Cond {
  const base = and(list.link(alias), list.guard(alias));
  return method === "some"
    ? exists(list.table.table, alias, and(base, cond))
    : not(exists(list.table.table, alias, and(base, not(cond))));
}

/**
 * `(SELECT COUNT(*) …)` of a list, or undefined when its SQL would need
 * parameters (a column carries none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { countOf } from "moonbase/lib/rules/sql_relations.ts";
 * const list = {
 *   entity: "c",
 *   table: { table: '"c"', column: (n: string) => `"${n}"`, fieldType: () => "string" },
 *   link: (a: string) => ({ sql: `${a}."post" = "posts"."id"`, params: [] }),
 *   guard: () => true,
 * };
 * assert.equal(countOf(list, '"a"'), '(SELECT COUNT(*) FROM "c" AS "a" WHERE "a"."post" = "posts"."id")');
 * ```
 */
export function countOf(list: ListRef, alias: string): string | undefined {
  const where = and(list.link(alias), list.guard(alias));
  if (where === false) return "0";
  if (where !== true && where.params.length > 0) return undefined;
  return `(SELECT COUNT(*) FROM ${list.table.table} AS ${alias}${
    where === true ? "" : ` WHERE ${where.sql}`
  })`;
}

/**
 * The value of field `column` of the record `fk` points at (a scalar
 * subquery, NULL when it points at none), or undefined when the guard
 * needs parameters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relatedColumn } from "moonbase/lib/rules/sql_relations.ts";
 * assert.equal(
 *   relatedColumn('"users"', '"mb_r1"', '"name"', '"posts"."author"', true),
 *   '(SELECT "mb_r1"."name" FROM "users" AS "mb_r1" WHERE "mb_r1"."id" = "posts"."author")',
 * );
 * ```
 */
export function relatedColumn(
  table: string,
  alias: string,
  column: string,
  fk: string,
  guard: Cond,
): string | undefined {
  if (guard === false) return "NULL";
  if (guard !== true && guard.params.length > 0) return undefined;
  return `(SELECT ${alias}.${column} FROM ${table} AS ${alias} WHERE ${alias}."id" = ${fk}${
    guard === true ? "" : ` AND ${guard.sql}`
  })`;
}

/**
 * A condition on one related record, as a condition on the row: `fk IN
 * (SELECT "id" FROM <table> WHERE guard AND inner)`, plus (when the
 * condition holds for a relation pointing at no record, `atAbsent`) the rows
 * whose relation points at none the reader may read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { liftedCond } from "moonbase/lib/rules/sql_relations.ts";
 * const inner = { sql: '"mb_r1"."owner" = ?', params: ["u1"] };
 * assert.deepEqual(
 *   liftedCond({ table: '"projects"', fkOut: '"project"', fkIn: '"tasks"."project"', alias: '"mb_r1"',
 *     absentAlias: '"mb_r2"', guard: () => true, inner, atAbsent: false }),
 *   { sql: '("project" IS NOT NULL AND "project" IN (SELECT "mb_r1"."id" FROM "projects" AS "mb_r1" WHERE "mb_r1"."owner" = ?))', params: ["u1"] },
 * );
 * ```
 */
export function liftedCond(o: {
  table: string;
  /** The relation column where the condition stands, and inside a subquery. */
  fkOut: string;
  fkIn: string;
  alias: string;
  absentAlias: string;
  guard: (alias: string) => Cond;
  inner: Cond;
  atAbsent: boolean;
}): Cond {
  const where = and(o.guard(o.alias), o.inner);
  const present: Cond = where === false ? false : and(
    { sql: `${o.fkOut} IS NOT NULL`, params: [] },
    sql(
      `${o.fkOut} IN (SELECT ${o.alias}."id" FROM ${o.table} AS ${o.alias}`,
      where === true ? "" : sql(" WHERE ", where),
      ")",
    ),
  );
  if (!o.atAbsent) return present;
  const a = o.absentAlias;
  const none = not(
    exists(
      o.table,
      a,
      and({ sql: `${a}."id" = ${o.fkIn}`, params: [] }, o.guard(a)),
    ),
  );
  return or(present, none);
}
