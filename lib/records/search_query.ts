/**
 * `search` on a list: the condition "every word, the last one as a prefix"
 * against the entity's search index (lib/schema/search_ddl.ts) and the
 * relevance of a record, in SQL on both databases, or in JavaScript for a
 * record at hand (under a list rule checked row by row). Words come from
 * lib/rules/text_fold.ts `searchWords` (letters and digits only), so they
 * carry no query syntax of FTS5 or tsquery; they are bound, never inlined.
 *
 * @module
 */

import type { Dialect, SqlValue } from "../db/storage.ts";
import { tableOf } from "../schema/ddl.ts";
import { searchableFields, searchTableOf } from "../schema/search_ddl.ts";
import type { EntitySchema } from "../schema/types.ts";
import { searchText } from "../rules/text_fold.ts";
import type { RecordData } from "./codec.ts";

/** A SQL piece with its parameters. */
export interface SearchSql {
  sql: string;
  params: SqlValue[];
}

/** The name of the relevance column of a list ordered by relevance. */
export const RANK_KEY = "mb_rank";

/**
 * The FTS5 query (SQLite) or tsquery (PostgreSQL) text of the words.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchQueryText } from "moonbase/lib/records/search_query.ts";
 * assert.equal(searchQueryText(["emile", "zo"], "sqlite"), '"emile" "zo"*');
 * assert.equal(searchQueryText(["emile", "zo"], "postgres"), "'emile' & 'zo':*");
 * ```
 */
export function searchQueryText(
  words: readonly string[],
  dialect: Dialect["name"],
): string {
  const last = words.length - 1;
  return dialect === "postgres"
    ? words.map((w, i) => `'${w}'${i === last ? ":*" : ""}`).join(" & ")
    : words.map((w, i) => `"${w}"${i === last ? "*" : ""}`).join(" ");
}

/** `"id" IN (…)`: the records whose indexed text has every word. */
export function searchMatchSql(
  schema: EntitySchema,
  dialect: Dialect,
  words: readonly string[],
): SearchSql {
  const t = searchTableOf(schema);
  const q = searchQueryText(words, dialect.name);
  return dialect.name === "postgres"
    ? {
      sql: `"id" IN (SELECT "id" FROM "${t}" WHERE "vec" @@ ?::tsquery)`,
      params: [q],
    }
    : {
      sql:
        `"id" IN (SELECT "id" FROM "${t}" WHERE "n" IN (SELECT rowid FROM "${t}_fts" WHERE "${t}_fts" MATCH ?))`,
      params: [q],
    };
}

/**
 * The relevance of the list's row (a number; higher first): it reads that
 * record's indexed text alone (PostgreSQL `ts_rank`, SQLite
 * `mb_search_rank`), never statistics over other records.
 */
export function searchRankSql(
  schema: EntitySchema,
  dialect: Dialect,
  words: readonly string[],
): SearchSql {
  const t = searchTableOf(schema);
  const outer = `${tableOf(schema.name)}."id"`;
  return dialect.name === "postgres"
    ? {
      sql:
        `(SELECT ts_rank(s."vec", ?::tsquery)::float8 FROM "${t}" s WHERE s."id" = ${outer})`,
      params: [searchQueryText(words, "postgres")],
    }
    : {
      sql:
        `(SELECT mb_search_rank(s."body", ?) FROM "${t}" s WHERE s."id" = ${outer})`,
      params: [words.join(" ")],
    };
}

/**
 * Whether a record matches the words, computed from its values as the
 * index would hold them (for a list whose rule is checked row by row).
 */
export function searchMatches(
  schema: EntitySchema,
  record: RecordData,
  words: readonly string[],
): boolean {
  const parts = searchableFields(schema)
    .map((f) => record[f.name])
    .filter((v): v is string => typeof v === "string");
  const tokens = (searchText(parts.join(" ")) ?? "").split(" ");
  const last = words.length - 1;
  return words.every((w, i) =>
    tokens.some((t) => i === last ? t.startsWith(w) : t === w)
  );
}

/**
 * The first page of a search by relevance with no rule and no filter, as
 * lib/records/list.ts runs it (for the benchmark's bare handler, which runs
 * the same statement beside Moonbase).
 */
export function rankedSearchSql(
  schema: EntitySchema,
  dialect: Dialect,
  words: readonly string[],
  columns: string,
  limit: number,
): SearchSql {
  const rank = searchRankSql(schema, dialect, words);
  const match = searchMatchSql(schema, dialect, words);
  return {
    sql: `SELECT * FROM (SELECT ${columns}, ${rank.sql} AS "${RANK_KEY}" FROM ${
      tableOf(schema.name)
    } WHERE (${match.sql})) AS "mb_ranked" ORDER BY "${RANK_KEY}" DESC NULLS LAST, "id" ASC LIMIT ${limit}`,
    params: [...rank.params, ...match.params],
  };
}
