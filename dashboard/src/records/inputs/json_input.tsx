/// <reference lib="dom" />
/**
 * A `json` field's editor: a textarea checked as the admin types, with the
 * parse error shown under it.
 *
 * @module
 */

import type { JSX } from "preact";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";

/** Why `text` is not JSON ("" when it is, or when it is empty). */
export function jsonError(text: string): string {
  if (text.trim() === "") return "";
  try {
    JSON.parse(text);
    return "";
  } catch (e) {
    return `Not valid JSON: ${(e as Error).message}`;
  }
}

/** The editor; its value is the JSON text. */
export function JsonInput(props: InputProps<string>): JSX.Element {
  const local = jsonError(props.value);
  const error = local || props.error;
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={error}
      hint={local ? "" : "Any JSON value; empty for none."}
      class="wide"
    >
      <textarea
        id={props.id}
        class="json-area"
        value={props.value}
        spellcheck={false}
        required={props.required}
        disabled={props.disabled}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={describedBy(props.id, !local, error)}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
    </FieldBox>
  );
}
