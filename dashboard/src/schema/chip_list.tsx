/// <reference lib="dom" />
/**
 * A list of short strings as removable chips plus an input to add one
 * (Enter or the Add button): select values, MIME types.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";

/** Chips with add/remove; `label` names the list ("Values"). */
export function ChipList(props: {
  label: string;
  /** What one entry is called ("value", "MIME type"). */
  item: string;
  items: string[];
  onChange: (items: string[]) => void;
  error?: string;
  hint?: string;
  /** Suggestions for the add input (a datalist). */
  suggest?: string[];
  id: string;
}): JSX.Element {
  const [draft, setDraft] = useState("");
  const [local, setLocal] = useState("");
  const add = () => {
    const v = draft.trim();
    if (!v) return;
    if (props.items.includes(v)) {
      setLocal(`"${v}" is already in the list`);
      return;
    }
    setLocal("");
    props.onChange([...props.items, v]);
    setDraft("");
  };
  const error = local || props.error;
  return (
    <div
      class={`field chip-field ${error ? "invalid" : ""}`}
      role="group"
      aria-labelledby={`${props.id}-l`}
    >
      <span class="field-label" id={`${props.id}-l`}>{props.label}</span>
      {props.items.length > 0
        ? (
          <ul class="chips">
            {props.items.map((v) => (
              <li key={v} class="chip">
                <span class="chip-text">{v}</span>
                <button
                  type="button"
                  class="chip-x"
                  aria-label={`Remove ${props.item} ${v}`}
                  onClick={() =>
                    props.onChange(props.items.filter((x) => x !== v))}
                >
                  ×
                </button>
              </li>
            ))}
          </ul>
        )
        : <span class="muted">None yet.</span>}
      <div class="row">
        <input
          type="text"
          value={draft}
          aria-label={`New ${props.item}`}
          placeholder={`Add ${props.item}`}
          list={props.suggest ? `${props.id}-s` : undefined}
          onInput={(e) => setDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") {
              e.preventDefault();
              add();
            }
          }}
        />
        <button type="button" class="btn btn-small" onClick={add}>
          Add {props.item}
        </button>
      </div>
      {props.suggest && (
        <datalist id={`${props.id}-s`}>
          {props.suggest.map((s) => <option key={s} value={s} />)}
        </datalist>
      )}
      {props.hint && <small class="hint">{props.hint}</small>}
      {error && <small class="error-text" role="alert">{error}</small>}
    </div>
  );
}
