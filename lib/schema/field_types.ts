/**
 * The field-type table: storage kind, accepted option keys, and the value
 * check of each type. One row per type, no branching elsewhere.
 *
 * @module
 */

import type { ColumnKind } from "../db/storage.ts";
import type { FieldDef, FieldType } from "./types.ts";
import { patternMismatch } from "./patterns.ts";

/** Result of checking one value: the normalized value, or why it is wrong. */
export type Checked = { ok: true; value: unknown } | {
  ok: false;
  code: string;
  message: string;
};

interface TypeSpec {
  kind: ColumnKind;
  /** Option keys allowed beyond the common ones. */
  options: readonly string[];
  /** May carry a unique index. */
  uniqueable: boolean;
  check(value: unknown, field: FieldDef): Checked;
}

const EMAIL =
  /^[^\s@"<>()[\]\\,;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const MAX_TEXT = 1_000_000;

const ok = (value: unknown): Checked => ({ ok: true, value });
const bad = (code: string, message: string): Checked => ({
  ok: false,
  code,
  message,
});

function range(n: number, f: FieldDef, what: string): Checked | undefined {
  if (f.min !== undefined && n < f.min) {
    return bad("too_small", `Must be at least ${f.min}${what}`);
  }
  if (f.max !== undefined && n > f.max) {
    return bad("too_large", `Must be at most ${f.max}${what}`);
  }
  return undefined;
}

/** A lone UTF-16 surrogate cannot be stored: both databases keep U+FFFD. */
const LONE_SURROGATE = "Must be well-formed Unicode (no lone surrogate)";

/** True when every string in a JSON value (keys too) is well-formed. */
function wellFormed(v: unknown): boolean {
  if (typeof v === "string") return v.isWellFormed();
  if (Array.isArray(v)) return v.every(wellFormed);
  if (v !== null && typeof v === "object") {
    return Object.entries(v).every(([k, x]) =>
      k.isWellFormed() && wellFormed(x)
    );
  }
  return true;
}

function text(value: unknown, f: FieldDef): Checked {
  if (typeof value !== "string") return bad("invalid_type", "Must be a string");
  if (value.includes("\0")) {
    return bad("invalid_string", "Must not contain NUL characters");
  }
  if (!value.isWellFormed()) return bad("invalid_string", LONE_SURROGATE);
  if (value.length > MAX_TEXT) {
    return bad("too_large", `Must be at most ${MAX_TEXT} characters`);
  }
  const r = range([...value].length, f, " characters");
  if (r) return r;
  if (f.pattern !== undefined) {
    const mismatch = patternMismatch(f.pattern, value); // linear time, bounded
    if (mismatch !== undefined) return bad("pattern", mismatch);
  }
  return ok(value);
}

function email(value: unknown): Checked {
  if (typeof value === "string" && value.includes("\0")) {
    return bad("invalid_email", "Must be a valid email address");
  }
  if (typeof value !== "string" || value.length > 254 || !EMAIL.test(value)) {
    return bad("invalid_email", "Must be a valid email address");
  }
  return ok(value.toLowerCase());
}

function url(value: unknown): Checked {
  // NUL: the URL parser accepts it, SQLite would read the value back cut short.
  if (
    typeof value !== "string" || value.length > 2048 || value.includes("\0")
  ) {
    return bad("invalid_url", "Must be a URL");
  }
  try {
    const u = new URL(value);
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      return bad("invalid_url", "Must be an http or https URL");
    }
  } catch {
    return bad("invalid_url", "Must be a URL");
  }
  return ok(value);
}

function int(value: unknown, f: FieldDef): Checked {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    return bad("invalid_type", "Must be an integer");
  }
  return range(value, f, "") ?? ok(value);
}

function double(value: unknown, f: FieldDef): Checked {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return bad("invalid_type", "Must be a finite number");
  }
  return range(value, f, "") ?? ok(value);
}

function date(value: unknown): Checked {
  if (typeof value !== "string" || !ISO_DATE.test(value)) {
    return bad("invalid_date", "Must be an ISO 8601 date");
  }
  const t = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  // Reject dates that JavaScript would roll over (2024-02-30 → March 1).
  const [y, m, d] = value.slice(0, 10).split("-").map(Number);
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  if (Number.isNaN(t) || m < 1 || m > 12 || d < 1 || d > days) {
    return bad("invalid_date", "Must be an ISO 8601 date");
  }
  return ok(new Date(t).toISOString());
}

function jsonValue(value: unknown): Checked {
  const text = JSON.stringify(value) ?? "";
  if (text.includes("\\u0000")) {
    return bad("invalid_string", "Must not contain NUL characters");
  }
  if (!wellFormed(value)) return bad("invalid_string", LONE_SURROGATE);
  const size = text.length;
  return size > MAX_TEXT
    ? bad("too_large", "JSON value is too large")
    : ok(value);
}

function select(value: unknown, f: FieldDef): Checked {
  if (typeof value !== "string" || !(f.values ?? []).includes(value)) {
    return bad(
      "invalid_choice",
      `Must be one of: ${(f.values ?? []).join(", ")}`,
    );
  }
  return ok(value);
}

/** Most ids a multiple relation holds (its `max` may be lower). */
export const MAX_RELATED = 1000;

function isRecordId(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 &&
    value.length <= 64 && !value.includes("\0");
}

function relation(value: unknown, f: FieldDef): Checked {
  if (f.multiple) return relations(value, f);
  if (!isRecordId(value)) return bad("invalid_type", "Must be a record id");
  return ok(value);
}

// A multiple relation: a list of distinct record ids, in the order given.
function relations(value: unknown, f: FieldDef): Checked {
  if (!Array.isArray(value) || !value.every(isRecordId)) {
    return bad("invalid_type", "Must be a list of record ids");
  }
  const max = Math.min(f.max ?? MAX_RELATED, MAX_RELATED);
  if (value.length > max) {
    return bad("too_large", `Must hold at most ${max} record ids`);
  }
  const seen = new Set<string>();
  for (const id of value) {
    if (seen.has(id)) {
      return bad(
        "duplicate",
        `Must not name a record twice (${JSON.stringify(id)})`,
      );
    }
    seen.add(id);
  }
  return ok([...value]);
}

function fileName(value: unknown): Checked {
  if (
    typeof value !== "string" || value.length === 0 || value.length > 255 ||
    value.includes("\0")
  ) {
    return bad("invalid_type", "Must be a stored file name");
  }
  return ok(value);
}

function fileNames(value: unknown, f: FieldDef): Checked {
  if (!Array.isArray(value) || !value.every((v) => fileName(v).ok)) {
    return bad("invalid_type", "Must be a list of stored file names");
  }
  return range(value.length, f, " files") ?? ok(value);
}

/** The table of field types. */
export const FIELD_TYPES: Readonly<Record<FieldType, TypeSpec>> = {
  string: {
    kind: "text",
    options: ["min", "max", "pattern", "searchable"],
    uniqueable: true,
    check: text,
  },
  text: {
    kind: "text",
    options: ["min", "max", "pattern", "searchable"],
    uniqueable: true,
    check: text,
  },
  email: { kind: "text", options: [], uniqueable: true, check: email },
  url: { kind: "text", options: [], uniqueable: true, check: url },
  int: { kind: "int", options: ["min", "max"], uniqueable: true, check: int },
  double: {
    kind: "double",
    options: ["min", "max"],
    uniqueable: true,
    check: double,
  },
  bool: {
    kind: "bool",
    options: [],
    uniqueable: false,
    check: (v) =>
      typeof v === "boolean"
        ? ok(v)
        : bad("invalid_type", "Must be true or false"),
  },
  date: { kind: "text", options: [], uniqueable: true, check: date },
  json: { kind: "json", options: [], uniqueable: false, check: jsonValue },
  select: {
    kind: "text",
    options: ["values"],
    uniqueable: true,
    check: select,
  },
  file: {
    kind: "text",
    options: ["mime_types", "thumbs"],
    uniqueable: false,
    check: fileName,
  },
  files: {
    kind: "json",
    options: ["mime_types", "thumbs", "min", "max"],
    uniqueable: false,
    check: fileNames,
  },
  relation: {
    kind: "text", // json when `multiple` (kindOf)
    options: ["foreign_key", "multiple", "max"],
    uniqueable: true,
    check: relation,
  },
};

/** Keys every field object may carry. */
export const COMMON_KEYS: readonly string[] = [
  "id",
  "name",
  "type",
  "required",
  "unique",
  "default",
  "system",
  "index",
];

/** True when `type` names a field type. */
export function isFieldType(type: unknown): type is FieldType {
  return typeof type === "string" && Object.hasOwn(FIELD_TYPES, type);
}

/**
 * Checks a record value against its field (type and per-type options).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkValue } from "moonbase/lib/schema/field_types.ts";
 * const f = { id: "1", name: "n", type: "int" as const, required: false, unique: false, max: 5 };
 * assert.ok(checkValue(f, 3).ok && !checkValue(f, 9).ok && !checkValue(f, "3").ok);
 * ```
 */
export function checkValue(field: FieldDef, value: unknown): Checked {
  return FIELD_TYPES[field.type].check(value, field);
}

/** Storage kind of a field. */
export function kindOf(field: FieldDef): ColumnKind {
  if (field.multiple && field.type === "relation") return "json";
  return FIELD_TYPES[field.type].kind;
}
