/// <reference lib="dom" />
/**
 * The logs filter form: level (exact), minimum level, type, search text,
 * a date range and the page size. Nothing applies until the form is
 * submitted (Enter in any field, or "Apply"); the page keeps the applied
 * values in the URL query.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { Field } from "../ui/field.tsx";
import { fromLocalInput, LEVELS, toLocalInput } from "./log_format.tsx";

/** The applied filters, as URL query / API parameters ("" = not set). */
export interface LogFilters {
  level: string;
  min_level: string;
  type: string;
  search: string;
  start_date: string;
  end_date: string;
  limit: string;
}

/** The filter keys, in URL order. */
export const FILTER_KEYS: (keyof LogFilters)[] = [
  "level",
  "min_level",
  "type",
  "search",
  "start_date",
  "end_date",
  "limit",
];

/** Page sizes offered. */
export const PAGE_SIZES = ["20", "50", "100", "200"];

/** The filters of a URL query. */
export function filtersOf(q: URLSearchParams): LogFilters {
  const f = {} as LogFilters;
  for (const k of FILTER_KEYS) f[k] = q.get(k) ?? "";
  return f;
}

/** The form; `onApply` gets the new filters. */
export function LogFiltersForm(props: {
  value: LogFilters;
  onApply: (f: LogFilters) => void;
}): JSX.Element {
  const v = props.value;
  const [level, setLevel] = useState(v.level);
  const [minLevel, setMinLevel] = useState(v.min_level);
  const [type, setType] = useState(v.type);
  const [search, setSearch] = useState(v.search);
  const [start, setStart] = useState(toLocalInput(v.start_date));
  const [end, setEnd] = useState(toLocalInput(v.end_date));
  const [limit, setLimit] = useState(v.limit || "50");
  const [error, setError] = useState("");
  const submit = (e: Event) => {
    e.preventDefault();
    const s = fromLocalInput(start), en = fromLocalInput(end);
    if (s && en && s >= en) {
      setError("The start must be before the end.");
      return;
    }
    setError("");
    props.onApply({
      level,
      min_level: minLevel,
      type,
      search: search.trim(),
      start_date: s,
      end_date: en,
      limit: limit === "50" ? "" : limit,
    });
  };
  const levelOptions = (any: string) => (
    <>
      <option value="">{any}</option>
      {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
    </>
  );
  return (
    <form class="card log-filters" onSubmit={submit} aria-label="Filter logs">
      <div class="log-filter-grid">
        <Field label="Search logs" class="log-search">
          <input
            type="search"
            name="search"
            maxLength={200}
            value={search}
            placeholder="message or path"
            onInput={(e) =>
              setSearch(e.currentTarget.value)}
          />
        </Field>
        <Field label="Level">
          <select
            name="level"
            value={level}
            onChange={(e) =>
              setLevel(e.currentTarget.value)}
          >
            {levelOptions("any")}
          </select>
        </Field>
        <Field label="Minimum level">
          <select
            name="min_level"
            value={minLevel}
            onChange={(e) =>
              setMinLevel(e.currentTarget.value)}
          >
            {levelOptions("none")}
          </select>
        </Field>
        <Field label="Type">
          <select
            name="type"
            value={type}
            onChange={(e) => setType(e.currentTarget.value)}
          >
            <option value="">any</option>
            <option value="request">request</option>
            <option value="app">app</option>
          </select>
        </Field>
        <Field label="From" error={error} class="log-date">
          <input
            type="datetime-local"
            name="start_date"
            step={1}
            value={start}
            onInput={(e) => setStart(e.currentTarget.value)}
          />
        </Field>
        <Field label="To" class="log-date">
          <input
            type="datetime-local"
            name="end_date"
            step={1}
            value={end}
            onInput={(e) => setEnd(e.currentTarget.value)}
          />
        </Field>
        <Field label="Page size">
          <select
            name="limit"
            value={limit}
            onChange={(e) => setLimit(e.currentTarget.value)}
          >
            {PAGE_SIZES.map((n) => <option key={n} value={n}>{n}</option>)}
          </select>
        </Field>
      </div>
      <div class="row wrap log-filter-actions">
        <button type="submit" class="btn btn-primary">Apply filters</button>
        <button
          type="button"
          class="btn"
          onClick={() => {
            for (const set of [setLevel, setMinLevel, setType, setSearch]) {
              set("");
            }
            setStart("");
            setEnd("");
            setError("");
            props.onApply({
              level: "",
              min_level: "",
              type: "",
              search: "",
              start_date: "",
              end_date: "",
              limit: v.limit,
            });
          }}
        >
          Clear
        </button>
        <small class="muted">Times are in your local time zone.</small>
      </div>
    </form>
  );
}
