/// <reference lib="dom" />
/**
 * A `bool` field's checkbox.
 *
 * @module
 */

import type { JSX } from "preact";
import type { InputProps } from "./field_box.tsx";

/** A checkbox with its label on the right and the error below. */
export function ToggleInput(props: InputProps<boolean>): JSX.Element {
  return (
    <div class={`field toggle-field ${props.error ? "invalid" : ""}`}>
      <label class="field inline" for={props.id}>
        <input
          id={props.id}
          type="checkbox"
          checked={props.value}
          disabled={props.disabled}
          aria-invalid={props.error ? "true" : undefined}
          aria-describedby={props.error ? `${props.id}-error` : undefined}
          onChange={(e) => props.onChange(e.currentTarget.checked)}
        />
        <span class="field-label">{props.label}</span>
      </label>
      {props.error && (
        <small id={`${props.id}-error`} class="error-text" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}
