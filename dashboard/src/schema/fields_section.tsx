/// <reference lib="dom" />
/**
 * The entity form's field list: built-in fields (read-only), one editor
 * per declared field, saved fields removed in this edit (dropped on save,
 * with Undo), and "Add field".
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import {
  type FieldState,
  fieldState,
  type FormErrors,
  type FormState,
  newField,
} from "./schema_form.ts";
import { FieldEditor } from "./field_editor.tsx";
import { SystemFields } from "./system_fields.tsx";

/** Errors of one field (`<key>.<option>` → `<option>`). */
function errorsOf(errors: FormErrors, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(errors)) {
    if (k.startsWith(key + ".")) out[k.slice(key.length + 1)] = v;
  }
  return out;
}

/** Fields of a base or auth entity. */
export function FieldsSection(props: {
  form: FormState;
  saved?: EntitySchema;
  errors: FormErrors;
  targets: string[];
  onFields: (fields: FieldState[]) => void;
}): JSX.Element {
  const { form } = props;
  const [focusKey, setFocusKey] = useState("");
  useEffect(() => {
    if (!focusKey) return;
    document.querySelector<HTMLInputElement>(
      `[data-key="${focusKey}"] input[type="text"]`,
    )?.focus();
    setFocusKey("");
  }, [focusKey]);
  const kept = new Set(form.fields.map((f) => f.id));
  const removed = (props.saved?.fields ?? []).filter((f) =>
    !f.system && !kept.has(f.id)
  );
  const replace = (i: number, next: FieldState) =>
    props.onFields(form.fields.map((f, j) => (j === i ? next : f)));
  const add = () => {
    const f = newField("string");
    props.onFields([...form.fields, f]);
    setFocusKey(f.key);
  };
  return (
    <section class="card stack" aria-labelledby="fields-h">
      <h2 id="fields-h">Fields</h2>
      <SystemFields type={form.type} />
      {form.fields.length === 0 && (
        <p class="muted">No fields of your own yet.</p>
      )}
      {form.fields.map((f, i) => (
        <div key={f.key} data-key={f.key}>
          <FieldEditor
            f={f}
            n={i + 1}
            errors={errorsOf(props.errors, f.key)}
            targets={props.targets}
            onChange={(next) => replace(i, next)}
            onRemove={() =>
              props.onFields(form.fields.filter((_, j) => j !== i))}
          />
        </div>
      ))}
      {removed.length > 0 && (
        <ul class="dropped" aria-label="Fields to drop">
          {removed.map((f) => (
            <li key={f.id} class="row wrap">
              <span>
                Field <strong>{f.name}</strong>{" "}
                ({f.type}) will be dropped with its data when you save.
              </span>
              <button
                type="button"
                class="btn btn-small"
                aria-label={`Keep field ${f.name}`}
                onClick={() => props.onFields([...form.fields, fieldState(f)])}
              >
                Undo
              </button>
            </li>
          ))}
        </ul>
      )}
      <div>
        <button type="button" class="btn" onClick={add}>
          + Add field
        </button>
      </div>
    </section>
  );
}
