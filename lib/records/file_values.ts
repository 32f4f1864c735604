/**
 * Deciding the new value of `file`/`files` fields on a write: names a
 * client sends must be files the record already has (kept); uploads are
 * added (`files`) or replace (`file`); whatever is no longer referenced is
 * returned for deletion after the commit.
 *
 * @module
 */

import { type FieldErrors, invalidFields } from "../errors.ts";
import type { EntitySchema } from "../schema/types.ts";
import type { RecordData } from "./codec.ts";

/** Uploaded stored names per field. */
export type Uploads = ReadonlyMap<string, readonly string[]>;

function listOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  return Array.isArray(v)
    ? v.filter((x): x is string => typeof x === "string")
    : [];
}

/**
 * Rewrites the file fields in `values` (field → checked body value) and
 * returns the stored names to delete once the write has committed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mergeFiles } from "moonbase/lib/records/file_values.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const schema = { id: "e", name: "docs", type: "base" as const, view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "", rules: adminOnlyRules(),
 *   fields: [{ id: "f", name: "att", type: "files" as const, required: false, unique: false }] };
 * const values = new Map<string, unknown>([["att", ["a_0000000000.txt"]]]);
 * const removed = mergeFiles(schema, { att: ["a_0000000000.txt", "b_0000000000.txt"] }, values,
 *   new Map([["att", ["c_0000000000.txt"]]]));
 * assert.ok(removed[0] === "b_0000000000.txt");
 * assert.ok((values.get("att") as string[]).length === 2);
 * ```
 */
export function mergeFiles(
  schema: EntitySchema,
  current: Record<string, unknown> | undefined,
  values: Map<string, unknown>,
  uploads: Uploads,
): string[] {
  const removed: string[] = [];
  const errors: FieldErrors = {};
  for (const f of schema.fields) {
    if (f.type !== "file" && f.type !== "files") continue;
    const up = uploads.get(f.name) ?? [];
    const inBody = values.has(f.name);
    const had = listOf(current?.[f.name]);
    if (!inBody && up.length === 0) {
      if (!current && f.required) {
        errors[f.name] = { code: "required", message: "Missing required file" };
      }
      continue;
    }
    const sent = inBody
      ? listOf(values.get(f.name))
      : (f.type === "files" ? had : []);
    const unknown = sent.filter((n) => !had.includes(n));
    if (unknown.length > 0) {
      errors[f.name] = {
        code: "unknown_file",
        message: "Names must be files this record already has",
      };
      continue;
    }
    let next = [...new Set([...sent, ...up])];
    if (f.type === "file") {
      if (up.length > 1) {
        errors[f.name] = {
          code: "too_many_files",
          message: "Takes a single file",
        };
        continue;
      }
      next = up.length === 1 ? [...up] : sent.slice(0, 1);
    }
    if (f.type === "files" && f.max !== undefined && next.length > f.max) {
      errors[f.name] = {
        code: "too_many_files",
        message: `At most ${f.max} files`,
      };
      continue;
    }
    if (f.type === "files" && f.min !== undefined && next.length < f.min) {
      errors[f.name] = {
        code: "too_few_files",
        message: `At least ${f.min} files`,
      };
      continue;
    }
    if (f.required && next.length === 0) {
      errors[f.name] = { code: "required", message: "Missing required file" };
      continue;
    }
    values.set(f.name, f.type === "file" ? next[0] ?? null : next);
    removed.push(...had.filter((n) => !next.includes(n)));
  }
  if (Object.keys(errors).length > 0) throw invalidFields(errors);
  return removed;
}

/** Stored file names a record references. */
export function fileNames(schema: EntitySchema, record: RecordData): string[] {
  const out: string[] = [];
  for (const f of schema.fields) {
    const v = record[f.name];
    if (f.type === "file" && typeof v === "string") out.push(v);
    if (f.type === "files" && Array.isArray(v)) {
      out.push(...v.filter((x): x is string => typeof x === "string"));
    }
  }
  return out;
}
