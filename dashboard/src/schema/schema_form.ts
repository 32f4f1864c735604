/**
 * The entity form's state: fields and options as the admin edits them
 * (numbers and defaults as typed text), which options apply to which type,
 * and a saved schema → form state. Pure: no DOM.
 *
 * @module
 */

import type {
  EntitySchema,
  EntityType,
  FieldDef,
  FieldType,
  OnDelete,
} from "../../../lib/schema/types.ts";

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

/** Which options a type takes (docs/guide/entities.md, "Fields"). */
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
  /** Part of the entity's full-text search (string and text). */
  searchable: boolean;
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
    searchable: type === "string" || type === "text",
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
  searchable: boolean;
  /** The default as text ("" = none; JSON text for json fields). */
  default: string;
  min: string;
  max: string;
  pattern: string;
  values: string[];
  mime_types: string[];
  /** Thumbnail sizes anyone who may read a file may have (`100x100`). */
  thumbs: string[];
  entity: string;
  on_delete: OnDelete;
  /** A relation holding a list of ids (fixed once the field is saved). */
  multiple: boolean;
}

/** One entity-level index as the form edits it. */
export interface IndexState {
  /** Stable key for the list (the saved index's id, or a local one). */
  key: string;
  /** The fields in order: a declared field's `key`, or a built-in's name. */
  fields: string[];
  unique: boolean;
}

/** The whole form. */
export interface FormState {
  name: string;
  type: EntityType;
  has_api: boolean;
  view_query: string;
  /** Declared fields (built-in ones are shown from the saved schema). */
  fields: FieldState[];
  /** Indexes over several fields (base and auth entities). */
  indexes: IndexState[];
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
    searchable: false,
    default: "",
    min: "",
    max: "",
    pattern: "",
    values: [],
    mime_types: [],
    thumbs: [],
    entity: "",
    on_delete: "set null",
    multiple: false,
  };
}

/**
 * Moves the local key counter past the keys of `form` (a restored draft),
 * so fields added afterwards never share a key with one of it.
 */
export function reserveKeys(form: FormState): void {
  for (const x of [...form.fields, ...form.indexes]) {
    const m = /^new(\d+)$/.exec(x.key);
    if (m) nextKey = Math.max(nextKey, Number(m[1]) + 1);
  }
}

/** A new, empty index. */
export function newIndex(): IndexState {
  return { key: `new${nextKey++}`, fields: [], unique: false };
}

/** An empty form for a new entity. */
export function newForm(): FormState {
  return {
    name: "",
    type: "base",
    has_api: true,
    view_query: "",
    fields: [],
    indexes: [],
  };
}

/**
 * Saved indexes (field names) → index states (field refs), given the form's
 * fields; a name no declared field has stays as it is (a built-in's name).
 */
export function indexStates(
  indexes: readonly { id?: string; fields: string[]; unique?: boolean }[],
  fields: readonly { key: string; name: string }[],
): IndexState[] {
  return indexes.map((i) => ({
    key: i.id || `new${nextKey++}`,
    fields: i.fields.map((n) => {
      // `fold(<name>)` entries keep the fold around the field's ref.
      const fold = /^fold\((.*)\)$/.exec(n);
      const name = fold ? fold[1] : n;
      const ref = fields.find((f) => f.name === name)?.key ?? name;
      return fold ? `fold(${ref})` : ref;
    }),
    unique: !!i.unique,
  }));
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
    searchable: !!f.searchable,
    default: defaultText(f.type, f.default),
    min: f.min === undefined || f.min === null ? "" : String(f.min),
    max: f.max === undefined || f.max === null ? "" : String(f.max),
    pattern: f.pattern ?? "",
    values: [...(f.values ?? [])],
    mime_types: [...(f.mime_types ?? [])],
    thumbs: [...(f.thumbs ?? [])],
    entity: f.foreign_key?.entity ?? "",
    on_delete: f.foreign_key?.on_delete ?? "set null",
    multiple: f.type === "relation" && !!f.multiple,
  };
}

/** A saved schema → form state (built-in fields left out). */
export function formState(s: EntitySchema): FormState {
  const fields = s.type === "view"
    ? []
    : s.fields.filter((f) => !f.system).map(fieldState);
  return {
    name: s.name,
    type: s.type,
    has_api: s.has_api,
    view_query: s.view_query ?? "",
    fields,
    indexes: indexStates(s.indexes ?? [], fields),
  };
}
