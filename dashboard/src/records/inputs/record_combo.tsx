/// <reference lib="dom" />
/**
 * The search box both relation pickers share: a combobox that searches the
 * target entity's records by their display field as the admin types (after
 * 200 ms of quiet); arrows move, Enter picks, Escape closes. `exclude`
 * holds ids not offered (a multiple relation's chosen records).
 *
 * `useRecordCombo` keeps the search's state; `RecordComboInput` draws the
 * input and its list of options from it.
 *
 * @module
 */

import type { JSX, Ref } from "preact";
import { useRef, useState } from "preact/hooks";
import type { RecordData } from "../../mb.ts";
import { describedBy } from "./field_box.tsx";
import { labelOf, searchRecords } from "./relation_search.ts";

/** The state of one record search box. */
export interface RecordCombo {
  target: string;
  display: string;
  text: string;
  open: boolean;
  /** The options found, less the excluded ids. */
  offered: RecordData[];
  active: number;
  /** The last search's error ("" when it worked). */
  error: string;
  /** Takes a picked record: empties the box and closes the list. */
  picked(): void;
}

/** The search state of a box over `target` (labels from `display`). */
export function useRecordCombo(
  target: string,
  display: string,
  exclude: readonly string[] = [],
): RecordCombo & {
  setText(text: string): void;
  setOpen(open: boolean): void;
  setActive(active: number): void;
  search(q: string): void;
} {
  const [text, setText] = useState("");
  const [open, setOpen] = useState(false);
  const [options, setOptions] = useState<RecordData[]>([]);
  const [active, setActive] = useState(-1);
  const [error, setError] = useState("");
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const search = (q: string) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      searchRecords(target, display, q).then((items) => {
        setOptions(items);
        setActive(items.some((r) => !exclude.includes(r.id)) ? 0 : -1);
        setError("");
      }).catch((e) => setError((e as Error).message));
    }, 200);
  };
  return {
    target,
    display,
    text,
    open,
    offered: options.filter((r) => !exclude.includes(r.id)),
    active,
    error,
    picked() {
      setText("");
      setOpen(false);
      setActive(-1);
    },
    setText,
    setOpen,
    setActive,
    search,
  };
}

/** What `RecordComboInput` draws. */
export interface RecordComboInputProps {
  id: string;
  combo: ReturnType<typeof useRecordCombo>;
  /** Called with the record the admin picked. */
  onPick(r: RecordData): void;
  /** The list may show (false: e.g. a multiple relation at its `max`). */
  canOpen: boolean;
  required: boolean;
  disabled: boolean;
  placeholder: string;
  /** The field's error (the FieldBox shows it; the input points to it). */
  fieldError: string;
  inputRef?: Ref<HTMLInputElement>;
}

/** The combobox input and its listbox of options. */
export function RecordComboInput(props: RecordComboInputProps): JSX.Element {
  const c = props.combo;
  const listId = `${props.id}-list`;
  const shown = c.open && props.canOpen &&
    (c.offered.length > 0 || c.error !== "");
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!c.open) {
        c.setOpen(true);
        c.search(c.text);
        return;
      }
      const n = c.offered.length;
      if (n === 0) return;
      c.setActive((c.active + (e.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (
      e.key === "Enter" && c.open && c.active >= 0 && c.offered[c.active]
    ) {
      e.preventDefault();
      props.onPick(c.offered[c.active]);
    } else if (e.key === "Escape" && c.open) {
      e.preventDefault();
      c.setOpen(false);
    }
  };
  return (
    <div class="combo">
      <input
        id={props.id}
        ref={props.inputRef}
        type="text"
        role="combobox"
        autocomplete="off"
        aria-autocomplete="list"
        aria-expanded={shown}
        aria-controls={listId}
        aria-activedescendant={shown && c.active >= 0
          ? `${listId}-${c.active}`
          : undefined}
        aria-describedby={describedBy(props.id, true, props.fieldError)}
        aria-invalid={props.fieldError ? "true" : undefined}
        required={props.required}
        disabled={props.disabled}
        placeholder={props.placeholder}
        value={c.text}
        onInput={(e) => {
          c.setText(e.currentTarget.value);
          c.setOpen(true);
          c.search(e.currentTarget.value);
        }}
        onFocus={() => {
          c.setOpen(true);
          c.search(c.text);
        }}
        onBlur={() => setTimeout(() => c.setOpen(false), 150)}
        onKeyDown={onKey}
      />
      <ul
        id={listId}
        role="listbox"
        aria-label={`${c.target} records`}
        class={shown ? "combo-list" : "combo-list hidden"}
      >
        {c.offered.map((r, i) => (
          <li
            key={r.id}
            id={`${listId}-${i}`}
            role="option"
            aria-selected={i === c.active}
            class={i === c.active ? "active" : ""}
            onMouseDown={(e) => {
              e.preventDefault();
              props.onPick(r);
            }}
          >
            {labelOf(r, c.display)}{" "}
            <span class="muted mono">…{r.id.slice(-8)}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
