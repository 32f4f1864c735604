/// <reference lib="dom" />
/**
 * Number inputs: `int` (step 1) and `double` (any step), with the
 * field's bounds.
 *
 * @module
 */

import type { JSX } from "preact";
import type { FieldDef } from "../../schemas.ts";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";

/** A number field's input (its value is the input's text). */
export function NumberInput(
  props: InputProps<string> & { field: FieldDef },
): JSX.Element {
  const f = props.field;
  const hint = f.min !== undefined && f.max !== undefined
    ? `From ${f.min} to ${f.max}`
    : f.min !== undefined
    ? `At least ${f.min}`
    : f.max !== undefined
    ? `At most ${f.max}`
    : f.type === "int"
    ? "A whole number"
    : "";
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={props.error}
      hint={hint}
    >
      <input
        id={props.id}
        type="number"
        inputMode={f.type === "int" ? "numeric" : "decimal"}
        step={f.type === "int" ? "1" : "any"}
        min={f.min}
        max={f.max}
        value={props.value}
        required={props.required}
        disabled={props.disabled}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(props.id, !!hint, props.error)}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
    </FieldBox>
  );
}
