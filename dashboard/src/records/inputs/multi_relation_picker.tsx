/// <reference lib="dom" />
/**
 * A multiple relation's picker (`"multiple": true`: a list of ids): the
 * chosen records as chips, in the list's order, each a link with a remove
 * button, and a combobox that searches the target entity (as the single
 * relation picker does) and adds the picked record at the end. Records
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
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";
import { labelOf, searchRecords } from "./relation_search.ts";

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
  const [text, setText] = useState("");
  const [open, setOpen] = useState(false);
  const [options, setOptions] = useState<RecordData[]>([]);
  const [active, setActive] = useState(-1);
  const [error, setError] = useState("");
  const [said, setSaid] = useState("");
  const input = useRef<HTMLInputElement>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const listId = `${props.id}-list`;
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
  const offered = options.filter((r) => !ids.includes(r.id));
  const search = (q: string) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      searchRecords(target, display, q).then((items) => {
        setOptions(items);
        setActive(items.some((r) => !ids.includes(r.id)) ? 0 : -1);
        setError("");
      }).catch((e) => setError((e as Error).message));
    }, 200);
  };
  const add = (r: RecordData) => {
    if (ids.includes(r.id) || full) return;
    const label = labelOf(r, display);
    setLabels((old) => new Map(old).set(r.id, label));
    props.onChange([...ids, r.id]);
    setSaid(`Added ${label}`);
    setText("");
    setOpen(false);
    setActive(-1);
  };
  const remove = (id: string) => {
    props.onChange(ids.filter((x) => x !== id));
    setSaid(`Removed ${labels.get(id) ?? id}`);
    input.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        search(text);
        return;
      }
      const n = offered.length;
      if (n === 0) return;
      setActive((active + (e.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (e.key === "Enter" && open && active >= 0 && offered[active]) {
      e.preventDefault();
      add(offered[active]);
    } else if (e.key === "Escape" && open) {
      e.preventDefault();
      setOpen(false);
    }
  };
  const shown = open && !full && (offered.length > 0 || error !== "");
  const fieldError = props.error || error;
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
      <div class="combo">
        <input
          id={props.id}
          ref={input}
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
          required={props.required && ids.length === 0}
          disabled={props.disabled || full}
          placeholder={full ? `Full: at most ${max}` : `Add ${target}…`}
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
          {offered.map((r, i) => (
            <li
              key={r.id}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault();
                add(r);
              }}
            >
              {labelOf(r, display)}{" "}
              <span class="muted mono">…{r.id.slice(-8)}</span>
            </li>
          ))}
        </ul>
      </div>
      <span class="sr-only" aria-live="polite">{said}</span>
    </FieldBox>
  );
}
