/**
 * What the entity form sends: form state → POST body, and (saved schema,
 * form state) → the PATCH body with only the changed parts (renames by
 * field `id`, `{id, op: "delete"}` for removed fields, `null` for cleared
 * options). Pure: no DOM, unit-tested.
 *
 * @module
 */

import type { EntitySchema } from "../../../lib/schema/types.ts";
import { parseJson } from "./json_error.ts";
import {
  type FieldState,
  fieldState,
  type FormErrors,
  type FormState,
  optionsOf,
} from "./schema_form.ts";
import { indexesBody, sameIndexes } from "./schema_indexes.ts";

function parseDefault(f: FieldState): { value?: unknown; error?: string } {
  const t = f.default;
  if (t === "") return {};
  switch (f.type) {
    case "int": {
      const n = Number(t);
      return Number.isSafeInteger(n) && t.trim() !== ""
        ? { value: n }
        : { error: "Must be a whole number" };
    }
    case "double": {
      const n = Number(t);
      return Number.isFinite(n) && t.trim() !== ""
        ? { value: n }
        : { error: "Must be a number" };
    }
    case "bool":
      return t === "true" || t === "false"
        ? { value: t === "true" }
        : { error: "Must be true or false" };
    case "json": {
      const r = parseJson(t);
      return r.ok ? { value: r.value } : { error: r.message };
    }
    default:
      return { value: t };
  }
}

function parseNumber(t: string, whole: boolean): number | string | undefined {
  if (t.trim() === "") return undefined;
  const n = Number(t);
  if (!Number.isFinite(n)) return "Must be a number";
  if (whole && !Number.isInteger(n)) return "Must be a whole number";
  return n;
}

/**
 * A field's API object (keys in the server's order; options that do not
 * apply to the type are left out) and its client-side errors by option.
 */
export function fieldBody(
  f: FieldState,
): { body: Record<string, unknown>; errors: Record<string, string> } {
  const o = optionsOf(f.type);
  const errors: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  if (f.id) body.id = f.id;
  body.name = f.name.trim();
  body.type = f.type;
  body.required = f.required;
  // A multiple relation cannot be unique (docs/guide/entities.md).
  body.unique = o.unique && f.unique && !(o.relation && f.multiple);
  if (o.index && f.index) body.index = true;
  if (o.searchable && f.searchable) body.searchable = true;
  if (o.range) {
    for (const k of ["min", "max"] as const) {
      const v = parseNumber(f[k], o.range !== "value" || f.type === "int");
      if (typeof v === "string") errors[k] = v;
      else if (v !== undefined) body[k] = v;
    }
  }
  if (o.pattern && f.pattern !== "") body.pattern = f.pattern;
  if (o.values) body.values = [...f.values];
  if (o.mime && f.mime_types.length > 0) body.mime_types = [...f.mime_types];
  if (o.mime && f.thumbs.length > 0) body.thumbs = [...f.thumbs];
  if (o.relation) {
    body.foreign_key = { entity: f.entity, on_delete: f.on_delete };
    if (f.multiple) {
      body.multiple = true;
      const v = parseNumber(f.max, true);
      if (typeof v === "string") errors.max = v;
      else if (v !== undefined) body.max = v;
    }
  }
  if (o.default) {
    const d = parseDefault(f);
    if (d.error) errors.default = d.error;
    else if (d.value !== undefined) body.default = d.value;
  }
  return { body, errors };
}

function collect(
  fields: FieldState[],
  errors: FormErrors,
): Record<string, unknown>[] {
  return fields.map((f) => {
    const r = fieldBody(f);
    for (const [k, v] of Object.entries(r.errors)) errors[`${f.key}.${k}`] = v;
    return r.body;
  });
}

/**
 * The schema body of the form (the POST body; with field ids, the JSON
 * view's text). Rules are never part of it.
 */
export function schemaBody(
  form: FormState,
): { body: Record<string, unknown>; errors: FormErrors } {
  const errors: FormErrors = {};
  const body: Record<string, unknown> = {
    name: form.name.trim(),
    type: form.type,
    has_api: form.has_api,
  };
  if (form.type === "view") body.view_query = form.view_query;
  else {
    body.fields = collect(form.fields, errors);
    const indexes = indexesBody(form, errors);
    if (indexes.length > 0) body.indexes = indexes;
  }
  return { body, errors };
}

/** What a PATCH sends, and what it will do. */
export interface Patch {
  body: Record<string, unknown>;
  errors: FormErrors;
  /** Names of saved fields the PATCH drops (their data goes). */
  dropped: string[];
  /** True when nothing changed. */
  empty: boolean;
}

const same = (a: unknown, b: unknown) =>
  JSON.stringify(a) === JSON.stringify(b);

/** The PATCH body that turns `saved` into `form`: only changed parts. */
export function patchBody(saved: EntitySchema, form: FormState): Patch {
  const errors: FormErrors = {};
  const body: Record<string, unknown> = {};
  if (form.name.trim() !== saved.name) body.name = form.name.trim();
  if (form.has_api !== saved.has_api) body.has_api = form.has_api;
  const dropped: string[] = [];
  if (saved.type === "view") {
    if (form.view_query !== saved.view_query) {
      body.view_query = form.view_query;
    }
  } else {
    const old = saved.fields.filter((f) => !f.system);
    const kept = new Set(form.fields.map((f) => f.id).filter(Boolean));
    const ops: Record<string, unknown>[] = [];
    for (const f of old) {
      if (!kept.has(f.id)) {
        ops.push({ id: f.id, op: "delete" });
        dropped.push(f.name);
      }
    }
    const adds: Record<string, unknown>[] = [];
    const bodies = collect(form.fields, errors);
    form.fields.forEach((f, i) => {
      const now = bodies[i];
      const was = f.id ? old.find((o) => o.id === f.id) : undefined;
      if (!was) {
        adds.push(now);
        return;
      }
      const before = fieldBody(fieldState(was)).body;
      const change: Record<string, unknown> = {};
      for (const k of new Set([...Object.keys(before), ...Object.keys(now)])) {
        if (k === "id" || k === "type" || same(before[k], now[k])) continue;
        change[k] = k in now
          ? now[k]
          : k === "index" || k === "searchable"
          ? false
          : null;
      }
      if (Object.keys(change).length > 0) ops.push({ id: f.id, ...change });
    });
    ops.push(...adds);
    if (ops.length > 0) body.fields = ops;
    // The whole list when it changed (the server keeps unchanged entries).
    const indexes = indexesBody(form, errors);
    if (!sameIndexes(saved, form)) body.indexes = indexes;
  }
  return { body, errors, dropped, empty: Object.keys(body).length === 0 };
}
