/// <reference lib="dom" />
/**
 * What the relation pickers share: a target record's label (its display
 * field, else its id) and the search of the target's records by what the
 * admin typed (ten at a time, by display field or exact id).
 *
 * @module
 */

import { mb, type RecordData } from "../../mb.ts";
import { literal } from "../records_query.ts";

/** A record's label: its display field, else its id. */
export function labelOf(r: RecordData, display: string): string {
  const v = r[display];
  return display !== "id" && v !== null && v !== undefined && v !== ""
    ? String(v)
    : r.id;
}

/** The records of `target` matching `text` (ten at most). */
export async function searchRecords(
  target: string,
  display: string,
  text: string,
): Promise<RecordData[]> {
  const t = text.trim();
  const filter = !t
    ? undefined
    : display === "id"
    ? `id.startsWith(${literal(t)})`
    : `${display}.includes(${literal(t)}) || id == ${literal(t)}`;
  const p = await mb.entity(target).list({
    limit: 10,
    filter,
    fields: display === "id" ? "id" : `id,${display}`,
  });
  return p.items;
}
