/// <reference lib="dom" />
/**
 * Labels of relation targets outside the records table (whose cells read
 * them from the page's `expand`): the target record's display field (its
 * first string field, see `displayField`) instead of a bare id, for the
 * group-by summary. One list request per 40 ids, filtered by `id`.
 *
 * @module
 */

import { mb } from "../mb.ts";
import { displayField, literal } from "./records_query.ts";
import { schemaOf } from "../schemas.ts";

const CHUNK = 40;

/** Labels (display field) of `ids` in `target`; ids without one are left out. */
export async function labelsFor(
  target: string,
  ids: string[],
  signal: AbortSignal,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const display = displayField(schemaOf(target));
  if (display === "id") return out;
  for (let i = 0; i < ids.length; i += CHUNK) {
    const part = ids.slice(i, i + CHUNK);
    const page = await mb.entity(target).list(
      {
        filter: part.map((id) => `id == ${literal(id)}`).join(" || "),
        fields: `id,${display}`,
        limit: part.length,
      },
      { signal },
    );
    for (const r of page.items) {
      const v = r[display];
      if (typeof v === "string" && v !== "") out.set(r.id, v);
    }
  }
  return out;
}
