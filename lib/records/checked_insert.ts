/**
 * A create whose add rule has an exact SQL form (`Access.checkSql`), checked
 * by the database in the INSERT itself instead of by reading the related
 * records first and evaluating the rule here: `INSERT … SELECT … FROM <the
 * new row> WHERE <rule>`, and no row inserted is the rule's refusal.
 *
 * On PostgreSQL the whole create is one statement, its own transaction
 * (`insertChecked`): the relation values' targets locked `FOR SHARE` (as
 * `checkRelations` does; a concurrent delete of one waits for the commit
 * and then sees the new reference, or wins and the create finds it
 * missing), the rule over the new row, the INSERT, and the append of its
 * change (`ChangeJournal.appendAfter`); the statement answers which
 * relations' targets it found and whether the rule allowed, so a refusal
 * answers as the checks one by one would (400 for a missing target first,
 * then the rule's 403), with nothing stored and nothing appended. One round
 * trip where the checks one by one take eight.
 *
 * On SQLite (`insertWhere`) the relations are checked as before, then the
 * INSERT carries the rule: no related record is read into JavaScript.
 *
 * @module
 */

import type { Queryable, Row, SqlValue, Storage } from "../db/storage.ts";
import { physicalName } from "../db/storage.ts";
import { tableOf } from "../schema/ddl.ts";
import { kindOf } from "../schema/field_types.ts";
import { allFields } from "../schema/builtin.ts";
import type { EntitySchema } from "../schema/types.ts";
import type { FusedWrite, SqlStatement } from "./changes.ts";
import type { CheckSql } from "./caller_access.ts";
import type { Where } from "./list_query.ts";
import {
  IDS_PER_CHECK,
  missingRelations,
  type RelationTarget,
} from "./constraints.ts";

/** How the new row is named in the statement (the rule reads it so). */
export const NEW_ROW = `"mb_new"`;

const casts = new WeakMap<EntitySchema, Map<string, string>>();

/** PostgreSQL: each column's type, to give the new row's values theirs. */
function castsOf(store: Storage, schema: EntitySchema): Map<string, string> {
  let m = casts.get(schema);
  if (!m) {
    m = new Map(
      allFields(schema).map((f) => [
        physicalName(f.name),
        `::${store.dialect.columnType(kindOf(f))}`,
      ]),
    );
    casts.set(schema, m);
  }
  return m;
}

/**
 * The new row as a one-row SELECT of its values, each named as its column
 * (on PostgreSQL cast to the column's type: the rule compares them as it
 * would the stored row's).
 */
function newRow(
  store: Storage,
  schema: EntitySchema,
  cols: ReadonlyMap<string, SqlValue>,
): string {
  const cast = store.dialect.name === "postgres"
    ? castsOf(store, schema)
    : undefined;
  return `SELECT ${
    [...cols.keys()].map((c) => `?${cast?.get(c) ?? ""} AS "${c}"`).join(", ")
  }`;
}

/** `INSERT INTO <the entity's table> (<the columns of cols>)`. */
export function insertHead(
  schema: EntitySchema,
  cols: ReadonlyMap<string, SqlValue>,
): string {
  return `INSERT INTO ${tableOf(schema.name)} (${
    [...cols.keys()].map((c) => `"${c}"`).join(", ")
  })`;
}

/**
 * Inserts `cols` in `tx` if the new row meets `where` (the rule's SQL over
 * `NEW_ROW`); false when it did not (nothing inserted).
 */
export async function insertWhere(
  tx: Queryable,
  store: Storage,
  schema: EntitySchema,
  cols: ReadonlyMap<string, SqlValue>,
  where: Where,
): Promise<boolean> {
  const n = await tx.run(
    `${insertHead(schema, cols)} SELECT * FROM (${
      newRow(store, schema, cols)
    }) AS ${NEW_ROW} WHERE ${where.sql}`,
    [...cols.values(), ...where.params],
  );
  return n > 0;
}

/**
 * PostgreSQL: the create as one statement (see the module doc), or
 * undefined when it cannot be (the rule has no exact SQL, or a relation
 * names more ids than one check reads). `decide` takes the statement's
 * rows: it throws the refusal (a missing target, then the rule's), else
 * hands them to the append `appendOf` made (the change's, if any) and
 * answers true; false when nothing was written because a relation's
 * target changed while its lock waited (the rule read the version before):
 * the create is then to be checked one step at a time.
 */
export function checkedInsert(
  store: Storage,
  schema: EntitySchema,
  cols: ReadonlyMap<string, SqlValue>,
  rule: CheckSql,
  targets: readonly RelationTarget[],
  appendOf: (() => FusedWrite) | undefined,
): { statement: SqlStatement; decide(rows: Row[]): boolean } | undefined {
  if (targets.some((t) => t.ids.length > IDS_PER_CHECK)) return undefined;
  const where = rule.where(NEW_ROW);
  if (!where) return undefined;
  const append = appendOf?.();
  const params: SqlValue[] = [];
  const ctes: string[] = [];
  const found: string[] = [];
  const guards = ['"mb_allowed"'];
  if (targets.length > 0) {
    const stale: string[] = [];
    const refs = targets.map((t, i) => {
      params.push(...t.ids);
      const locked = `"mb_lock${i}"`;
      // Locked as `checkRelations` locks them, until the commit: each as
      // it is now (a change committed while the lock waited included),
      // with its version.
      ctes.push(
        `${locked} AS MATERIALIZED (SELECT "id", xmin::text AS "mb_v" FROM ${t.table} WHERE "id" IN (${
          t.ids.map(() => "?").join(", ")
        }) FOR SHARE)`,
      );
      // The rule reads the records as the statement began: a version that
      // is not the one locked was changed since (see `decide`).
      stale.push(
        `EXISTS (SELECT 1 FROM ${locked} JOIN ${t.table} AS "mb_then" ON "mb_then"."id" = ${locked}."id" WHERE "mb_then".xmin::text <> ${locked}."mb_v")`,
      );
      const name = `"mb_ref${i}"`;
      found.push(name);
      guards.push(`cardinality(${name}) = ${new Set(t.ids).size}`);
      return `ARRAY(SELECT "id" FROM ${locked}) AS ${name}`;
    });
    ctes.push(
      `"mb_refs" AS MATERIALIZED (SELECT ${refs.join(", ")}, (${
        stale.join(" OR ")
      }) AS "mb_stale")`,
    );
    guards.push(`NOT "mb_stale"`);
  }
  ctes.push(`${NEW_ROW} AS MATERIALIZED (${newRow(store, schema, cols)})`);
  params.push(...cols.values());
  ctes.push(
    `"mb_rule" AS MATERIALIZED (SELECT COALESCE((${where.sql}), FALSE) AS "mb_allowed" FROM ${NEW_ROW})`,
  );
  params.push(...where.params);
  const from = targets.length > 0
    ? `${NEW_ROW}, "mb_refs", "mb_rule"`
    : `${NEW_ROW}, "mb_rule"`;
  ctes.push(
    `"mb_write" AS (${
      insertHead(schema, cols)
    } SELECT ${NEW_ROW}.* FROM ${from} WHERE ${
      guards.join(" AND ")
    } RETURNING 1)`,
  );
  if (append) {
    ctes.push(`"mb_event" AS (${append.statement.sql})`);
    params.push(...append.statement.params);
  }
  const answer = [
    ...found,
    ...(targets.length > 0 ? [`"mb_stale"`] : []),
    `"mb_allowed"`,
    `(SELECT COUNT(*) FROM "mb_write") AS "mb_written"`,
    ...(append ? [`(SELECT "id" FROM "mb_event") AS "id"`] : []),
  ];
  const sql = `WITH ${ctes.join(", ")} SELECT ${answer.join(", ")} FROM ${
    targets.length > 0 ? `"mb_refs", "mb_rule"` : `"mb_rule"`
  }`;
  return {
    statement: { sql, params },
    decide(rows) {
      const row = rows[0] ?? {};
      const missing = missingRelations(
        targets,
        found.map((name) => new Set(idsOf(row[name.slice(1, -1)]))),
      );
      if (missing) throw missing;
      // A related record changed while its lock waited: the rule read it
      // as it was, so nothing was written; the checks one step at a time
      // read it as it is.
      if (row.mb_stale === true) return false;
      if (Number(row.mb_written ?? 0) === 0) rule.refuse();
      append?.done(rows);
      return true;
    },
  };
}

/** The ids of a PostgreSQL text array as the driver returns it. */
function idsOf(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}
