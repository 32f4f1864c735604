/// <reference lib="dom" />
/**
 * The back-relation count columns of the records table: per count column,
 * one aggregate request for the page's ids (`GET /entities/<entity>/aggregate
 * ?group=<field>&count=true&filter=<field> == "…" || …`, see
 * related_columns.ts), made again when the page changes.
 *
 * @module
 */

import { useEffect, useState } from "preact/hooks";
import { mb, type Page, type RecordData } from "../mb.ts";
import type { EntitySchema } from "../schemas.ts";
import {
  type CountGroup,
  countQueries,
  countsByIds,
  extraColumn,
} from "./related_columns.ts";

/** Per count column: the count per record id, or why there is none. */
export type BackCounts = Map<string, Map<string, number> | { error: string }>;

/** The counts of the count columns among `columns` for the rows of `page`. */
export function useBackCounts(
  all: readonly EntitySchema[],
  schema: EntitySchema,
  page: Page<RecordData> | null,
  columns: string[],
): BackCounts {
  const [counts, setCounts] = useState<BackCounts>(new Map());
  const backs = columns.map((k) => extraColumn(all, schema, k))
    .flatMap((c) => c?.kind === "count" ? [c] : []);
  const ids = (page?.items ?? []).map((r) => r.id);
  useEffect(() => {
    if (backs.length === 0 || ids.length === 0) {
      setCounts((c) => c.size === 0 ? c : new Map());
      return;
    }
    const ac = new AbortController();
    (async () => {
      const next: BackCounts = new Map();
      await Promise.all(backs.map(async ({ key, back }) => {
        try {
          const groups: CountGroup[] = [];
          for (const query of countQueries(back, ids)) {
            const data = await mb.entity(back.entity).aggregate(query, {
              signal: ac.signal,
            });
            for (const g of data.groups) {
              groups.push({ key: g.key, count: g.count ?? 0 }); // asked for
            }
          }
          next.set(key, countsByIds(back, ids, groups));
        } catch (e) {
          if (ac.signal.aborted) return;
          next.set(key, { error: (e as Error).message });
        }
      }));
      if (!ac.signal.aborted) setCounts(next);
    })();
    return () => ac.abort();
    // The page changes when it is fetched again or a live change lands:
    // the counts may have changed too.
  }, [backs.map((b) => b.key).join(","), page]);
  return counts;
}
