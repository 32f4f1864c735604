/// <reference lib="dom" />
/**
 * Form building blocks: a labelled field with its error, an error box for
 * a whole form, and a busy-aware submit button.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";

/** A label around a control, with a hint and an error below it. */
export function Field(props: {
  label: string;
  error?: string;
  hint?: ComponentChildren;
  children: ComponentChildren;
  class?: string;
}): JSX.Element {
  return (
    <label class={`field ${props.class ?? ""} ${props.error ? "invalid" : ""}`}>
      <span class="field-label">{props.label}</span>
      {props.children}
      {props.hint && <small class="hint">{props.hint}</small>}
      {props.error && (
        <small class="error-text" role="alert">{props.error}</small>
      )}
    </label>
  );
}

/** A form-level error ("" renders nothing). */
export function ErrorBox(props: { error?: string }): JSX.Element | null {
  if (!props.error) return null;
  return <p class="error-box" role="alert">{props.error}</p>;
}

/** A submit button that shows progress. */
export function Submit(props: {
  busy?: boolean;
  children: ComponentChildren;
  class?: string;
}): JSX.Element {
  return (
    <button
      type="submit"
      class={`btn btn-primary ${props.class ?? ""}`}
      disabled={props.busy}
      aria-busy={props.busy ? "true" : undefined}
    >
      {props.busy ? "Working…" : props.children}
    </button>
  );
}
