/// <reference lib="dom" />
/**
 * Labels for relation cells: the target record's display field (its first
 * string field, see `displayField`) instead of a bare id. One list request
 * per relation column and page (ids in chunks of 40, filtered by `id`).
 *
 * @module
 */

import { useEffect, useState } from "preact/hooks";
import { api, type Page, type RecordData, seg } from "../api.ts";
import { displayField, literal } from "./records_query.ts";
import { type EntitySchema, schemaOf } from "../schemas.ts";

/** field name → (target id → label). */
export type RelationLabels = Map<string, Map<string, string>>;

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
    const page = await api.get<Page<RecordData>>(
      `/entities/${seg(target)}`,
      {
        query: {
          filter: part.map((id) => `id == ${literal(id)}`).join(" || "),
          fields: `id,${display}`,
          limit: part.length,
        },
        signal,
      },
    );
    for (const r of page.items) {
      const v = r[display];
      if (typeof v === "string" && v !== "") out.set(r.id, v);
    }
  }
  return out;
}

/** Labels of the relation targets of the shown records (empty until loaded). */
export function useRelationLabels(
  schema: EntitySchema,
  items: RecordData[],
  columns: string[],
): RelationLabels {
  const [labels, setLabels] = useState<RelationLabels>(new Map());
  const fields = schema.fields.filter((f) =>
    f.type === "relation" && f.foreign_key && columns.includes(f.name)
  );
  const key = fields.map((f) => f.name).join(",") + "|" +
    items.map((r) => r.id).join(",");
  useEffect(() => {
    const ac = new AbortController();
    (async () => {
      const next: RelationLabels = new Map();
      for (const f of fields) {
        const ids = [
          ...new Set(
            items.map((r) => r[f.name]).filter((v): v is string =>
              typeof v === "string" && v !== ""
            ),
          ),
        ];
        if (ids.length === 0) continue;
        next.set(
          f.name,
          await labelsFor(f.foreign_key!.entity, ids, ac.signal),
        );
      }
      setLabels(next);
    })().catch(() => {
      // Labels are a nicety: cells keep showing ids.
    });
    return () => ac.abort();
  }, [key]);
  return labels;
}
