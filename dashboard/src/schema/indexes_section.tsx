/// <reference lib="dom" />
/**
 * The entity form's indexes: each index lists its fields in order (move
 * up, remove), a choice to add the next field, a unique switch and
 * removal; "Add index" below. Native controls only, so every step works
 * from the keyboard; the fields' order is the index's column order.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  type FormErrors,
  type FormState,
  type IndexState,
  newIndex,
} from "./schema_form.ts";
import { indexableFields, refName } from "./schema_indexes.ts";

/** The editor of one index. */
function IndexEditor(props: {
  form: FormState;
  idx: IndexState;
  n: number;
  error?: string;
  onChange: (next: IndexState) => void;
  onRemove: () => void;
}): JSX.Element {
  const { form, idx, n } = props;
  const set = (p: Partial<IndexState>) => props.onChange({ ...idx, ...p });
  const names = idx.fields.map((ref) => refName(form, ref));
  const choices = indexableFields(form).filter((c) =>
    !idx.fields.includes(c.ref)
  );
  const moveUp = (j: number) => {
    const next = [...idx.fields];
    [next[j - 1], next[j]] = [next[j], next[j - 1]];
    set({ fields: next });
  };
  const title = names.every((x) => x !== undefined) && names.length > 0
    ? names.join(", ")
    : "new index";
  return (
    <fieldset class="index-panel" data-key={idx.key}>
      <legend>
        <span class="field-n">#{n}</span> {title}
        {idx.unique && <span class="badge">unique</span>}
      </legend>
      <div
        class={`field chip-field ${props.error ? "invalid" : ""}`}
        role="group"
        aria-labelledby={`${idx.key}-fl`}
      >
        <span class="field-label" id={`${idx.key}-fl`}>
          Fields of index #{n}, in order
        </span>
        {idx.fields.length > 0
          ? (
            <ol class="chips">
              {idx.fields.map((ref, j) => {
                const name = names[j] ?? "(removed field)";
                return (
                  <li key={ref} class="chip">
                    <span class="chip-text">{j + 1}. {name}</span>
                    {j > 0 && (
                      <button
                        type="button"
                        class="chip-x"
                        aria-label={`Move ${name} up in index #${n}`}
                        onClick={() => moveUp(j)}
                      >
                        ↑
                      </button>
                    )}
                    <button
                      type="button"
                      class="chip-x"
                      aria-label={`Remove ${name} from index #${n}`}
                      onClick={() =>
                        set({ fields: idx.fields.filter((_, k) => k !== j) })}
                    >
                      ×
                    </button>
                  </li>
                );
              })}
            </ol>
          )
          : <span class="muted">No fields yet.</span>}
        <div class="row wrap">
          <select
            aria-label={`Add a field to index #${n}`}
            value=""
            disabled={choices.length === 0 || idx.fields.length >= 8}
            onChange={(e) => {
              const ref = e.currentTarget.value;
              if (ref) set({ fields: [...idx.fields, ref] });
            }}
          >
            <option value="">Add a field…</option>
            {choices.map((c) => (
              <option key={c.ref} value={c.ref}>{c.name}</option>
            ))}
          </select>
          <label class="check">
            <input
              type="checkbox"
              checked={idx.unique}
              onChange={(e) => set({ unique: e.currentTarget.checked })}
            />
            <span>Unique</span>
          </label>
          <button
            type="button"
            class="btn btn-small remove-field"
            aria-label={`Remove index #${n}`}
            onClick={props.onRemove}
          >
            Remove index
          </button>
        </div>
        {props.error && (
          <small class="error-text" role="alert">{props.error}</small>
        )}
      </div>
    </fieldset>
  );
}

/** Indexes of a base or auth entity. */
export function IndexesSection(props: {
  form: FormState;
  errors: FormErrors;
  onIndexes: (indexes: IndexState[]) => void;
}): JSX.Element {
  const { form } = props;
  const [focusKey, setFocusKey] = useState("");
  useEffect(() => {
    if (!focusKey) return;
    document.querySelector<HTMLSelectElement>(
      `[data-key="${focusKey}"] select`,
    )?.focus();
    setFocusKey("");
  }, [focusKey]);
  const add = () => {
    const idx = newIndex();
    props.onIndexes([...form.indexes, idx]);
    setFocusKey(idx.key);
  };
  return (
    <section class="card stack" aria-labelledby="indexes-h">
      <h2 id="indexes-h">Indexes</h2>
      <p class="muted small">
        An index over several fields serves a filter on its first fields
        together with a sort on the next one (fields <code>tag, n</code>:{" "}
        <code>tag == "a"</code> sorted by{" "}
        <code>n</code>). Unique: no two records may have the same values in all
        its fields.
      </p>
      {props.errors.indexes && (
        <p class="error-text" role="alert">{props.errors.indexes}</p>
      )}
      {form.indexes.length === 0 && (
        <p class="muted">No indexes over several fields.</p>
      )}
      {form.indexes.map((idx, i) => (
        <IndexEditor
          key={idx.key}
          form={form}
          idx={idx}
          n={i + 1}
          error={props.errors[`${idx.key}.fields`] ??
            props.errors[`${idx.key}.unique`] ??
            props.errors[idx.key]}
          onChange={(next) =>
            props.onIndexes(
              form.indexes.map((x, j) => (j === i ? next : x)),
            )}
          onRemove={() =>
            props.onIndexes(form.indexes.filter((_, j) => j !== i))}
        />
      ))}
      <div>
        <button type="button" class="btn" onClick={add}>
          + Add index
        </button>
      </div>
    </section>
  );
}
