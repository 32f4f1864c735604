/// <reference lib="dom" />
/**
 * Keyset paging controls: page size, Previous / Next, and a total fetched
 * on demand ("Count", where the page gives `onCount`).
 *
 * @module
 */

import type { JSX } from "preact";
import { PAGE_SIZES } from "./records_query.ts";

/** The pager under a table. */
export function Pager(props: {
  size: number;
  onSize: (n: number) => void;
  page: number;
  shown: number;
  /** Words after the page number instead of "N records" (e.g. files). */
  summary?: string;
  hasPrev: boolean;
  hasNext: boolean;
  onPrev: () => void;
  onNext: () => void;
  total: number | null;
  counting: boolean;
  onCount?: () => void;
  label?: string;
}): JSX.Element {
  return (
    <nav class="pager" aria-label={props.label ?? "Pages"}>
      <label class="field inline">
        <span>Per page</span>
        <select
          value={String(props.size)}
          onChange={(e) => props.onSize(Number(e.currentTarget.value))}
        >
          {PAGE_SIZES.map((n) => <option key={n} value={String(n)}>{n}
          </option>)}
        </select>
      </label>
      <button
        type="button"
        class="btn btn-small"
        disabled={!props.hasPrev}
        onClick={props.onPrev}
      >
        ← Previous
      </button>
      <span class="muted" aria-live="polite">
        Page {props.page} · {props.summary ??
          `${props.shown} record${props.shown === 1 ? "" : "s"}`}
        {props.total !== null && ` · ${props.total} in total`}
      </span>
      <button
        type="button"
        class="btn btn-small"
        disabled={!props.hasNext}
        onClick={props.onNext}
      >
        Next →
      </button>
      {props.onCount && (
        <button
          type="button"
          class="btn btn-small btn-ghost"
          disabled={props.counting}
          onClick={props.onCount}
        >
          {props.counting ? "Counting…" : "Count"}
        </button>
      )}
    </nav>
  );
}
