/**
 * The entity form's indexes: which fields an index may use, the API's
 * `indexes` list of a form (field names, in order) with client-side
 * problems, and whether it differs from the saved one. Pure: no DOM.
 *
 * @module
 */

import type { EntitySchema, FieldType } from "../../../lib/schema/types.ts";
import {
  type FormErrors,
  type FormState,
  type IndexState,
  indexStates,
} from "./schema_form.ts";

/** Built-in fields an index may use, by entity type (never `password`). */
const BUILTINS: Record<string, readonly string[]> = {
  base: ["id", "created", "updated"],
  auth: ["id", "created", "updated", "email", "verified"],
};

/** Types an index may fold (`fold(<field>)`). */
const FOLDABLE: readonly FieldType[] = [
  "string",
  "text",
  "email",
  "url",
  "select",
];

/** Types whose values cannot be indexed. */
const NOT_INDEXABLE: readonly FieldType[] = ["json", "file", "files"];

/** The name a field ref stands for now, or undefined (a removed field). */
export function refName(form: FormState, ref: string): string | undefined {
  const fold = /^fold\((.*)\)$/.exec(ref);
  if (fold) {
    const inner = refName(form, fold[1]);
    return inner === undefined ? undefined : `fold(${inner})`;
  }
  const f = form.fields.find((x) => x.key === ref);
  if (f) return f.name.trim() || undefined;
  return (BUILTINS[form.type] ?? []).includes(ref) ? ref : undefined;
}

/** The fields an index may use, as `{ref, name}`, built-ins first. */
export function indexableFields(
  form: FormState,
): { ref: string; name: string }[] {
  return [
    ...(BUILTINS[form.type] ?? []).map((n) => ({ ref: n, name: n })),
    ...form.fields
      .filter((f) => f.name.trim() !== "" && !NOT_INDEXABLE.includes(f.type))
      .map((f) => ({ ref: f.key, name: f.name.trim() })),
    // Case- and accent-insensitive: serves fold(<field>) == … and startsWith.
    ...form.fields
      .filter((f) => f.name.trim() !== "" && FOLDABLE.includes(f.type))
      .map((f) => ({ ref: `fold(${f.key})`, name: `fold(${f.name.trim()})` })),
  ];
}

/**
 * The API's `indexes` of a form; problems go to `errors` under
 * `<index key>.fields` (no field picked, a field removed from the form).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { indexesBody } from "./schema_indexes.ts";
 * import { newField, newForm } from "./schema_form.ts";
 * const form = newForm();
 * const n = { ...newField("int"), name: "n" };
 * form.fields = [n];
 * form.indexes = [{ key: "i1", fields: [n.key, "created"], unique: true }];
 * const errors = {};
 * assert.deepEqual(indexesBody(form, errors), [{ fields: ["n", "created"], unique: true }]);
 * form.indexes = [{ key: "i2", fields: ["gone"], unique: false }];
 * indexesBody(form, errors);
 * assert.deepEqual(Object.keys(errors), ["i2.fields"]);
 * ```
 */
export function indexesBody(
  form: FormState,
  errors: FormErrors,
): { fields: string[]; unique: boolean }[] {
  return form.indexes.map((idx) => {
    const names = idx.fields.map((ref) => refName(form, ref));
    if (idx.fields.length === 0) {
      errors[`${idx.key}.fields`] = "Pick at least one field";
    } else if (names.some((n) => n === undefined)) {
      errors[`${idx.key}.fields`] =
        "Uses a field that is being removed: remove the index too, or keep the field";
    }
    return { fields: names.map((n) => n ?? ""), unique: idx.unique };
  });
}

function shape(list: IndexState[]): string {
  return JSON.stringify(list.map((i) => [i.fields, i.unique]));
}

/** True when the form's indexes are the saved ones (renamed fields aside). */
export function sameIndexes(saved: EntitySchema, form: FormState): boolean {
  const before = indexStates(
    saved.indexes ?? [],
    saved.fields.filter((f) => !f.system).map((f) => ({
      key: f.id,
      name: f.name,
    })),
  );
  return shape(before) === shape(form.indexes);
}
