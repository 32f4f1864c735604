/// <reference lib="dom" />
/**
 * One declared field of the entity form: name, type (fixed once saved),
 * required / unique / index, the options of its type, and removal.
 *
 * @module
 */

import type { JSX } from "preact";
import type { FieldType } from "../../../lib/schema/types.ts";
import { FIELD_TYPE_LIST, type FieldState, optionsOf } from "./schema_form.ts";
import { Field } from "../ui/field.tsx";
import { FieldOptions } from "./field_options.tsx";

/** A checkbox with its label after it. */
function Check(props: {
  label: string;
  checked: boolean;
  onChange: (v: boolean) => void;
  hint?: string;
}): JSX.Element {
  return (
    <label class="check" title={props.hint}>
      <input
        type="checkbox"
        checked={props.checked}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
      <span>{props.label}</span>
    </label>
  );
}

/** The editor of one field. */
export function FieldEditor(props: {
  f: FieldState;
  /** Position in the list (1-based), for the legend. */
  n: number;
  onChange: (next: FieldState) => void;
  onRemove: () => void;
  errors: Record<string, string>;
  targets: string[];
}): JSX.Element {
  const { f, errors } = props;
  const saved = f.id !== undefined;
  const o = optionsOf(f.type);
  const set = (p: Partial<FieldState>) => props.onChange({ ...f, ...p });
  const title = f.name.trim() || "new field";
  return (
    <fieldset class={`field-panel ${saved ? "" : "is-new"}`}>
      <legend>
        <span class="field-n">#{props.n}</span> {title}{" "}
        <span class="badge">{f.type}</span>
        {!saved && <span class="badge badge-ok">new</span>}
      </legend>
      <div class="field-main">
        <Field
          label="Name"
          error={errors.name}
          hint={saved ? "Renaming keeps the data." : undefined}
        >
          <input
            type="text"
            value={f.name}
            autocomplete="off"
            spellcheck={false}
            onInput={(e) => set({ name: e.currentTarget.value })}
          />
        </Field>
        <Field
          label="Type"
          error={errors.type}
          hint={saved
            ? "Fixed once saved: to change it, add a new field."
            : undefined}
        >
          <select
            value={f.type}
            disabled={saved}
            onChange={(e) => set({ type: e.currentTarget.value as FieldType })}
          >
            {FIELD_TYPE_LIST.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </Field>
        <div class="checks">
          <Check
            label="Required"
            checked={f.required}
            onChange={(required) => set({ required })}
          />
          {o.unique && !(o.relation && f.multiple) && (
            <Check
              label="Unique"
              checked={f.unique}
              onChange={(unique) => set({ unique })}
            />
          )}
          {o.index && (
            <Check
              label="Index"
              hint="A plain index, for fields you filter or sort on"
              checked={f.index}
              onChange={(index) => set({ index })}
            />
          )}
          {o.searchable && (
            <Check
              label="Searchable"
              hint="Part of full-text search (?search=): words in any case or accents"
              checked={f.searchable}
              onChange={(searchable) => set({ searchable })}
            />
          )}
          {f.type === "relation" && (
            <span class="muted small">always indexed</span>
          )}
        </div>
        <button
          type="button"
          class="btn btn-small btn-ghost remove-field"
          aria-label={`Remove field ${title}`}
          onClick={props.onRemove}
        >
          Remove
        </button>
      </div>
      {(errors.unique || errors.index || errors.required) && (
        <p class="error-text" role="alert">
          {errors.unique || errors.index || errors.required}
        </p>
      )}
      <FieldOptions
        f={f}
        set={set}
        errors={errors}
        targets={props.targets}
        saved={saved}
      />
    </fieldset>
  );
}
