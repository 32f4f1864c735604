/**
 * The entity form's state and what it sends: a schema → form state, form
 * state → POST body, and (saved schema, form state) → the PATCH body with
 * only the changed parts (renames by field `id`, `{id, op: "delete"}` for
 * removed fields, `null` for cleared options). Pure: no DOM, unit-tested.
 *
 * @module
 */

import type {
  EntitySchema,
  EntityType,
  FieldDef,
  FieldType,
  OnDelete,
} from "../../lib/schema/types.ts";
import { parseJson } from "./json_error.ts";

/** Every field type, in the order the form offers them. */
export const FIELD_TYPE_LIST: readonly FieldType[] = [
  "string",
  "text",
  "email",
  "url",
  "int",
  "double",
  "bool",
  "date",
  "json",
  "select",
  "relation",
  "file",
  "files",
];

/** Which options a type takes (README, "A field"). */
export interface TypeOptions {
  /** What min/max bound, or null when the type has none. */
  range: "length" | "value" | "count" | null;
  pattern: boolean;
  values: boolean;
  relation: boolean;
  mime: boolean;
  unique: boolean;
  /** A plain index can be asked for (relations always have one). */
  index: boolean;
  default: boolean;
}

/** The options of a field type. */
export function optionsOf(type: FieldType): TypeOptions {
  const noIndex = ["bool", "json", "file", "files"].includes(type);
  return {
    range: type === "string" || type === "text"
      ? "length"
      : type === "int" || type === "double"
      ? "value"
      : type === "files"
      ? "count"
      : null,
    pattern: type === "string" || type === "text",
    values: type === "select",
    relation: type === "relation",
    mime: type === "file" || type === "files",
    unique: !noIndex,
    index: !noIndex && type !== "relation",
    default: !["file", "files", "relation"].includes(type),
  };
}

/** One field as the form edits it (numbers and defaults as typed text). */
export interface FieldState {
  /** Stable key for the list (the id, or a local one for new fields). */
  key: string;
  /** The saved field's id (absent for a new field). */
  id?: string;
  name: string;
  type: FieldType;
  required: boolean;
  unique: boolean;
  index: boolean;
  /** The default as text ("" = none; JSON text for json fields). */
  default: string;
  min: string;
  max: string;
  pattern: string;
  values: string[];
  mime_types: string[];
  entity: string;
  on_delete: OnDelete;
}

/** The whole form. */
export interface FormState {
  name: string;
  type: EntityType;
  has_api: boolean;
  view_query: string;
  /** Declared fields (built-in ones are shown from the saved schema). */
  fields: FieldState[];
}

/** Client-side problems, keyed `name`, `view_query` or `<field key>.<option>`. */
export type FormErrors = Record<string, string>;

let nextKey = 1;

/** A new, empty field of a type. */
export function newField(type: FieldType = "string"): FieldState {
  return {
    key: `new${nextKey++}`,
    name: "",
    type,
    required: false,
    unique: false,
    index: false,
    default: "",
    min: "",
    max: "",
    pattern: "",
    values: [],
    mime_types: [],
    entity: "",
    on_delete: "set null",
  };
}

/** An empty form for a new entity. */
export function newForm(): FormState {
  return { name: "", type: "base", has_api: true, view_query: "", fields: [] };
}

function defaultText(type: FieldType, v: unknown): string {
  if (v === undefined || v === null) return "";
  if (type === "json") return JSON.stringify(v);
  return String(v);
}

/** A stored field → form state. */
export function fieldState(f: FieldDef): FieldState {
  return {
    ...newField(f.type),
    key: f.id || `new${nextKey++}`,
    id: f.id || undefined,
    name: f.name,
    required: !!f.required,
    unique: !!f.unique,
    index: !!f.index,
    default: defaultText(f.type, f.default),
    min: f.min === undefined || f.min === null ? "" : String(f.min),
    max: f.max === undefined || f.max === null ? "" : String(f.max),
    pattern: f.pattern ?? "",
    values: [...(f.values ?? [])],
    mime_types: [...(f.mime_types ?? [])],
    entity: f.foreign_key?.entity ?? "",
    on_delete: f.foreign_key?.on_delete ?? "set null",
  };
}

/** A saved schema → form state (built-in fields left out). */
export function formState(s: EntitySchema): FormState {
  return {
    name: s.name,
    type: s.type,
    has_api: s.has_api,
    view_query: s.view_query ?? "",
    fields: s.type === "view"
      ? []
      : s.fields.filter((f) => !f.system).map(fieldState),
  };
}

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
  body.unique = o.unique && f.unique;
  if (o.index && f.index) body.index = true;
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
  if (o.relation) {
    body.foreign_key = { entity: f.entity, on_delete: f.on_delete };
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
  else body.fields = collect(form.fields, errors);
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
        change[k] = k in now ? now[k] : k === "index" ? false : null;
      }
      if (Object.keys(change).length > 0) ops.push({ id: f.id, ...change });
    });
    ops.push(...adds);
    if (ops.length > 0) body.fields = ops;
  }
  return { body, errors, dropped, empty: Object.keys(body).length === 0 };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

const ENTITY_KEYS = ["name", "type", "has_api", "view_query", "fields"];
const IGNORED_KEYS = ["id", "rules", "is_system", "created", "updated"];
const FIELD_KEYS = [
  "id",
  "name",
  "type",
  "required",
  "unique",
  "index",
  "default",
  "min",
  "max",
  "pattern",
  "values",
  "mime_types",
  "foreign_key",
  "system",
];

/** The JSON view's text of a form. */
export function formJson(form: FormState): string {
  return JSON.stringify(schemaBody(form).body, null, 2);
}

/**
 * The JSON view's text → form state. `saved` (editing) fixes the type and
 * the ids fields may carry. Errors are plain words with a position.
 */
export function formFromJson(
  text: string,
  saved?: EntitySchema,
):
  | { ok: true; form: FormState }
  | { ok: false; message: string; offset?: number } {
  const parsed = parseJson(text);
  if (!parsed.ok) {
    return { ok: false, message: parsed.message, offset: parsed.offset };
  }
  const v = parsed.value;
  const err = (message: string) => ({ ok: false as const, message });
  if (!isObject(v)) return err("The JSON must be an object {…}");
  for (const k of Object.keys(v)) {
    if (!ENTITY_KEYS.includes(k) && !IGNORED_KEYS.includes(k)) {
      return err(`Unknown key "${k}" (use ${ENTITY_KEYS.join(", ")})`);
    }
  }
  if (typeof v.name !== "string") return err('"name" must be a string');
  const type = v.type ?? saved?.type ?? "base";
  if (type !== "base" && type !== "auth" && type !== "view") {
    return err('"type" must be "base", "auth" or "view"');
  }
  if (saved && type !== saved.type) {
    return err(`"type" cannot change (this entity is ${saved.type})`);
  }
  if (v.has_api !== undefined && typeof v.has_api !== "boolean") {
    return err('"has_api" must be true or false');
  }
  if (v.view_query !== undefined && typeof v.view_query !== "string") {
    return err('"view_query" must be a string');
  }
  const list = v.fields ?? [];
  if (!Array.isArray(list)) return err('"fields" must be a list [...]');
  if (type === "view" && list.length > 0) {
    return err("A view has no fields: its columns come from view_query");
  }
  const fields: FieldState[] = [];
  for (const [i, raw] of list.entries()) {
    const where = `fields[${i}]`;
    if (!isObject(raw)) return err(`${where} must be an object {…}`);
    if (raw.system === true) continue;
    for (const k of Object.keys(raw)) {
      if (!FIELD_KEYS.includes(k)) return err(`${where}: unknown key "${k}"`);
    }
    if (typeof raw.name !== "string") {
      return err(`${where}.name must be a string`);
    }
    if (!FIELD_TYPE_LIST.includes(raw.type as FieldType)) {
      return err(`${where}.type must be one of ${FIELD_TYPE_LIST.join(", ")}`);
    }
    if (raw.id !== undefined) {
      const was = saved?.fields.find((f) => f.id === raw.id && !f.system);
      if (!was) return err(`${where}.id: no saved field has this id`);
      if (was.type !== raw.type) {
        return err(`${where}.type cannot change (the field is ${was.type})`);
      }
    }
    for (const k of ["min", "max"]) {
      if (
        raw[k] !== undefined && raw[k] !== null && typeof raw[k] !== "number"
      ) {
        return err(`${where}.${k} must be a number`);
      }
    }
    for (const k of ["values", "mime_types"]) {
      const l = raw[k];
      if (
        l !== undefined && l !== null &&
        (!Array.isArray(l) || !l.every((s) => typeof s === "string"))
      ) return err(`${where}.${k} must be a list of strings`);
    }
    const fk = raw.foreign_key;
    if (fk !== undefined && fk !== null && !isObject(fk)) {
      return err(`${where}.foreign_key must be {entity, on_delete}`);
    }
    if (
      raw.pattern !== undefined && raw.pattern !== null &&
      typeof raw.pattern !== "string"
    ) {
      return err(`${where}.pattern must be a string`);
    }
    fields.push(fieldState(raw as unknown as FieldDef));
  }
  return {
    ok: true,
    form: {
      name: v.name,
      type,
      has_api: v.has_api ?? true,
      view_query: typeof v.view_query === "string" ? v.view_query : "",
      fields,
    },
  };
}

/**
 * Where an API error about a schema belongs: the server names the field
 * (`Cannot accept field "title".pattern: …`, `field name "bad name"`) or
 * the entity's `name` / `view_query`. Returns a form error key, or "".
 */
export function errorKey(message: string, form: FormState): string {
  const byName = (name: string) =>
    form.fields.find((f) => f.name.trim() === name)?.key;
  let m = /field "([^"]*)"(?:\.([a-z_]+))?/.exec(message);
  if (m) {
    const key = byName(m[1]);
    if (key) {
      const opt = m[2] === "foreign_key"
        ? "entity"
        : /min > max/.test(message)
        ? "min"
        : m[2] ?? "name";
      return `${key}.${
        [
            "type",
            "values",
            "mime_types",
            "entity",
            "default",
            "min",
            "max",
            "pattern",
            "unique",
            "index",
          ].includes(opt)
          ? opt
          : "name"
      }`;
    }
  }
  m = /field name (".*?")(?::|$)/.exec(message);
  if (m) {
    try {
      const key = byName(JSON.parse(m[1]));
      if (key) return `${key}.name`;
    } catch {
      // not a quoted name: fall through
    }
  }
  if (/view_query|view /.test(message) && form.type === "view") {
    return "view_query";
  }
  if (
    /entity name|rename entity|already exists|prefix is reserved/.test(message)
  ) {
    return "name";
  }
  return "";
}
