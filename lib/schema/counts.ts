/**
 * Record counts for the dashboard's sidebar (`GET /api/v1/sys/counts`):
 * one bounded count per entity. The dashboard asks after every save, and
 * a view (a join, say) can have far more rows than its tables, so a count
 * stops at {@link COUNT_CAP}: past it the answer is `COUNT_CAP + 1`
 * ("more than"). The records API's `count=true` stays exact.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";
import { tableOf } from "./ddl.ts";

/** Counts stop here; a larger count is answered as `COUNT_CAP + 1`. */
export const COUNT_CAP = 10_000;

/**
 * The number of rows of `entity`'s table or view, reading at most
 * `cap + 1` of them.
 */
export async function cappedCount(
  db: Queryable,
  entity: { name: string },
  cap: number = COUNT_CAP,
): Promise<number> {
  const rows = await db.query(
    `SELECT COUNT(*) AS "n" FROM (SELECT 1 AS "one" FROM ${
      tableOf(entity.name)
    } LIMIT ?) AS "c"`,
    [cap + 1],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Each entity's capped count by name; null where counting fails (a broken view). */
export async function recordCounts(
  db: Queryable,
  entities: readonly { name: string }[],
  cap: number = COUNT_CAP,
): Promise<Record<string, number | null>> {
  const out: Record<string, number | null> = {};
  for (const e of entities) {
    // Null is the answer for an entity that cannot be counted (documented above).
    out[e.name] = await cappedCount(db, e, cap).catch(() => null);
  }
  return out;
}
