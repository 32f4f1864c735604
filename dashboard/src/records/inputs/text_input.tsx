/// <reference lib="dom" />
/**
 * Text inputs: `string`, `email`, `url` (one line) and `text` (a textarea).
 *
 * @module
 */

import type { JSX } from "preact";
import type { FieldDef } from "../../schemas.ts";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";

/** A text field's input. */
export function TextInput(
  props: InputProps<string> & { field: FieldDef },
): JSX.Element {
  const f = props.field;
  const hint = f.pattern
    ? `Must match ${f.pattern}`
    : f.min !== undefined && f.max !== undefined
    ? `${f.min}–${f.max} characters`
    : f.min !== undefined
    ? `At least ${f.min} characters`
    : f.max !== undefined
    ? `At most ${f.max} characters`
    : "";
  const common = {
    id: props.id,
    value: props.value,
    required: props.required,
    disabled: props.disabled,
    minLength: f.min,
    maxLength: f.max,
    "aria-invalid": props.error ? "true" as const : undefined,
    "aria-describedby": describedBy(props.id, !!hint, props.error),
  };
  const onInput = (e: Event) =>
    props.onChange((e.currentTarget as HTMLInputElement).value);
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={props.error}
      hint={hint}
      class={f.type === "text" ? "wide" : ""}
    >
      {f.type === "text"
        ? (
          <textarea
            {...common}
            class="text-area"
            onInput={(e) => props.onChange(e.currentTarget.value)}
          />
        )
        : f.type === "email"
        ? <input {...common} type="email" onInput={onInput} />
        : f.type === "url"
        ? <input {...common} type="url" onInput={onInput} />
        : <input {...common} type="text" onInput={onInput} />}
    </FieldBox>
  );
}
