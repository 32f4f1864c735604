/// <reference lib="dom" />
/**
 * A `relation` field's picker: a combobox that searches the target
 * entity's records by their display field (the first string field) as the
 * admin types; arrows move, Enter picks, Escape closes.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { mb, type RecordData } from "../../mb.ts";
import { displayField } from "../records_query.ts";
import { type FieldDef, schemaOf } from "../../schemas.ts";
import { isCallerDefault } from "../record_form.ts";
import { recordHref } from "../record_table.tsx";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";
import { labelOf, searchRecords } from "./relation_search.ts";

/** The picker; its value is the target record's id ("" for none). */
export function RelationPicker(
  props: InputProps<string> & { field: FieldDef },
): JSX.Element {
  const target = props.field.foreign_key?.entity ?? "";
  const display = displayField(schemaOf(target));
  const [text, setText] = useState("");
  const [chosen, setChosen] = useState("");
  const [open, setOpen] = useState(false);
  const [options, setOptions] = useState<RecordData[]>([]);
  const [active, setActive] = useState(-1);
  const [error, setError] = useState("");
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const listId = `${props.id}-list`;
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
  const search = (q: string) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      searchRecords(target, display, q).then((items) => {
        setOptions(items);
        setActive(items.length > 0 ? 0 : -1);
        setError("");
      }).catch((e) => setError((e as Error).message));
    }, 200);
  };
  const pick = (r: RecordData) => {
    props.onChange(r.id);
    setChosen(labelOf(r, display));
    setText("");
    setOpen(false);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        search(text);
        return;
      }
      const n = options.length;
      if (n === 0) return;
      setActive((active + (e.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (e.key === "Enter" && open && active >= 0 && options[active]) {
      e.preventDefault();
      pick(options[active]);
    } else if (e.key === "Escape" && open) {
      e.preventDefault();
      setOpen(false);
    }
  };
  const shown = open && (options.length > 0 || error !== "");
  const fieldError = props.error || error;
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
      <div class="combo">
        <input
          id={props.id}
          type="text"
          role="combobox"
          autocomplete="off"
          aria-autocomplete="list"
          aria-expanded={shown}
          aria-controls={listId}
          aria-activedescendant={shown && active >= 0
            ? `${listId}-${active}`
            : undefined}
          aria-describedby={describedBy(props.id, true, fieldError)}
          aria-invalid={fieldError ? "true" : undefined}
          required={props.required && !props.value}
          disabled={props.disabled}
          placeholder={props.value ? chosen : `Search ${target}…`}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            setOpen(true);
            search(e.currentTarget.value);
          }}
          onFocus={() => {
            setOpen(true);
            search(text);
          }}
          onBlur={() => setTimeout(() => setOpen(false), 150)}
          onKeyDown={onKey}
        />
        <ul
          id={listId}
          role="listbox"
          aria-label={`${target} records`}
          class={shown ? "combo-list" : "combo-list hidden"}
        >
          {options.map((r, i) => (
            <li
              key={r.id}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(r);
              }}
            >
              {labelOf(r, display)}{" "}
              <span class="muted mono">…{r.id.slice(-8)}</span>
            </li>
          ))}
        </ul>
      </div>
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
