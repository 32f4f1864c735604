/// <reference lib="dom" />
/**
 * A multiple relation's picker (`"multiple": true`: a list of ids): the
 * chosen records as chips, in the list's order, each a link with a remove
 * button, and a combobox that searches the target entity (record_combo.tsx,
 * as the single relation picker) and adds the picked record at the end. Records
 * already chosen are not offered again; at `max` the search is disabled
 * until one is removed. Labels of the chosen ids come in one list request.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { RecordData } from "../../mb.ts";
import { displayField } from "../records_query.ts";
import { type FieldDef, schemaOf } from "../../schemas.ts";
import { isCallerDefault } from "../record_form.ts";
import { recordHref } from "../record_table.tsx";
import { labelsFor } from "../relation_labels.ts";
import { FieldBox, type InputProps } from "./field_box.tsx";
import { labelOf } from "./relation_search.ts";
import { RecordComboInput, useRecordCombo } from "./record_combo.tsx";

/** The most ids a multiple relation holds without a `max` (the API's). */
export const MULTIPLE_MAX = 1000;

/** The picker; its value is the list of target ids, in order. */
export function MultiRelationPicker(
  props: InputProps<string[]> & { field: FieldDef },
): JSX.Element {
  const target = props.field.foreign_key?.entity ?? "";
  const display = displayField(schemaOf(target));
  const max = props.field.max ?? MULTIPLE_MAX;
  const ids = props.value;
  const full = ids.length >= max;
  const [labels, setLabels] = useState<Map<string, string>>(new Map());
  const [said, setSaid] = useState("");
  const input = useRef<HTMLInputElement>(null);
  const combo = useRecordCombo(target, display, ids);
  // Labels of chosen ids not labelled yet (a record's own list, on load).
  const missing = ids.filter((id) => !labels.has(id));
  useEffect(() => {
    if (missing.length === 0) return;
    const ac = new AbortController();
    labelsFor(target, missing, ac.signal).then((found) => {
      setLabels((old) => {
        const next = new Map(old);
        // An id without a label (none, or hidden) shows as itself.
        for (const id of missing) next.set(id, found.get(id) ?? id);
        return next;
      });
    }).catch(() => {
      // Labels are a nicety: the chips show ids.
    });
    return () => ac.abort();
  }, [missing.join(","), target]);
  const add = (r: RecordData) => {
    if (ids.includes(r.id) || full) return;
    const label = labelOf(r, display);
    setLabels((old) => new Map(old).set(r.id, label));
    props.onChange([...ids, r.id]);
    setSaid(`Added ${label}`);
    combo.picked();
  };
  const remove = (id: string) => {
    props.onChange(ids.filter((x) => x !== id));
    setSaid(`Removed ${labels.get(id) ?? id}`);
    input.current?.focus();
  };
  const fieldError = props.error || combo.error;
  const caller = isCallerDefault(props.field)
    ? `. Left empty on a new record, it becomes the ${target} user who creates it`
    : "";
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={fieldError}
      hint={`Search ${target} by ${display}; picked records are added last (${ids.length} of at most ${max})${caller}`}
      class="relation-field multi-relation"
    >
      {ids.length > 0 && (
        <ul class="chips" aria-label={`${props.label}: chosen ${target}`}>
          {ids.map((id) => {
            const label = labels.get(id) ?? id;
            return (
              <li key={id} class="chip">
                <a
                  class={label === id ? "chip-text mono" : "chip-text"}
                  href={recordHref(target, id)}
                  title={`${target} ${id}`}
                >
                  {label === id && id.length > 12 ? "…" + id.slice(-8) : label}
                </a>
                {!props.disabled && (
                  <button
                    type="button"
                    class="chip-x"
                    aria-label={`Remove ${label} from ${props.label}`}
                    onClick={() => remove(id)}
                  >
                    ×
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      <RecordComboInput
        id={props.id}
        combo={combo}
        onPick={add}
        canOpen={!full}
        required={!!props.required && ids.length === 0}
        disabled={!!props.disabled || full}
        placeholder={full ? `Full: at most ${max}` : `Add ${target}…`}
        fieldError={fieldError}
        inputRef={input}
      />
      <span class="sr-only" aria-live="polite">{said}</span>
    </FieldBox>
  );
}
