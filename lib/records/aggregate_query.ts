/**
 * The parameters of `GET /api/v1/entities/<entity>/aggregate` (`group`,
 * `count`, `sum`, `avg`, `min`, `max`; `filter` and `search` are the list's
 * and checked by it) and what they ask: which terms the rows are grouped
 * by, which figures each group gets. Anything unknown, repeated or of the
 * wrong type is a 400 that says what to send instead.
 *
 * - `group`: up to {@link MAX_GROUP_TERMS} fields, comma-separated: a
 *   string, email, url, select, relation, bool, int, double or date field
 *   (its value), or a date field with a bucket (`created:day`, `:week`,
 *   `:month`, `:year`, in UTC).
 * - `sum`, `avg`: int and double fields; `min`, `max`: int, double and
 *   date fields (not strings: SQLite and PostgreSQL order text differently).
 * - `count`: `true` adds each group's number of rows.
 *
 * `password` is no field here, as in filters: asking for it reads as an
 * unknown field.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { kindOf } from "../schema/field_types.ts";
import { allFields } from "../schema/builtin.ts";
import type { EntitySchema, FieldDef, FieldType } from "../schema/types.ts";
import type { ColumnKind } from "../db/storage.ts";

/** The date buckets a `group` term may name (UTC). */
export type Bucket = "day" | "week" | "month" | "year";

/** One term of `group`: a field, with a bucket for dates. */
export interface GroupTerm {
  /** The term as the answer's keys name it (`status`, `created:month`). */
  key: string;
  field: string;
  kind: ColumnKind;
  bucket?: Bucket;
}

/** The figures each group gets, by field. */
export interface Figures {
  sum: AggregateField[];
  avg: AggregateField[];
  min: AggregateField[];
  max: AggregateField[];
}

/** A field a figure reads. */
export interface AggregateField {
  name: string;
  type: FieldType;
  kind: ColumnKind;
}

/** A parsed aggregate request. */
export interface AggregateQuery extends Figures {
  group: GroupTerm[];
  count: boolean;
  /** The list's row parameters (`filter`, `search`), for the list to parse. */
  rows: URLSearchParams;
}

/** Most terms `group` may name. */
export const MAX_GROUP_TERMS = 3;
/** Most fields `sum`, `avg`, `min` and `max` may name together. */
export const MAX_FIGURES = 20;

/** The parameters the list parses (rows only: no order, page or shape). */
const ROW_PARAMS = ["filter", "search"];
const KNOWN = new Set([
  "group",
  "count",
  "sum",
  "avg",
  "min",
  "max",
  ...ROW_PARAMS,
  "token",
]);
const BUCKETS: ReadonlySet<string> = new Set(["day", "week", "month", "year"]);
const GROUPABLE: ReadonlySet<FieldType> = new Set<FieldType>([
  "string",
  "email",
  "url",
  "select",
  "relation",
  "bool",
  "int",
  "double",
  "date",
]);
const NUMBERS: ReadonlySet<FieldType> = new Set<FieldType>(["int", "double"]);
const ORDERED: ReadonlySet<FieldType> = new Set<FieldType>([
  "int",
  "double",
  "date",
]);

function bad(message: string): never {
  throw new MoonbaseError("invalid", `Cannot aggregate records: ${message}`);
}

/** A field by name for aggregates (never `password`). */
function fieldsOf(schema: EntitySchema): Map<string, FieldDef> {
  return new Map(
    allFields(schema)
      .filter((f) => !(f.name === "password" && f.system))
      .map((f) => [f.name, f]),
  );
}

function unknownField(name: string, param: string): never {
  bad(`unknown field ${JSON.stringify(name.slice(0, 64))} in ${param}`);
}

/** The comma-separated names of a parameter (none when absent or blank). */
function names(q: URLSearchParams, param: string): string[] {
  const v = q.get(param);
  if (v === null || v.trim() === "") return [];
  const out = v.split(",").map((s) => s.trim());
  if (out.some((s) => s === "")) bad(`${param} has an empty name`);
  const seen = new Set<string>();
  for (const n of out) {
    if (seen.has(n)) bad(`${param} names ${n.slice(0, 64)} twice`);
    seen.add(n);
  }
  return out;
}

function groupTerms(
  q: URLSearchParams,
  fields: Map<string, FieldDef>,
): GroupTerm[] {
  const terms = names(q, "group");
  if (terms.length > MAX_GROUP_TERMS) {
    bad(`group names at most ${MAX_GROUP_TERMS} fields`);
  }
  return terms.map((term) => {
    const [name, bucket, extra] = term.split(":");
    const f = fields.get(name);
    if (!f) unknownField(name, "group");
    if (!GROUPABLE.has(f.type)) {
      bad(
        `cannot group by ${name}: a ${f.type} field (group by a string, email, url, select, relation, bool, int, double or date field)`,
      );
    }
    if (bucket === undefined) {
      return { key: term, field: name, kind: kindOf(f) };
    }
    if (f.type !== "date" || extra !== undefined || !BUCKETS.has(bucket)) {
      bad(
        f.type === "date"
          ? `group ${
            JSON.stringify(term.slice(0, 80))
          }: a date groups by ${name}:day, ${name}:week, ${name}:month or ${name}:year`
          : `group ${
            JSON.stringify(term.slice(0, 80))
          }: only date fields take a bucket (:day, :week, :month, :year)`,
      );
    }
    return {
      key: term,
      field: name,
      kind: kindOf(f),
      bucket: bucket as Bucket,
    };
  });
}

function figureFields(
  q: URLSearchParams,
  param: keyof Figures,
  fields: Map<string, FieldDef>,
): AggregateField[] {
  const allowed = param === "sum" || param === "avg" ? NUMBERS : ORDERED;
  return names(q, param).map((name) => {
    const f = fields.get(name);
    if (!f) unknownField(name, param);
    if (!allowed.has(f.type)) {
      bad(
        `${param} of ${name}: it is a ${f.type} field; ${param} takes ${
          allowed === NUMBERS ? "int and double" : "int, double and date"
        } fields`,
      );
    }
    return { name, type: f.type, kind: kindOf(f) };
  });
}

/**
 * Parses the aggregate parameters of `schema` (a base or auth entity);
 * anything unknown or malformed is a 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseAggregate } from "moonbase/lib/records/aggregate_query.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const schema = { id: "e", name: "orders", type: "base" as const, view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "", rules: adminOnlyRules(),
 *   fields: [{ id: "t", name: "total", type: "double" as const, required: false, unique: false }] };
 * const a = parseAggregate(schema, new URLSearchParams("group=created:month&count=true&sum=total"));
 * assert.equal(a.group[0].bucket, "month");
 * assert.equal(a.sum[0].name, "total");
 * ```
 */
export function parseAggregate(
  schema: EntitySchema,
  q: URLSearchParams,
): AggregateQuery {
  if (schema.type === "view") {
    bad(
      `${schema.name} is a view; aggregate its source entity, or group in the view's query`,
    );
  }
  for (const key of q.keys()) {
    if (!KNOWN.has(key)) {
      bad(
        `unknown parameter ${
          JSON.stringify(key.slice(0, 64))
        } (aggregates take group, count, sum, avg, min, max, filter and search${
          q.has("filter")
            ? `; if it is part of the filter, URL-encode the filter: an unencoded "&" ends it`
            : ""
        })`,
      );
    }
    if (q.getAll(key).length > 1) bad(`parameter "${key}" given twice`);
  }
  const fields = fieldsOf(schema);
  let count = false;
  const c = q.get("count");
  if (c !== null) {
    if (!["true", "false", "1", "0"].includes(c)) {
      bad("count must be true or false");
    }
    count = c === "true" || c === "1";
  }
  const figures: Figures = {
    sum: figureFields(q, "sum", fields),
    avg: figureFields(q, "avg", fields),
    min: figureFields(q, "min", fields),
    max: figureFields(q, "max", fields),
  };
  const asked = figures.sum.length + figures.avg.length + figures.min.length +
    figures.max.length;
  if (!count && asked === 0) {
    bad("nothing to compute; ask for count=true, sum, avg, min or max");
  }
  if (asked > MAX_FIGURES) {
    bad(`sum, avg, min and max name at most ${MAX_FIGURES} fields together`);
  }
  const rows = new URLSearchParams();
  for (const p of ROW_PARAMS) {
    const v = q.get(p);
    if (v !== null) rows.set(p, v);
  }
  return { group: groupTerms(q, fields), count, ...figures, rows };
}
