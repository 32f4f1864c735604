/// <reference lib="dom" />
/**
 * Unsaved edits of an entity's schema or rules, kept in `localStorage`
 * (`mb_draft:<kind>:<entity id>`, "new" for the new-entity form) while they
 * differ from what is saved, so they survive a session that ended (and a
 * reload): the page restores them, with a note, when it opens again.
 * Saving or discarding forgets them. Nothing leaves the browser.
 *
 * @module
 */

/** What is drafted. */
export type DraftKind = "schema" | "rules";

/** A stored draft. */
export interface Draft<T> {
  value: T;
  /** The `updated` of the schema the draft was made on ("" for a new one). */
  base: string;
  /** When it was last written (ms since the epoch). */
  at: number;
}

const key = (kind: DraftKind, entity: string) => `mb_draft:${kind}:${entity}`;

/** The draft of `kind` for `entity`, or null. */
export function readDraft<T>(kind: DraftKind, entity: string): Draft<T> | null {
  try {
    const d = JSON.parse(localStorage.getItem(key(kind, entity)) ?? "null");
    return d && typeof d === "object" && "value" in d ? d as Draft<T> : null;
  } catch {
    return null; // unreadable (or storage off): nothing to restore
  }
}

/** Keeps `value` as the draft of `kind` for `entity`. */
export function writeDraft<T>(
  kind: DraftKind,
  entity: string,
  value: T,
  base: string,
): void {
  try {
    const d: Draft<T> = { value, base, at: Date.now() };
    localStorage.setItem(key(kind, entity), JSON.stringify(d));
  } catch {
    // storage full or off: the edit stays on the page only
  }
}

/** Forgets the draft of `kind` for `entity` (saved or discarded). */
export function dropDraft(kind: DraftKind, entity: string): void {
  try {
    localStorage.removeItem(key(kind, entity));
  } catch {
    // storage off: nothing was kept
  }
}

/** "at 14:05" today, else a local date and time. */
export function draftTime(at: number): string {
  const d = new Date(at);
  const today = new Date().toDateString() === d.toDateString();
  return today
    ? `at ${d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`
    : `on ${d.toLocaleString()}`;
}
