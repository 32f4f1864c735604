/// <reference lib="dom" />
/**
 * The record editor's model: record values ↔ form values (text of inputs,
 * local date-times, JSON text, file states) and the write the API needs —
 * JSON, or `multipart/form-data` with the values in `@jsonPayload` and one
 * part per upload when there are new files. A PATCH sends only what
 * changed; for `files` the kept names (in order) are sent whenever they
 * changed, uploads are appended after them. A multiple relation is a list
 * of ids, sent whole when it changed (a new record's empty list is not
 * sent: the server stores `[]`, or the creator for an `@auth` default).
 *
 * @module
 */

import { CALLER_DEFAULT } from "../../../lib/schema/types.ts";
import type { EntitySchema, FieldDef } from "../schemas.ts";
import { isoToLocal, localToIso } from "./inputs/datetime_input.tsx";
import type { FileState } from "./inputs/file_input.tsx";
import { jsonError } from "./inputs/json_input.tsx";

/** One input's value (a multiple relation's: its ids, in order). */
export type FormValue = string | boolean | FileState | string[];
/** The form, by field name. */
export type FormValues = Record<string, FormValue>;

const AUTH_EDITABLE = new Set(["email", "verified"]);

/** Fields the editor shows inputs for (never id, created, updated, password). */
export function editableFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) =>
    !f.system || (schema.type === "auth" && AUTH_EDITABLE.has(f.name)) ||
    (schema.type === "view" && !["id", "created", "updated"].includes(f.name))
  );
}

const isFile = (f: FieldDef) => f.type === "file" || f.type === "files";

/** A relation holding a list of ids (`"multiple": true`). */
export const isMultiple = (f: FieldDef): boolean =>
  f.type === "relation" && !!f.multiple;

function toForm(f: FieldDef, v: unknown): FormValue {
  if (isMultiple(f)) {
    return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
  }
  if (isFile(f)) {
    const kept = Array.isArray(v)
      ? v.map(String)
      : typeof v === "string" && v
      ? [v]
      : [];
    return { kept, added: [] };
  }
  switch (f.type) {
    case "bool":
      return v === true;
    case "date":
      return isoToLocal(v);
    case "json":
      return v === null || v === undefined ? "" : JSON.stringify(v, null, 2);
    case "int":
    case "double":
      return typeof v === "number" ? String(v) : "";
    default:
      return v === null || v === undefined ? "" : String(v);
  }
}

/**
 * True for a relation whose default is the caller (`"default": "@auth"`):
 * the server fills it with the user who creates the record, so a new
 * record's form leaves it empty (the text `@auth` is no record id).
 */
export function isCallerDefault(f: FieldDef): boolean {
  return f.type === "relation" && f.default === CALLER_DEFAULT;
}

/**
 * The form of a record (or of a new one, with the fields' defaults; a
 * caller default stays empty: see {@link isCallerDefault}).
 */
export function formOf(
  schema: EntitySchema,
  record: Record<string, unknown> | null,
): FormValues {
  const out: FormValues = {};
  for (const f of editableFields(schema)) {
    const start = isCallerDefault(f) ? undefined : f.default;
    out[f.name] = toForm(f, record ? record[f.name] : start);
  }
  return out;
}

/** A form value as the API takes it (files are handled apart). */
function fromForm(f: FieldDef, v: FormValue): unknown {
  if (typeof v === "boolean" || Array.isArray(v)) return v;
  if (typeof v !== "string") return undefined;
  if (v.trim() === "" && f.type !== "string" && f.type !== "text") return null;
  switch (f.type) {
    case "int":
    case "double":
      return Number(v);
    case "date":
      return localToIso(v);
    case "json":
      return JSON.parse(v);
    case "string":
    case "text":
      return v === "" ? null : v;
    default:
      return v;
  }
}

/** What to send, or per-field errors found before sending. */
export type Write =
  | { ok: true; body: Record<string, unknown> | FormData; empty: boolean }
  | { ok: false; errors: Record<string, string> };

/** Builds the create (`initial` null) or update request of the form. */
export function buildWrite(
  schema: EntitySchema,
  values: FormValues,
  initial: FormValues | null,
  password: { value: string; confirm: string },
): Write {
  const errors: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  const uploads: [string, File][] = [];
  for (const f of editableFields(schema)) {
    const v = values[f.name];
    const was = initial?.[f.name];
    if (isFile(f)) {
      const now = v as FileState;
      const before = (was as FileState | undefined)?.kept ?? [];
      for (const a of now.added) uploads.push([f.name, a.file]);
      if (f.type === "file") {
        if (now.added.length === 0 && now.kept.length === 0 && before.length) {
          body[f.name] = null;
        }
      } else if (JSON.stringify(now.kept) !== JSON.stringify(before)) {
        body[f.name] = now.kept;
      }
      continue;
    }
    if (f.type === "json" && typeof v === "string" && jsonError(v)) {
      errors[f.name] = jsonError(v);
      continue;
    }
    const out = fromForm(f, v);
    if (initial === null) {
      const none = out === null || out === undefined ||
        (Array.isArray(out) && out.length === 0);
      if (!none) body[f.name] = out;
    } else if (JSON.stringify(out) !== JSON.stringify(fromForm(f, was!))) {
      body[f.name] = out;
    }
  }
  if (schema.type === "auth" && (password.value || password.confirm)) {
    if (password.value !== password.confirm) {
      errors["password-confirm"] = "The two passwords differ";
    } else body.password = password.value;
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const empty = Object.keys(body).length === 0 && uploads.length === 0;
  if (uploads.length === 0) return { ok: true, body, empty };
  const form = new FormData();
  form.append("@jsonPayload", JSON.stringify(body));
  for (const [name, file] of uploads) form.append(name, file, file.name);
  return { ok: true, body: form, empty };
}
