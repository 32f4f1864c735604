/**
 * Columns of the records table beyond the entity's own fields, and what
 * the API is asked for them: a related field reached through relations
 * (`author.name`, `author.team.name`, at most 6 relations deep), read from
 * the list's own `expand` (one request per page), and a back-relation
 * count (`comments_via_post:count`: the records of `comments` whose `post`
 * points at the row), from one aggregate request per page grouped by that
 * relation field and filtered to the page's ids. Pure: no DOM.
 *
 * @module
 */

import type { AggregateQuery } from "../mb.ts";
import type { EntitySchema, FieldDef } from "../schemas.ts";

/** Relations a column path may follow (the API's `expand` depth). */
export const MAX_DEPTH = 6;

/** The suffix of a count column's key. */
const COUNT = ":count";

/** A back-relation: records of `entity` whose `field` points at a record. */
export interface BackRelation {
  /** `<entity>_via_<field>`, as `expand` and rules name it. */
  name: string;
  entity: string;
  field: string;
  /** The field is a multiple relation (a list of ids). */
  multiple: boolean;
}

/** A column that is not one of the entity's own fields. */
export type ExtraColumn =
  | {
    kind: "related";
    /** The column's key, its path (`author.team.name`). */
    key: string;
    /** The relation fields followed (`["author", "team"]`). */
    relations: string[];
    /** The field shown, of the last relation's target. */
    field: FieldDef;
    /** The entity `field` belongs to. */
    entity: string;
  }
  | {
    kind: "count";
    /** `<entity>_via_<field>:count`. */
    key: string;
    back: BackRelation;
  };

/** A relation field with a known target entity. */
export function isRelation(f: FieldDef): boolean {
  return f.type === "relation" && !!f.foreign_key?.entity;
}

/** The schemas `expand` can reach: served, neither views nor system ones. */
function reachable(
  all: readonly EntitySchema[],
  name: string,
): EntitySchema | undefined {
  const s = all.find((x) => x.name === name);
  return s && s.has_api !== false && s.type !== "view" && !s.is_system
    ? s
    : undefined;
}

/**
 * Whether the records table of `schema` may ask for `expand`: not on views,
 * and not when the entity has a field named `expand` (the API refuses it).
 */
export function canExpand(schema: EntitySchema): boolean {
  return schema.type !== "view" &&
    !schema.fields.some((f) => f.name === "expand");
}

/** Fields a related column may show (never the password). */
export function shownFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) => f.name !== "password");
}

/**
 * The relation fields of `schema` a path may follow (to served entities
 * that can hold expansions).
 */
export function followable(
  all: readonly EntitySchema[],
  schema: EntitySchema,
): FieldDef[] {
  return schema.fields.filter((f) => {
    if (!isRelation(f)) return false;
    const t = reachable(all, f.foreign_key!.entity);
    return !!t && canExpand(t);
  });
}

/** The back-relations that point at `entity`, by entity then field name. */
export function backRelations(
  all: readonly EntitySchema[],
  entity: string,
): BackRelation[] {
  const out: BackRelation[] = [];
  for (const s of all) {
    if (!reachable(all, s.name)) continue;
    for (const f of s.fields) {
      if (isRelation(f) && f.foreign_key!.entity === entity) {
        out.push({
          name: `${s.name}_via_${f.name}`,
          entity: s.name,
          field: f.name,
          multiple: !!f.multiple,
        });
      }
    }
  }
  return out.sort((a, b) =>
    a.entity.localeCompare(b.entity) || a.field.localeCompare(b.field)
  );
}

/** The key of a back-relation's count column. */
export const countKey = (b: BackRelation): string => b.name + COUNT;

/**
 * A count column's header: "comments (count)", or "comments by post
 * (count)" when `comments` points at the entity through several fields.
 */
export function countLabel(b: BackRelation, all: BackRelation[]): string {
  const several = all.filter((x) => x.entity === b.entity).length > 1;
  return several ? `${b.entity} by ${b.field} (count)` : `${b.entity} (count)`;
}

/**
 * Reads a column key of `schema`'s table that is no own field: a related
 * path or a count. Null when it names nothing (a field since deleted, an
 * entity renamed), so saved choices that went stale are dropped.
 */
export function extraColumn(
  all: readonly EntitySchema[],
  schema: EntitySchema,
  key: string,
): ExtraColumn | null {
  if (!canExpand(schema)) return null;
  if (key.endsWith(COUNT)) {
    const name = key.slice(0, -COUNT.length);
    const back = backRelations(all, schema.name).find((b) => b.name === name);
    return back ? { kind: "count", key, back } : null;
  }
  const parts = key.split(".");
  if (parts.length < 2 || parts.length > MAX_DEPTH + 1) return null;
  let at: EntitySchema = schema;
  for (const name of parts.slice(0, -1)) {
    const rel = followable(all, at).find((f) => f.name === name);
    if (!rel) return null;
    at = reachable(all, rel.foreign_key!.entity)!;
  }
  const last = parts[parts.length - 1];
  const field = shownFields(at).find((f) => f.name === last);
  if (!field) return null;
  return {
    kind: "related",
    key,
    relations: parts.slice(0, -1),
    field,
    entity: at.name,
  };
}

/**
 * The list request's `expand` for the shown columns ("" for none): the
 * relation paths of related columns, and the own relation columns (their
 * cells show the target's label). A path inside a longer one is left out
 * (`author.team` expands `author` too).
 */
export function expandParam(
  all: readonly EntitySchema[],
  schema: EntitySchema,
  columns: readonly string[],
): string {
  if (!canExpand(schema)) return "";
  const paths = new Set<string>();
  const own = followable(all, schema);
  for (const key of columns) {
    if (own.some((f) => f.name === key)) {
      paths.add(key);
      continue;
    }
    const c = extraColumn(all, schema, key);
    if (c?.kind === "related") paths.add(c.relations.join("."));
  }
  const list = [...paths];
  return list
    .filter((p) => !list.some((q) => q !== p && q.startsWith(p + ".")))
    .sort()
    .join(",");
}

/** A record as the API answers it, with its `expand` object when asked. */
type Expanded = Record<string, unknown>;

function isObject(v: unknown): v is Expanded {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The records at `relations` below `record` (through lists too). */
export function relatedRecords(
  record: Expanded,
  relations: readonly string[],
): Expanded[] {
  let at: Expanded[] = [record];
  for (const name of relations) {
    const next: Expanded[] = [];
    for (const r of at) {
      const v = isObject(r.expand) ? r.expand[name] : undefined;
      if (Array.isArray(v)) next.push(...v.filter(isObject));
      else if (isObject(v)) next.push(v);
    }
    at = next;
  }
  return at;
}

/** The values a related column shows for `record` (empty ones left out). */
export function relatedValues(
  record: Expanded,
  column: { relations: string[]; field: FieldDef },
): unknown[] {
  return relatedRecords(record, column.relations)
    .map((r) => r[column.field.name])
    .filter((v) => v !== null && v !== undefined && v !== "");
}

/** One value of a related column as text. */
export function valueText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * Labels of a relation column's targets for `record`, read from its
 * `expand` (id → the target's `display` field; ids without one left out).
 */
export function expandLabels(
  record: Expanded,
  field: string,
  display: string,
): Map<string, string> {
  const out = new Map<string, string>();
  if (display === "id") return out;
  for (const r of relatedRecords(record, [field])) {
    const v = r[display];
    if (typeof r.id === "string" && typeof v === "string" && v !== "") {
      out.set(r.id, v);
    }
  }
  return out;
}

/**
 * The filter language allows 4096 characters: ids go in chunks that keep
 * the filter well under it.
 */
const FILTER_BUDGET = 3800;

/**
 * The aggregate queries that count `back`'s records per id of `ids`: one
 * for a page of usual size, grouped by the relation field, filtered to the
 * ids (`post == "…" || …`; through a list, `tags.includes("…") || …`).
 */
export function countQueries(
  back: BackRelation,
  ids: readonly string[],
): AggregateQuery[] {
  const term = (id: string) =>
    back.multiple
      ? `${back.field}.includes(${JSON.stringify(id)})`
      : `${back.field} == ${JSON.stringify(id)}`;
  const out: AggregateQuery[] = [];
  let part: string[] = [];
  let size = 0;
  const flush = () => {
    if (part.length === 0) return;
    out.push({ group: back.field, count: true, filter: part.join(" || ") });
    part = [];
    size = 0;
  };
  for (const id of ids) {
    const t = term(id);
    if (size + t.length + 4 > FILTER_BUDGET) flush();
    part.push(t);
    size += t.length + 4;
  }
  flush();
  return out;
}

/** One group of an aggregate answer. */
export interface CountGroup {
  key: Record<string, unknown>;
  count: number;
}

/**
 * Counts per id from the groups of {@link countQueries}' answers: a group
 * keyed by one id counts for it; through a list, a group counts for every
 * id its list holds. Ids no group names count 0.
 */
export function countsByIds(
  back: BackRelation,
  ids: readonly string[],
  groups: readonly CountGroup[],
): Map<string, number> {
  const out = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const g of groups) {
    const v = g.key[back.field];
    const held = Array.isArray(v) ? v : [v];
    for (const id of new Set(held)) {
      if (typeof id === "string" && out.has(id)) {
        out.set(id, out.get(id)! + g.count);
      }
    }
  }
  return out;
}
