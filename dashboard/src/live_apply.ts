/**
 * How live changes of an entity's records land on the page of the records
 * table (pure: no DOM, no requests). Rows shown are updated in place, rows
 * deleted (or no longer matching the filter) are marked gone for the table
 * to fade out, and new records are inserted only where nothing moves under
 * the reader: at their place in the API order (id ascending, the default
 * sort) on a page with room. Every other record that joins the view waits
 * behind a "N new records — Show" notice.
 *
 * @module
 */

import type { Page, RecordData } from "./api.ts";

/** What happened to a record. */
export type LiveAction = "create" | "update" | "delete";

/** One change of a record, as the realtime stream sends it. */
export interface LiveChange {
  action: LiveAction;
  entity: string;
  id: string;
  /** The record as a GET returns it (for a delete: as it was). */
  record: RecordData;
  timestamp: string;
}

/** Whether a record matches the table's filter and search. */
export type Verdict = "match" | "nomatch" | "unknown";

/** How a row is shown for a while after a change. */
export type Mark = "new" | "changed" | "gone";

/** Why a record waits behind the notice. */
export type Waiting = "new" | "changed";

/** The table's view, as far as live changes care. */
export interface LiveView {
  /** No filter and no search: every record is in the view. */
  plain: boolean;
  /** No `sort`: the API order, id ascending (ids are time-ordered). */
  defaultSort: boolean;
  /** Page size. */
  size: number;
  /** 1-based page number. */
  number: number;
}

/** What a batch of changes does to the page. */
export interface Outcome {
  page: Page<RecordData>;
  /** Marks to show (rows new, changed or gone). */
  marks: Map<string, Mark>;
  /** Records behind the notice (the previous ones, updated). */
  waiting: Map<string, Waiting>;
  /** Change of the total, or null when it cannot be known. */
  total: number | null;
}

/** True when `next` is not older than `shown` (by `updated`). */
function notOlder(shown: RecordData, next: RecordData): boolean {
  const a = shown.updated, b = next.updated;
  return typeof a !== "string" || typeof b !== "string" || b >= a;
}

/** Where a new record goes in id order (first row with a greater id). */
function idPosition(items: RecordData[], id: string): number {
  const i = items.findIndex((r) => r.id > id);
  return i < 0 ? items.length : i;
}

/**
 * Applies changes in order. `verdict` tells whether a created or updated
 * record is in the view (a plain view: always); `gone` lists rows already
 * fading out (they keep their place until removed).
 */
export function applyChanges(
  start: Page<RecordData>,
  changes: readonly LiveChange[],
  view: LiveView,
  verdict: (id: string) => Verdict,
  waitingBefore: ReadonlyMap<string, Waiting>,
  gone: ReadonlySet<string> = new Set(),
): Outcome {
  let items = start.items;
  const marks = new Map<string, Mark>();
  const waiting = new Map(waitingBefore);
  let total: number | null = 0;
  const moveTotal = (d: number | null) => {
    total = total === null || d === null ? null : total + d;
  };
  const isGone = (id: string) => gone.has(id) || marks.get(id) === "gone";
  const fade = (id: string) => {
    marks.set(id, "gone");
    waiting.delete(id);
  };
  for (const c of changes) {
    const at = items.findIndex((r) => r.id === c.id);
    const shown = at >= 0 && !isGone(c.id);
    if (c.action === "delete") {
      if (shown) fade(c.id);
      const was = waiting.get(c.id);
      waiting.delete(c.id);
      // A plain view lost one; a filtered one if the row was in it.
      moveTotal(view.plain || shown || was === "new" ? -1 : null);
      continue;
    }
    const v = view.plain ? "match" : verdict(c.id);
    if (shown) {
      if (v === "nomatch") {
        fade(c.id);
        moveTotal(-1);
      } else if (v === "unknown") {
        waiting.set(c.id, "changed");
        moveTotal(null);
      } else if (notOlder(items[at], c.record)) {
        if (JSON.stringify(items[at]) !== JSON.stringify(c.record)) {
          items = items.with(at, c.record);
          marks.set(c.id, "changed");
        }
      }
      continue;
    }
    if (at >= 0) continue; // fading out: it stays gone
    if (v === "nomatch") {
      // It may have left the view from another page, or the notice.
      if (waiting.delete(c.id) || c.action === "update") moveTotal(null);
      continue;
    }
    if (c.action === "update") {
      // Elsewhere in a plain view; in a filtered one it may have joined.
      if (!view.plain) {
        if (!waiting.has(c.id)) waiting.set(c.id, "changed");
        moveTotal(null);
      }
      continue;
    }
    if (waiting.has(c.id)) continue;
    moveTotal(v === "match" ? 1 : null);
    if (v === "match" && view.defaultSort) {
      const pos = idPosition(items, c.id);
      // Before this page, or after it on a later one: not on this page.
      if (view.number > 1 && pos === 0) waiting.set(c.id, "new");
      else if (pos === items.length && start.has_more) continue;
      else if (items.length < view.size) {
        items = items.toSpliced(pos, 0, c.record);
        marks.set(c.id, "new");
      } else waiting.set(c.id, "new");
      continue;
    }
    waiting.set(c.id, "new");
  }
  const page = items === start.items
    ? start
    : { ...start, items, items_count: items.length };
  return { page, marks, waiting, total };
}

/** The page without the rows of `ids` (faded out). */
export function withoutRows(
  page: Page<RecordData>,
  ids: ReadonlySet<string>,
): Page<RecordData> {
  const items = page.items.filter((r) => !ids.has(r.id));
  if (items.length === page.items.length) return page;
  return { ...page, items, items_count: items.length };
}

/** The notice's words: "2 new records · 1 changed record". */
export function waitingText(waiting: ReadonlyMap<string, Waiting>): string {
  let created = 0, changed = 0;
  for (const w of waiting.values()) w === "new" ? created++ : changed++;
  const n = (k: number, what: string) =>
    `${k} ${what} record${k === 1 ? "" : "s"}`;
  return [
    created > 0 ? n(created, "new") : "",
    changed > 0 ? n(changed, "changed") : "",
  ].filter(Boolean).join(" · ");
}
