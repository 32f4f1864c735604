/**
 * How live changes of an entity's records land on the page of the records
 * table (pure: no DOM, no requests). Rows shown are updated in place, rows
 * deleted (or no longer matching the filter) are marked gone for the table
 * to fade out, and new records are inserted only where nothing moves under
 * the reader: at their place in the default order (newest first) on a page
 * with room. Every other record that joins the view waits behind a notice
 * ("N new records — Show"), which also says when they are on another page
 * ("1 new record on page 1"): a new record is never silently left out.
 *
 * @module
 */

import type { Page, RecordData } from "../../mb.ts";

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

/**
 * Why a record waits behind the notice: new here (no room, or an order it
 * cannot be placed in), changed, or new on page 1 / on a later page.
 */
export type Waiting = "new" | "changed" | "first" | "later";

/** The table's view, as far as live changes care. */
export interface LiveView {
  /** No filter and no search: every record is in the view. */
  plain: boolean;
  /** No `sort`: the default order, newest first (`-created,-id`). */
  newestFirst: boolean;
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

/** True when `a` comes before `b` newest first (`created`, then `id`). */
function newer(a: RecordData, b: RecordData): boolean {
  const ca = String(a.created ?? ""), cb = String(b.created ?? "");
  return ca !== cb ? ca > cb : a.id > b.id;
}

/** Where a new record goes newest first (first row older than it). */
function newestPosition(items: RecordData[], r: RecordData): number {
  const i = items.findIndex((x) => newer(r, x));
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
      moveTotal(
        view.plain || shown || (was !== undefined && was !== "changed")
          ? -1
          : null,
      );
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
    if (v === "match" && view.newestFirst) {
      const pos = newestPosition(items, c.record);
      // Before this page (page 1), or after it on a later one: the notice
      // says where.
      if (view.number > 1 && pos === 0) waiting.set(c.id, "first");
      else if (pos === items.length && start.has_more) {
        waiting.set(c.id, "later");
      } else if (items.length < view.size) {
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

/**
 * The notice's words: "2 new records · 1 new record on page 1 · 1 changed
 * record".
 */
export function waitingText(waiting: ReadonlyMap<string, Waiting>): string {
  const k: Record<Waiting, number> = { new: 0, changed: 0, first: 0, later: 0 };
  for (const w of waiting.values()) k[w]++;
  const n = (count: number, what: string, where = "") =>
    count > 0 ? `${count} ${what} record${count === 1 ? "" : "s"}${where}` : "";
  return [
    n(k.new, "new"),
    n(k.first, "new", " on page 1"),
    n(k.later, "new", ` on ${k.later === 1 ? "a later page" : "later pages"}`),
    n(k.changed, "changed"),
  ].filter(Boolean).join(" · ");
}
