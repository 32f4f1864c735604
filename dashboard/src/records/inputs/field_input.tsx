/// <reference lib="dom" />
/**
 * The input of one record field, chosen by its type.
 *
 * @module
 */

import type { JSX } from "preact";
import type { FormValue } from "../record_form.ts";
import type { FieldDef } from "../../schemas.ts";
import { DateTimeInput } from "./datetime_input.tsx";
import { FileInput, type FileState } from "./file_input.tsx";
import { JsonInput } from "./json_input.tsx";
import { NumberInput } from "./number_input.tsx";
import { RelationPicker } from "./relation_picker.tsx";
import { MultiRelationPicker } from "./multi_relation_picker.tsx";
import { SelectInput } from "./select_input.tsx";
import { TextInput } from "./text_input.tsx";
import { ToggleInput } from "./toggle_input.tsx";

/** One field's input. */
export function FieldInput(props: {
  field: FieldDef;
  entity: string;
  token: string;
  value: FormValue;
  onChange: (v: FormValue) => void;
  error?: string;
  disabled?: boolean;
}): JSX.Element {
  const f = props.field;
  const common = {
    id: `field-${f.name}`,
    label: f.name,
    required: f.required && f.type !== "bool",
    disabled: props.disabled,
    error: props.error,
  };
  const str = typeof props.value === "string" ? props.value : "";
  const set = (v: FormValue) => props.onChange(v);
  switch (f.type) {
    case "bool":
      return (
        <ToggleInput {...common} value={props.value === true} onChange={set} />
      );
    case "int":
    case "double":
      return <NumberInput {...common} field={f} value={str} onChange={set} />;
    case "date":
      return <DateTimeInput {...common} value={str} onChange={set} />;
    case "json":
      return <JsonInput {...common} value={str} onChange={set} />;
    case "select":
      return <SelectInput {...common} field={f} value={str} onChange={set} />;
    case "relation":
      if (f.multiple) {
        return (
          <MultiRelationPicker
            {...common}
            field={f}
            value={Array.isArray(props.value) ? props.value : []}
            onChange={set}
          />
        );
      }
      return (
        <RelationPicker
          {...common}
          field={f}
          value={str}
          onChange={set}
        />
      );
    case "file":
    case "files":
      return (
        <FileInput
          {...common}
          field={f}
          entity={props.entity}
          token={props.token}
          value={props.value as FileState}
          onChange={set}
        />
      );
    default:
      return <TextInput {...common} field={f} value={str} onChange={set} />;
  }
}
