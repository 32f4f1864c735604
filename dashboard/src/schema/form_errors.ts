/**
 * Which of the entity form's errors still show: an error is about one
 * input (`name`, `view_query`, `<field key>.<option>`, `<index key>.fields`,
 * `indexes`), and it goes as soon as that input's value differs from the
 * one the save was refused with, so a fixed mistake stops being marked.
 * Pure: no DOM, unit-tested in `form_errors_test.ts`.
 *
 * @module
 */

import type { FormErrors, FormState } from "./schema_form.ts";

/** The value an error key is about, as text (the whole form when unknown). */
export function errorSubject(form: FormState, key: string): string {
  if (key === "name" || key === "view_query") return String(form[key]);
  if (key === "indexes") return JSON.stringify(form.indexes);
  const dot = key.indexOf(".");
  const owner = dot < 0 ? key : key.slice(0, dot);
  const option = dot < 0 ? "" : key.slice(dot + 1);
  const field = form.fields.find((f) => f.key === owner);
  if (field) {
    const v = (field as unknown as Record<string, unknown>)[option];
    // A field's type decides what its options mean: a change of type is a
    // change of every option.
    return JSON.stringify([field.type, v === undefined ? field : v]);
  }
  const index = form.indexes.find((i) => i.key === owner);
  if (index) return JSON.stringify(index);
  return JSON.stringify(form);
}

/** The errors of `refused` whose input still holds the refused value. */
export function shownErrors(
  errors: FormErrors,
  refused: FormState,
  now: FormState,
): FormErrors {
  if (refused === now) return errors;
  const out: FormErrors = {};
  for (const [k, v] of Object.entries(errors)) {
    if (errorSubject(refused, k) === errorSubject(now, k)) out[k] = v;
  }
  return out;
}
