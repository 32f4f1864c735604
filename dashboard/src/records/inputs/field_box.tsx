/// <reference lib="dom" />
/**
 * The frame of one record input: a label tied to the control by `id`, a
 * required marker (the control itself carries `required`), a hint and the field's error from the API.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";

/** Props every record input takes. */
export interface InputProps<T> {
  id: string;
  label: string;
  value: T;
  onChange: (v: T) => void;
  required?: boolean;
  disabled?: boolean;
  error?: string;
}

/** `aria-describedby` of a control with a hint and/or an error. */
export function describedBy(
  id: string,
  hint: boolean,
  error?: string,
): string | undefined {
  const ids = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""]
    .filter(Boolean).join(" ");
  return ids || undefined;
}

/** Label, control, hint and error. */
export function FieldBox(props: {
  id: string;
  label: string;
  required?: boolean;
  error?: string;
  hint?: ComponentChildren;
  children: ComponentChildren;
  class?: string;
  /** Label element id instead of `for` (composite widgets). */
  labelId?: string;
}): JSX.Element {
  return (
    <div
      class={`field ${props.class ?? ""} ${props.error ? "invalid" : ""}`}
    >
      <label class="field-label" for={props.id} id={props.labelId}>
        {props.label}
        {props.required && (
          <span class="req" title="required" aria-hidden="true">*</span>
        )}
      </label>
      {props.children}
      {props.hint && (
        <small id={`${props.id}-hint`} class="hint">{props.hint}</small>
      )}
      {props.error && (
        <small id={`${props.id}-error`} class="error-text" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}
