/// <reference lib="dom" />
/**
 * A `date` field's picker (`datetime-local`, in the browser's time zone)
 * and the conversions to and from the API's UTC ISO strings.
 *
 * @module
 */

import type { JSX } from "preact";
import { describedBy, FieldBox, type InputProps } from "./field_box.tsx";

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `2024-05-01T10:00:00.000Z` → local `2024-05-01T12:00:00` ("" if none). */
export function isoToLocal(iso: unknown): string {
  if (typeof iso !== "string" || iso === "") return "";
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "";
  return `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${
    pad(d.getDate())
  }T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Local `2024-05-01T12:00` → UTC ISO (null for "" or a bad value). */
export function localToIso(local: string): string | null {
  if (!local) return null;
  // Without a zone, Date reads date-time text as local time.
  const d = new Date(local.length === 16 ? local + ":00" : local);
  return isNaN(d.getTime()) ? null : d.toISOString();
}

/** The picker; its value is the local date-time text. */
export function DateTimeInput(props: InputProps<string>): JSX.Element {
  const iso = localToIso(props.value);
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const hint = `Local time (${zone})${iso ? ` · stored as ${iso}` : ""}`;
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
        type="datetime-local"
        step="1"
        value={props.value}
        required={props.required}
        disabled={props.disabled}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(props.id, true, props.error)}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
    </FieldBox>
  );
}
