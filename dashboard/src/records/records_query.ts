/// <reference lib="dom" />
/**
 * The records table's state in the URL (`filter`, `q`, `sort`, `size`) and
 * its translation to a list query of the API: the quick search is the
 * API's full-text `search` where the entity has searchable fields (ordered
 * by relevance unless a column is sorted), else
 * `fold(f1).includes(fold("q")) || …` over the text fields (any case, any
 * accents), joined to the filter by `&&`. Without a `sort` in the URL,
 * records come newest first (`-created,-id`) where the entity has
 * `created`.
 *
 * @module
 */

import type { AggregateQuery, ListQuery } from "../mb.ts";
import type { EntitySchema, FieldDef } from "../schemas.ts";

/** Page sizes offered. */
export const PAGE_SIZES = [10, 25, 50, 100, 200] as const;

/** What the URL holds for the records table. */
export interface TableState {
  filter: string;
  q: string;
  /** `name`, `-name` or "" (the entity's default: newest first). */
  sort: string;
  size: number;
}

/** Reads the table state from the page's query. */
export function readState(q: URLSearchParams): TableState {
  const size = Number(q.get("size"));
  return {
    filter: q.get("filter") ?? "",
    q: q.get("q") ?? "",
    sort: q.get("sort") ?? "",
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 25,
  };
}

/** The query changes for `setQuery()` (defaults are left out of the URL). */
export function stateToQuery(s: TableState): Record<string, string> {
  return {
    filter: s.filter.trim(),
    q: s.q.trim(),
    sort: s.sort,
    size: s.size === 25 ? "" : String(s.size),
  };
}

const TEXT_TYPES = new Set(["string", "text", "email", "url"]);

/** Fields the quick search looks in (password never). */
export function textFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) =>
    TEXT_TYPES.has(f.type) && f.name !== "password"
  );
}

/** The field shown for a record of `schema` in pickers and links. */
export function displayField(schema: EntitySchema | undefined): string {
  const fields = schema?.fields ?? [];
  const pick = fields.find((f) => f.type === "string" && !f.system) ??
    fields.find((f) => f.type === "email") ??
    fields.find((f) => TEXT_TYPES.has(f.type) && f.name !== "password");
  return pick?.name ?? "id";
}

/** A string literal of the filter language (JSON escaping is valid there). */
export function literal(text: string): string {
  return JSON.stringify(text);
}

/** The search expression over `fields` ("" when there is nothing to search). */
export function searchExpr(fields: string[], q: string): string {
  const text = q.trim();
  if (!text || fields.length === 0) return "";
  const needle = `fold(${literal(text)})`;
  return fields.map((f) => `fold(${f}).includes(${needle})`).join(" || ");
}

/** True when the entity has fields in the API's full-text search. */
export function hasSearchable(schema: EntitySchema): boolean {
  return schema.fields.some((f) => f.searchable);
}

/**
 * True when the quick search goes to the API's `search`: the entity has
 * searchable fields and the text has a word (letters or digits) to look for.
 */
export function usesSearch(schema: EntitySchema, s: TableState): boolean {
  return hasSearchable(schema) && /[\p{L}\p{N}]/u.test(s.q);
}

/** The API's `filter`: the admin's filter and the quick search, both apply. */
export function combinedFilter(schema: EntitySchema, s: TableState): string {
  const search = usesSearch(schema, s)
    ? ""
    : searchExpr(textFields(schema).map((f) => f.name), s.q);
  const filter = s.filter.trim();
  if (filter && search) return `(${filter}) && (${search})`;
  return filter || search;
}

/** Fields that can be sorted by clicking their header. */
export function sortable(f: FieldDef): boolean {
  return f.type !== "json" && f.type !== "files" && f.type !== "file";
}

/**
 * The sort an entity's records open with, as its column shows it:
 * `-created` (newest first) where it has a `created` field, else "" (the
 * API's order, id ascending).
 */
export function defaultSort(schema: EntitySchema): string {
  return schema.fields.some((f) => f.name === "created") ? "-created" : "";
}

/**
 * The sort the table shows: the URL's, else the entity's default (none
 * while a full-text search orders by relevance).
 */
export function shownSort(schema: EntitySchema, s: TableState): string {
  if (!s.sort && usesSearch(schema, s)) return "";
  return s.sort || defaultSort(schema);
}

/**
 * The API's `sort` of a table state: newest first is `-created,-id` (ids
 * are time-ordered: records created in the same millisecond keep their
 * order); undefined for the API's own order.
 */
export function apiSort(
  schema: EntitySchema,
  s: TableState,
): string | undefined {
  if (s.sort) return s.sort;
  if (usesSearch(schema, s)) return undefined; // by relevance
  return defaultSort(schema) ? "-created,-id" : undefined;
}

/**
 * The URL's next sort after clicking `name`: asc → desc → off (the
 * default). On the default's own column, where "off" would change nothing,
 * it goes between ascending and the default.
 */
export function nextSort(current: string, name: string, dflt = ""): string {
  const cur = current || dflt;
  let next = cur === name ? "-" + name : cur === "-" + name ? "" : name;
  if ((next || dflt) === cur) next = name;
  return next === dflt ? "" : next;
}

/**
 * An example filter over the entity's own fields for the filter box's
 * placeholder (a number compared, a text's start, a flag), falling back to
 * the built-in `created`.
 */
export function filterExample(schema: EntitySchema): string {
  const own = schema.fields.filter((f) => !f.system && f.name !== "password");
  const parts: string[] = [];
  const num = own.find((f) => f.type === "int" || f.type === "double");
  if (num) parts.push(`${num.name} >= 10`);
  const text = own.find((f) => f.type === "string" || f.type === "text");
  if (text) parts.push(`${text.name}.startsWith("A")`);
  const flag = own.find((f) => f.type === "bool");
  if (flag && parts.length < 2) parts.push(`${flag.name} == true`);
  const pick = own.find((f) => f.type === "select" && f.values?.length);
  if (pick && parts.length < 2) {
    parts.push(`${pick.name} == ${literal(pick.values![0])}`);
  }
  const other = own.find((f) => !["json", "file", "files"].includes(f.type));
  if (parts.length === 0 && other) parts.push(`${other.name} != null`);
  if (parts.length === 0) {
    const has = (n: string) => schema.fields.some((f) => f.name === n);
    parts.push(
      has("created") ? `created >= "2024-01-01"` : `id != ""`,
    );
  }
  return parts.slice(0, 2).join(" && ");
}

/**
 * The API query of one page; `expand` (related_columns.ts `expandParam`)
 * brings the shown columns' related records in the same request.
 */
export function listQuery(
  schema: EntitySchema,
  s: TableState,
  cursor: string | null,
  count = false,
  expand = "",
): ListQuery {
  return {
    limit: s.size,
    sort: apiSort(schema, s),
    filter: combinedFilter(schema, s) || undefined,
    after: cursor ?? undefined,
    count: count || undefined,
    ...(expand ? { expand } : {}),
    ...(usesSearch(schema, s) ? { search: s.q.trim() } : {}),
  };
}

/** Fields the group-by summary counts by: select, bool and relation (never the password). */
export function summaryFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) =>
    (f.type === "select" || f.type === "bool" || f.type === "relation") &&
    f.name !== "password"
  );
}

/**
 * The aggregate API query of the group-by summary: the records the table
 * lists (its row parameters, whatever they are: the filter and the quick
 * search), counted per value of `field`.
 */
export function summaryQuery(
  schema: EntitySchema,
  s: TableState,
  field: string,
): AggregateQuery {
  const {
    limit: _l,
    sort: _s,
    after: _a,
    count: _c,
    expand: _e,
    fields: _f,
    ...rows
  } = listQuery(
    schema,
    s,
    null,
  );
  return { ...rows, group: field, count: true };
}

/** Where a parse error points (`… at 12`), or -1. */
export function errorPosition(message: string): number {
  const m = /\bat (\d+)\s*$/.exec(message.trim().replace(/\.$/, ""));
  return m ? Number(m[1]) : -1;
}
