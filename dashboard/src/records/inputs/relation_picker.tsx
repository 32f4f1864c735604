/// <reference lib="dom" />
/**
 * A `relation` field's picker: a combobox (record_combo.tsx) that searches
 * the target entity's records by their display field (the first string
 * field) as the admin types; the chosen record below it as a link.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, type RecordData } from "../../mb.ts";
import { displayField } from "../records_query.ts";
import { type FieldDef, schemaOf } from "../../schemas.ts";
import { isCallerDefault } from "../record_form.ts";
import { recordHref } from "../record_table.tsx";
import { FieldBox, type InputProps } from "./field_box.tsx";
import { labelOf } from "./relation_search.ts";
import { RecordComboInput, useRecordCombo } from "./record_combo.tsx";

/** The picker; its value is the target record's id ("" for none). */
export function RelationPicker(
  props: InputProps<string> & { field: FieldDef },
): JSX.Element {
  const target = props.field.foreign_key?.entity ?? "";
  const display = displayField(schemaOf(target));
  const [chosen, setChosen] = useState("");
  const combo = useRecordCombo(target, display);
  // The label of the current value.
  useEffect(() => {
    if (!props.value) {
      setChosen("");
      return;
    }
    mb.entity(target).get(props.value)
      .then((r) => setChosen(labelOf(r, display)))
      .catch(() => setChosen(props.value));
  }, [props.value, target]);
  const pick = (r: RecordData) => {
    props.onChange(r.id);
    setChosen(labelOf(r, display));
    combo.picked();
  };
  const fieldError = props.error || combo.error;
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={fieldError}
      hint={`Search ${target} by ${display}${
        isCallerDefault(props.field)
          ? `. Left empty on a new record, it becomes the ${target} user who creates it (an admin's stays empty)`
          : ""
      }`}
      class="relation-field"
    >
      <RecordComboInput
        id={props.id}
        combo={combo}
        onPick={pick}
        canOpen
        required={!!props.required && !props.value}
        disabled={!!props.disabled}
        placeholder={props.value ? chosen : `Search ${target}…`}
        fieldError={fieldError}
      />
      {props.value && (
        <div class="row wrap chosen">
          <span>
            Selected:{" "}
            <a href={recordHref(target, props.value)}>
              {chosen || props.value}
            </a>
          </span>
          {!props.disabled && (
            <button
              type="button"
              class="btn btn-small btn-ghost"
              onClick={() => props.onChange("")}
            >
              Clear {props.label}
            </button>
          )}
        </div>
      )}
    </FieldBox>
  );
}
