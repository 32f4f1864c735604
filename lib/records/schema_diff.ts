/**
 * The difference between a stored schema and a wanted one (an import's,
 * a migration's): the PATCH body that turns one into the other, and what it
 * changes, key by key and field by field. Fields are matched by id, else by
 * name; a stored field the wanted schema lacks is deleted.
 *
 * @module
 */

import { authOptions, publicAuthOptions } from "../schema/auth_options.ts";
import {
  COMMON_KEYS,
  FIELD_TYPES,
  isFieldType,
} from "../schema/field_types.ts";
import {
  type EntitySchema,
  type FieldDef,
  OPERATIONS,
} from "../schema/types.ts";

/** A raw schema or field object (an import's input). */
export type Raw = Record<string, unknown>;

/** One thing a change does: `fields.title`, `rules.list`, `name`, `view_query`, … */
export interface ChangeDetail {
  key: string;
  action: "create" | "update" | "delete";
  from?: unknown;
  to?: unknown;
}

/** The field keys compared (and sent), in a stable order. */
const FIELD_KEYS = [
  "name",
  "type",
  "required",
  "unique",
  "index",
  "searchable",
  "default",
  "min",
  "max",
  "pattern",
  "values",
  "mime_types",
  "foreign_key",
] as const;

/** True for a plain object. */
export function isRaw(v: unknown): v is Raw {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** JSON with object keys sorted: equal values, equal text. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val) =>
    isRaw(val)
      ? Object.fromEntries(
        Object.keys(val).sort().map((k) => [k, val[k]]),
      )
      : val);
}

/**
 * A field's compared values: booleans as booleans, empty options left out,
 * a relation's target through `rename` (stored name → the name it will
 * have).
 */
export function fieldValues(
  f: Raw | FieldDef,
  rename: (name: string) => string = (n) => n,
): Raw {
  const r = f as Raw;
  const out: Raw = {};
  for (const k of FIELD_KEYS) {
    const v = r[k];
    if (FLAGS.has(k)) {
      if (v) out[k] = v === true ? true : v;
      continue;
    }
    if (v === undefined || v === null || (k === "pattern" && v === "")) {
      continue;
    }
    if (k === "foreign_key" && isRaw(v)) {
      out[k] = {
        entity: typeof v.entity === "string" ? rename(v.entity) : v.entity,
        on_delete: v.on_delete ?? "set null",
      };
      continue;
    }
    out[k] = v;
  }
  return out;
}

/**
 * A field object for a PATCH that replaces a field's keys with `wanted`'s:
 * every key the type has is sent (null where `wanted` has none, which
 * clears it).
 */
function fieldInput(wanted: Raw): Raw {
  const type = wanted.type;
  if (!isFieldType(type)) return { ...wanted }; // validation names the problem
  const out: Raw = {};
  const keys = [...COMMON_KEYS, ...FIELD_TYPES[type].options];
  for (const k of keys) {
    if (k === "system" || k === "id") continue;
    out[k] = wanted[k] ?? null;
  }
  out.name = wanted.name;
  out.type = type;
  return out;
}

const FLAGS = new Set(["required", "unique", "index", "searchable"]);

function differing(a: Raw, b: Raw): { from: Raw; to: Raw } | undefined {
  const from: Raw = {}, to: Raw = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (canonical(a[k]) === canonical(b[k])) continue;
    const none = FLAGS.has(k) ? false : null;
    from[k] = a[k] ?? none;
    to[k] = b[k] ?? none;
  }
  return Object.keys(to).length > 0 ? { from, to } : undefined;
}

/** The declared (non-built-in) fields of a raw schema. */
export function declaredFields(wanted: Raw): Raw[] {
  return Array.isArray(wanted.fields)
    ? wanted.fields.filter((f): f is Raw => isRaw(f) && f.system !== true)
    : [];
}

/** What creating `wanted` does, field by field (a view: its query). */
export function createDetails(wanted: Raw): ChangeDetail[] {
  if (wanted.type === "view") {
    return [{ key: "view_query", action: "create", to: wanted.view_query }];
  }
  return declaredFields(wanted).map((f) => ({
    key: `fields.${f.name}`,
    action: "create",
    to: fieldValues(f),
  }));
}

/** What deleting `schema` does, field by field. */
export function deleteDetails(schema: EntitySchema): ChangeDetail[] {
  return schema.fields.filter((f) => !f.system).map((f) => ({
    key: `fields.${f.name}`,
    action: "delete",
    from: fieldValues(f),
  }));
}

/** A PATCH body and what it changes. */
export interface Patch {
  input: Raw;
  details: ChangeDetail[];
}

/**
 * The PATCH that turns `current` into `wanted` (keys `wanted` leaves out
 * stay as they are; its fields replace the declared ones). `rename` maps a
 * stored entity name to the name it will have (an import renames entities
 * matched by id). An empty `details`: nothing to change.
 */
export function patchFor(
  current: EntitySchema,
  wanted: Raw,
  rename: (name: string) => string = (n) => n,
): Patch {
  const input: Raw = {};
  const details: ChangeDetail[] = [];
  const note = (key: string, from: unknown, to: unknown) =>
    details.push({ key, action: "update", from, to });
  if (wanted.type !== undefined && wanted.type !== current.type) {
    input.type = wanted.type; // refused by the PATCH: a type cannot change
    note("type", current.type, wanted.type);
  }
  if (typeof wanted.name === "string" && wanted.name !== current.name) {
    input.name = wanted.name;
    note("name", current.name, wanted.name);
  }
  if (wanted.has_api !== undefined && wanted.has_api !== current.has_api) {
    input.has_api = wanted.has_api;
    note("has_api", current.has_api, wanted.has_api);
  }
  if (isRaw(wanted.rules)) {
    let changed = false;
    for (const op of OPERATIONS) {
      const want = wanted.rules[op];
      if (want === undefined) continue;
      if (canonical(want) === canonical(current.rules[op])) continue;
      changed = true;
      note(`rules.${op}`, current.rules[op], want);
    }
    // Unknown operations: sent as they are, for the PATCH to refuse.
    if (changed || Object.keys(wanted.rules).some((k) => !isOperation(k))) {
      input.rules = wanted.rules;
    }
  }
  if (current.type === "view") {
    if (
      wanted.view_query !== undefined &&
      wanted.view_query !== current.view_query
    ) {
      input.view_query = wanted.view_query;
      note("view_query", current.view_query, wanted.view_query);
    }
    return { input, details };
  }
  const renamedFields = new Map<string, string>();
  if (Array.isArray(wanted.fields)) {
    const fields = fieldChanges(current, wanted, rename, details);
    if (fields.items.length > 0) input.fields = fields.items;
    for (const [from, to] of fields.renamed) renamedFields.set(from, to);
  }
  if (Array.isArray(wanted.indexes)) {
    const shape = (list: unknown[], names: (n: string) => string) =>
      list.filter(isRaw).map((i) => ({
        fields: Array.isArray(i.fields)
          ? i.fields.map((n) => typeof n === "string" ? names(n) : n)
          : i.fields,
        unique: i.unique === true,
      })).sort((a, b) => canonical(a).localeCompare(canonical(b)));
    const was = shape(
      current.indexes ?? [],
      (n) => renamedFields.get(n) ?? n,
    );
    const now = shape(wanted.indexes, (n) => n);
    if (
      canonical(was) !== canonical(now) ||
      wanted.indexes.length !== now.length
    ) {
      input.indexes = wanted.indexes;
      note("indexes", was, now);
    }
  }
  if (current.type === "auth" && isRaw(wanted.auth)) {
    const was = publicAuthOptions(authOptions(current)) as unknown as Raw;
    let changed = false;
    for (const [k, v] of Object.entries(wanted.auth)) {
      if (canonical(v) === canonical(was[k])) continue;
      changed = true;
      note(`auth.${k}`, was[k] ?? null, v);
    }
    if (changed) input.auth = wanted.auth;
  }
  return { input, details };
}

function isOperation(k: string): boolean {
  return (OPERATIONS as readonly string[]).includes(k);
}

/** The field items of a PATCH, their details, and the renames (old name → new). */
function fieldChanges(
  current: EntitySchema,
  wanted: Raw,
  rename: (name: string) => string,
  details: ChangeDetail[],
): { items: Raw[]; renamed: [string, string][] } {
  const stored = current.fields.filter((f) => !f.system);
  const want = declaredFields(wanted);
  const match = new Map<Raw, FieldDef>();
  const taken = new Set<string>();
  for (const w of want) {
    const f = typeof w.id === "string"
      ? stored.find((s) => s.id === w.id)
      : undefined;
    if (f) {
      match.set(w, f);
      taken.add(f.id);
    }
  }
  for (const w of want) {
    if (match.has(w) || typeof w.name !== "string") continue;
    const lname = w.name.toLowerCase();
    const f = stored.find((s) =>
      !taken.has(s.id) && s.name.toLowerCase() === lname
    );
    if (f) {
      match.set(w, f);
      taken.add(f.id);
    }
  }
  const items: Raw[] = [];
  const renamed: [string, string][] = [];
  for (const w of want) {
    const f = match.get(w);
    if (!f) {
      items.push({ ...fieldInput(w), id: w.id });
      details.push({
        key: `fields.${w.name}`,
        action: "create",
        to: fieldValues(w),
      });
      continue;
    }
    const diff = differing(fieldValues(f, rename), fieldValues(w));
    if (!diff) continue;
    items.push({ ...fieldInput(w), id: f.id });
    if (typeof w.name === "string" && w.name !== f.name) {
      renamed.push([f.name, w.name]);
    }
    details.push({ key: `fields.${f.name}`, action: "update", ...diff });
  }
  for (const f of stored) {
    if (taken.has(f.id)) continue;
    items.push({ id: f.id, op: "delete" });
    details.push({
      key: `fields.${f.name}`,
      action: "delete",
      from: fieldValues(f),
    });
  }
  return { items, renamed };
}
