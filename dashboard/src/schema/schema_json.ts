/**
 * The entity form's advanced view: form state ↔ JSON text (the schemas
 * API's body, with field ids when editing), and where an API error about
 * a schema belongs in the form. Pure: no DOM.
 *
 * @module
 */

import type {
  EntitySchema,
  FieldDef,
  FieldType,
} from "../../../lib/schema/types.ts";
import { parseJson } from "./json_error.ts";
import { schemaBody } from "./schema_diff.ts";
import {
  FIELD_TYPE_LIST,
  type FieldState,
  fieldState,
  type FormErrors,
  type FormState,
  type IndexState,
  indexStates,
} from "./schema_form.ts";

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

const ENTITY_KEYS = [
  "name",
  "type",
  "has_api",
  "view_query",
  "fields",
  "indexes",
];
const IGNORED_KEYS = ["id", "rules", "is_system", "created", "updated"];
const FIELD_KEYS = [
  "id",
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
  "thumbs",
  "foreign_key",
  "multiple",
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
    for (const k of ["values", "mime_types", "thumbs"]) {
      const l = raw[k];
      if (
        l !== undefined && l !== null &&
        (!Array.isArray(l) || !l.every((s) => typeof s === "string"))
      ) return err(`${where}.${k} must be a list of strings`);
    }
    if (raw.multiple !== undefined && typeof raw.multiple !== "boolean") {
      return err(`${where}.multiple must be true or false`);
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
  const indexes = indexesFromJson(v.indexes, type, fields);
  if (typeof indexes === "string") return err(indexes);
  return {
    ok: true,
    form: {
      name: v.name,
      type,
      has_api: v.has_api ?? true,
      view_query: typeof v.view_query === "string" ? v.view_query : "",
      fields,
      indexes,
    },
  };
}

/** The JSON view's `indexes` → index states, or what is wrong with it. */
function indexesFromJson(
  list: unknown,
  type: string,
  fields: FieldState[],
): IndexState[] | string {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) return '"indexes" must be a list [...]';
  if (type === "view" && list.length > 0) return "A view has no indexes";
  for (const [i, raw] of list.entries()) {
    const where = `indexes[${i}]`;
    if (!isObject(raw)) return `${where} must be an object {fields, unique}`;
    for (const k of Object.keys(raw)) {
      if (!["id", "fields", "unique"].includes(k)) {
        return `${where}: unknown key "${k}" (use fields, unique)`;
      }
    }
    const names = raw.fields;
    if (
      !Array.isArray(names) || names.length === 0 ||
      !names.every((n) => typeof n === "string")
    ) return `${where}.fields must be a list of field names`;
    const builtins = ["id", "created", "updated", "email", "verified"];
    for (const entry of names) {
      const n = /^fold\((.*)\)$/.exec(entry)?.[1] ?? entry;
      if (!fields.some((f) => f.name === n) && !builtins.includes(n)) {
        return `${where}.fields: no field "${n}"`;
      }
    }
    if (raw.unique !== undefined && typeof raw.unique !== "boolean") {
      return `${where}.unique must be true or false`;
    }
  }
  return indexStates(
    list as { id?: string; fields: string[]; unique?: boolean }[],
    fields,
  );
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
            "thumbs",
            "entity",
            "default",
            "min",
            "max",
            "pattern",
            "unique",
            "index",
            "multiple",
            "searchable",
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

/**
 * Per-field errors of an API answer (`data.fields`) as form error keys:
 * `fields[2].pattern` → the third field's pattern input, `name` and
 * `view_query` as they are; keys it cannot place are left out.
 */
export function fieldErrorKeys(
  fields: Record<string, { message: string }>,
  form: FormState,
): FormErrors {
  const out: FormErrors = {};
  for (const [k, v] of Object.entries(fields)) {
    const ix = /^indexes\[(\d+)\](?:\.([a-z_]+))?$/.exec(k);
    const idx = ix ? form.indexes[Number(ix[1])] : undefined;
    if (idx) {
      out[`${idx.key}.${ix![2] ?? "fields"}`] = v.message;
      continue;
    }
    if (k === "indexes") {
      out.indexes = v.message;
      continue;
    }
    const m = /^fields\[(\d+)\](?:\.([a-z_]+))?/.exec(k);
    const f = m ? form.fields[Number(m[1])] : undefined;
    if (f) {
      const opt = m![2] === "foreign_key" ? "entity" : m![2] ?? "name";
      out[`${f.key}.${opt}`] = v.message;
    } else if (k === "name" || k === "view_query") out[k] = v.message;
  }
  return out;
}
