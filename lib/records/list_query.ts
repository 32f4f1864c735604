/**
 * List parameters (`limit`, `after`, `sort`, `fields`, `count`, `filter`) and
 * the keyset SQL they become. Order is the sort keys then `id`; NULL sorts as
 * the smallest value on both databases (ASC NULLS FIRST / DESC NULLS LAST).
 *
 * Over 350 lines, one idea: a list's parameters and the keyset SQL they
 * become; kept whole because parsing, order and the after-cursor condition
 * share the sort keys.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { type ColumnKind, physicalName, type SqlValue } from "../db/storage.ts";
import { kindOf } from "../schema/field_types.ts";
import type { EntitySchema, FieldDef } from "../schema/types.ts";
import { allFields } from "../schema/builtin.ts";
import { searchableFields } from "../schema/search_ddl.ts";
import { MAX_SEARCH_WORDS, searchWords } from "../rules/text_fold.ts";
import { RANK_KEY } from "./search_query.ts";

/** Default and largest page size. */
export const DEFAULT_LIMIT = 50, MAX_LIMIT = 500;

/** One sort key. */
export interface SortKey {
  /** A field, or a path through relations (`author.name`). */
  field: string;
  desc: boolean;
  /** A path's value (resolved for the caller: `RuleEngine.sortVia`). */
  via?: SortVia;
}

/** A sort key's value through relations: its SQL, parameters and column kind. */
export interface SortVia {
  readonly sql: string;
  readonly params: readonly unknown[];
  readonly kind: ColumnKind;
}

/** The result column holding sort key `i`'s value through relations. */
export const viaColumn = (i: number): string => `mb_sort${i}`;

/** A sort key's value in SQL, with its parameters. */
function keyExpr(k: SortKey): Where {
  return k.via
    ? { sql: k.via.sql, params: [...k.via.params] as SqlValue[] }
    : { sql: `"${physicalName(k.field)}"`, params: [] };
}

/** A sort path (`author.name`): names joined by dots. */
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){1,6}$/;

/** Parsed list options. */
export interface ListOptions {
  limit: number;
  /** The sealed cursor of the previous page (opened by the list, which knows the caller). */
  after?: string;
  sort: SortKey[];
  fields?: string[];
  count: boolean;
  filter?: string;
  /** `search`: its words, folded (the last one a prefix). */
  search?: string[];
}

/** A SQL condition with its parameters. */
export interface Where {
  sql: string;
  params: SqlValue[];
}

const KNOWN = new Set([
  "limit",
  "after",
  "sort",
  "fields",
  "count",
  "filter",
  "search",
  "token",
]);

function bad(message: string): never {
  throw new MoonbaseError("invalid", message);
}

/**
 * The 400 of a parameter lists do not take, with what to do: most often a
 * filter's `&&` sent unencoded (the `&` ends the filter and the rest reads as
 * a parameter), or a field name used as a parameter.
 */
function unknownParameter(
  schema: EntitySchema,
  q: URLSearchParams,
  key: string,
): never {
  if (key === "expand") {
    // The API and `{ as }` lists expand (lib/records/service.ts); a
    // program's own list has no caller whose rules the expansions pass.
    bad(
      "Cannot list records: expand needs a caller; list with { as: <caller> } (or through the records API)",
    );
  }
  const head = `Cannot list records: unknown parameter ${
    JSON.stringify(key.slice(0, 64))
  }`;
  if (q.has("filter")) {
    bad(
      `${head}; if it is part of the filter, URL-encode the filter (an unencoded "&" ends it: write && as %26%26, or let curl encode it with -G --data-urlencode)`,
    );
  }
  if (fieldMap(schema).has(key)) {
    bad(
      `${head}; to filter by a field, use filter=<expression> (e.g. filter=${key} == "x", URL-encoded)`,
    );
  }
  bad(
    `${head} (lists take limit, after, sort, fields, count, filter, search and expand)`,
  );
}

const fieldMaps = new WeakMap<EntitySchema, Map<string, FieldDef>>();

/** The listable fields by name (cached per schema object: they never change). */
function fieldMap(schema: EntitySchema): Map<string, FieldDef> {
  let m = fieldMaps.get(schema);
  if (m === undefined) {
    const fields = schema.type === "view" ? schema.fields : allFields(schema);
    m = new Map(
      fields.filter((f) => f.name !== "password").map((f) => [f.name, f]),
    );
    fieldMaps.set(schema, m);
  }
  return m;
}

/**
 * Parses list query parameters; anything unknown or malformed is a 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseListOptions } from "moonbase/lib/records/list_query.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const schema = { id: "e", name: "posts", type: "base" as const, view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "", rules: adminOnlyRules(), fields: [] };
 * const o = parseListOptions(schema, new URLSearchParams("limit=10&sort=-created"));
 * assert.ok(o.limit === 10 && o.sort[0].desc);
 * ```
 */
export function parseListOptions(
  schema: EntitySchema,
  q: URLSearchParams,
): ListOptions {
  for (const key of q.keys()) {
    if (!KNOWN.has(key)) unknownParameter(schema, q, key);
    if (q.getAll(key).length > 1) {
      bad(`Cannot list records: parameter "${key}" given twice`);
    }
  }
  const fields = fieldMap(schema);
  const opts: ListOptions = { limit: DEFAULT_LIMIT, sort: [], count: false };
  const limit = q.get("limit");
  if (limit !== null) {
    if (
      !/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT
    ) {
      bad(
        `Cannot list records: limit must be an integer from 1 to ${MAX_LIMIT}`,
      );
    }
    opts.limit = Number(limit);
  }
  const sort = q.get("sort");
  if (sort !== null && sort !== "") {
    const seen = new Set<string>();
    for (const part of sort.split(",").map((s) => s.trim())) {
      const desc = part.startsWith("-");
      const name = part.replace(/^[-+]/, "");
      if (name.includes(".") && schema.type !== "view") {
        // A path through relations: resolved for the caller (RuleEngine.sortVia).
        if (!PATH.test(name) || !fields.has(name.slice(0, name.indexOf(".")))) {
          const head = name.slice(0, name.indexOf("."));
          bad(
            `Cannot list records: cannot sort by ${
              name.slice(0, 64)
            }: ${schema.name} has no relation field "${head.slice(0, 64)}"`,
          );
        }
        if (seen.has(name)) {
          bad(`Cannot list records: sort names ${name} twice`);
        }
        seen.add(name);
        opts.sort.push({ field: name, desc });
        if (opts.sort.length > 5) {
          bad("Cannot list records: at most 5 sort keys");
        }
        continue;
      }
      const f = fields.get(name);
      if (!f) {
        bad(
          `Cannot list records: cannot sort by unknown field "${
            name.slice(0, 64)
          }"`,
        );
      }
      if (kindOf(f) === "json" && schema.type !== "view") {
        bad(`Cannot list records: cannot sort by ${name}`);
      }
      if (seen.has(name)) bad(`Cannot list records: sort names ${name} twice`);
      seen.add(name);
      if (name !== "id") opts.sort.push({ field: name, desc });
      else opts.sort.push({ field: "id", desc });
      if (opts.sort.length > 5) bad("Cannot list records: at most 5 sort keys");
    }
  }
  const pick = q.get("fields");
  if (pick !== null && pick !== "") {
    opts.fields = pick.split(",").map((s) => s.trim());
    for (const name of opts.fields) {
      if (!fields.has(name)) {
        bad(
          `Cannot list records: unknown field "${name.slice(0, 64)}" in fields`,
        );
      }
    }
  }
  const count = q.get("count");
  if (count !== null) {
    if (!["true", "false", "1", "0"].includes(count)) {
      bad("Cannot list records: count must be true or false");
    }
    opts.count = count === "true" || count === "1";
  }
  const filter = q.get("filter");
  if (filter !== null && filter.trim() !== "") opts.filter = filter;
  const after = q.get("after");
  if (after !== null && after !== "") opts.after = after;
  const search = q.get("search");
  if (search !== null && search.trim() !== "") {
    opts.search = parseSearch(schema, search);
  }
  return opts;
}

/** Longest `search` parameter (characters). */
export const MAX_SEARCH_LENGTH = 500;

/** The words of a `search` parameter; 400 when the entity cannot be searched. */
function parseSearch(schema: EntitySchema, search: string): string[] {
  if (searchableFields(schema).length === 0) {
    bad(
      `Cannot search ${schema.name}: it has no searchable field; mark a string or text field "searchable": true (PATCH /api/v1/schemas/${schema.name}, or the field's Searchable switch in the dashboard), or use filter=fold(<field>).includes(fold("…"))`,
    );
  }
  if (search.length > MAX_SEARCH_LENGTH) {
    bad(`Cannot search: longer than ${MAX_SEARCH_LENGTH} characters`);
  }
  const words = searchWords(search);
  if (words.length === 0) {
    bad("Cannot search: the search has no word (letters or digits)");
  }
  if (words.length > MAX_SEARCH_WORDS) {
    bad(`Cannot search: more than ${MAX_SEARCH_WORDS} words`);
  }
  return words;
}

/** The effective order: the sort keys, then `id` ascending unless `id` is a key. */
export function orderKeys(sort: SortKey[]): SortKey[] {
  return sort.some((k) => k.field === "id")
    ? sort
    : [...sort, { field: "id", desc: false }];
}

/** ORDER BY clause for the keys. */
export function orderBy(keys: SortKey[]): Where {
  const params: SqlValue[] = [];
  const sql = keys.map((k) => {
    const e = keyExpr(k);
    params.push(...e.params);
    const col = e.sql;
    // Built-in timestamps and ids are never NULL: a plain order lets PostgreSQL use their indexes.
    if (NOT_NULL.has(k.field)) return k.desc ? `${col} DESC` : `${col} ASC`;
    return k.desc ? `${col} DESC NULLS LAST` : `${col} ASC NULLS FIRST`;
  }).join(", ");
  return { sql, params };
}

const NOT_NULL = new Set(["id", "created", "updated"]);

/**
 * Keyset condition "strictly after `values`" for the keys (NULL is smallest).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterWhere } from "moonbase/lib/records/list_query.ts";
 * const w = afterWhere([{ field: "id", desc: false }], ["abc"]);
 * assert.ok(w.sql === '("id" > ?)' && w.params[0] === "abc");
 * ```
 */
export function afterWhere(keys: SortKey[], values: SqlValue[]): Where {
  const ors: string[] = [];
  const params: SqlValue[] = [];
  for (let i = 0; i < keys.length; i++) {
    const { sql: col, params: own } = keyExpr(keys[i]);
    const v = values[i];
    if (keys[i].desc && v === null) continue; // nothing sorts after NULL descending
    const ands: string[] = [];
    const local: SqlValue[] = [];
    for (let j = 0; j < i; j++) {
      const prev = keyExpr(keys[j]);
      if (values[j] === null) {
        ands.push(`${prev.sql} IS NULL`);
        local.push(...prev.params);
      } else {
        ands.push(`${prev.sql} = ?`);
        local.push(...prev.params, values[j]);
      }
    }
    if (keys[i].desc) {
      ands.push(`(${col} < ? OR ${col} IS NULL)`);
      local.push(...own, v, ...own);
    } else if (v === null) {
      ands.push(`${col} IS NOT NULL`);
      local.push(...own);
    } else {
      ands.push(`${col} > ?`);
      local.push(...own, v);
    }
    ors.push(`(${ands.join(" AND ")})`);
    params.push(...local);
  }
  return { sql: ors.length ? ors.join(" OR ") : "1 = 0", params };
}

/** Column kind of each sort key (`json` for view columns). */
export function keyKinds(
  schema: EntitySchema,
  keys: SortKey[],
): ColumnKind[] {
  const fields = fieldMap(schema);
  return keys.map((k) => {
    if (k.field === RANK_KEY) return "double";
    if (k.via) return k.via.kind;
    const f = fields.get(k.field);
    return f && schema.type !== "view" ? kindOf(f) : "json";
  });
}

/** Keyset values of a stored row for the keys (numbers as JS numbers). */
export function cursorOf(
  keys: SortKey[],
  row: Record<string, unknown>,
  kinds?: readonly ColumnKind[],
): SqlValue[] {
  return keys.map((k, i) => {
    const v = row[k.via ? viaColumn(i) : physicalName(k.field)];
    if (typeof v === "bigint") return Number(v);
    const kind = kinds?.[i];
    if (typeof v === "string" && (kind === "int" || kind === "double")) {
      return Number(v);
    }
    return (v ?? null) as SqlValue;
  });
}
