/// <reference lib="dom" />
/**
 * A `select` field's drop-down of its values.
 *
 * @module
 */

import type { JSX } from "preact";
import type { FieldDef } from "../../schemas.ts";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";

/** The drop-down; "" is no value. */
export function SelectInput(
  props: InputProps<string> & { field: FieldDef },
): JSX.Element {
  const values = props.field.values ?? [];
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={props.error}
    >
      <select
        id={props.id}
        value={props.value}
        required={props.required}
        disabled={props.disabled}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(props.id, false, props.error)}
        onChange={(e) => props.onChange(e.currentTarget.value)}
      >
        <option value="">— none —</option>
        {values.map((v) => <option key={v} value={v}>{v}</option>)}
      </select>
    </FieldBox>
  );
}
