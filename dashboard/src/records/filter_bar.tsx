/// <reference lib="dom" />
/**
 * The records table's filter box (the filter language; Enter runs it) and
 * quick search, with a filter error shown under the box and the place it
 * points at highlighted.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";

/** A filter that the API refused, with where (-1 when unknown). */
export interface FilterError {
  message: string;
  position: number;
  end: number;
}

function Highlighted(props: { text: string; err: FilterError }): JSX.Element {
  const { text, err } = props;
  const at = Math.min(Math.max(err.position, 0), text.length);
  const end = Math.min(Math.max(err.end, at + 1), text.length);
  return (
    <code class="filter-echo" aria-hidden="true">
      {text.slice(0, at)}
      <mark>{at < text.length ? text.slice(at, end) : " "}</mark>
      {text.slice(end)}
    </code>
  );
}

/** Filter and search inputs; `onRun` gets both when the form is sent. */
export function FilterBar(props: {
  filter: string;
  q: string;
  error: FilterError | null;
  onRun: (filter: string, q: string) => void;
  hasText: boolean;
  /** The entity has searchable fields: the box is a full-text search. */
  searchable: boolean;
  /** An example over the entity's own fields (the placeholder). */
  example: string;
}): JSX.Element {
  const [filter, setFilter] = useState(props.filter);
  const [q, setQ] = useState(props.q);
  useEffect(() => setFilter(props.filter), [props.filter]);
  useEffect(() => setQ(props.q), [props.q]);
  const err = props.error;
  return (
    <form
      class="filter-bar"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        props.onRun(filter, q);
      }}
    >
      <label class={`field filter-field ${err ? "invalid" : ""}`}>
        <span class="field-label">Filter</span>
        <input
          type="text"
          class="mono"
          value={filter}
          placeholder={props.example}
          spellcheck={false}
          autocomplete="off"
          aria-invalid={err ? "true" : undefined}
          aria-describedby={err ? "filter-error" : "filter-hint"}
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
        {!err && (
          <small id="filter-hint" class="hint">
            Press Enter to run. Same language as the rules, with bare field
            names.
          </small>
        )}
      </label>
      {props.hasText && (
        <label class="field search-field">
          <span class="field-label">Search records</span>
          <input
            type="search"
            value={q}
            placeholder={props.searchable
              ? "Words in the searchable fields"
              : "Text in any text field"}
            title={props.searchable
              ? "Finds records whose searchable fields have every word (the last one may be the start of a word), in any case and with any accents, best matches first"
              : "Finds records whose text fields contain this text, in any case and with any accents"}
            onInput={(e) => setQ(e.currentTarget.value)}
          />
        </label>
      )}
      <button type="submit" class="btn">Apply</button>
      {err && (
        <div id="filter-error" class="filter-error" role="alert">
          <p class="error-text">
            {err.message}
            {err.position >= 0 && (err.position < props.filter.length
              ? ` — at character ${err.position + 1}`
              : " — at the end")}
          </p>
          {err.position >= 0 && props.filter && (
            <Highlighted text={props.filter} err={err} />
          )}
        </div>
      )}
    </form>
  );
}
