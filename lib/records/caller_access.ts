/**
 * What a caller may see and write of an entity's records: the `Access` a
 * rule decision (or a list filter) becomes, and `both` to require two of
 * them. `Entity`'s operations take an `Access`; without one they see every
 * record.
 *
 * @module
 */

import type { Queryable } from "../db/storage.ts";
import type { RecordData } from "./codec.ts";
import type { Where } from "./list_query.ts";

/** Which records a caller may touch, and which writes it may make. */
export interface Access {
  /** Only rows matching this condition are visible. */
  where?: Where;
  /**
   * Rows that match `where` in SQL may still be rejected by this per-row
   * test; `tx`: the transaction the row was read in (related records a rule
   * reads are read there too).
   */
  keep?: (record: RecordData, tx?: Queryable) => boolean | Promise<boolean>;
  /** Throws to refuse a write given the record as it would be stored (or, on delete, as it was). */
  check?: (next: RecordData, tx: Queryable) => void | Promise<void>;
  /**
   * A create's `check` as SQL, where its rule has an exact form: the write
   * may put it in its INSERT instead of calling `check` (one statement, no
   * related record read first), then `refuse` when no row was inserted.
   */
  checkSql?: CheckSql;
}

/** A create's rule as a condition on the row it would insert. */
export interface CheckSql {
  /**
   * The condition on the new row read as `alias` (its columns unqualified
   * at the top, `alias."col"` in subqueries); undefined: no exact SQL
   * (call `check`).
   */
  where(alias: string): Where | undefined;
  /** Throws the refusal `check` would throw. */
  refuse(): never;
}

/** How to require two values of one `Access` key at once. */
type Combine = { [K in keyof Access]-?: (a: Access, b: Access) => Access[K] };

// One entry per key of `Access`: a new key does not compile until it says
// how two of its values combine, so `both` never drops one.
const COMBINE: Combine = {
  where: (a, b) =>
    a.where && b.where
      ? {
        sql: `(${a.where.sql}) AND (${b.where.sql})`,
        params: [...a.where.params, ...b.where.params],
      }
      : a.where ?? b.where,
  keep: ({ keep: ka }, { keep: kb }) =>
    ka && kb
      ? async (r, tx) => (await ka(r, tx)) && (await kb(r, tx))
      : ka ?? kb,
  check: ({ check: ca }, { check: cb }) =>
    ca && cb
      ? async (r, tx) => {
        await ca(r, tx);
        await cb(r, tx);
      }
      : ca ?? cb,
  // Only where it is the whole check: another check without one is called.
  checkSql: (a, b) =>
    a.check && b.check ? undefined : a.check ? a.checkSql : b.checkSql,
};

/**
 * Requires both: a record is visible when both let the caller see it, a
 * write allowed when both allow it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { both } from "moonbase/lib/records/caller_access.ts";
 * const h = both({ where: { sql: "a = ?", params: [1] } }, { where: { sql: "b = ?", params: [2] } });
 * assert.ok(h.where?.sql === "(a = ?) AND (b = ?)" && h.where.params.length === 2);
 * const k = both({ keep: () => true }, { keep: () => false });
 * assert.equal(await k.keep?.({}), false);
 * ```
 */
export function both(a: Access, b: Access): Access {
  const out: Access = {};
  for (const key of Object.keys(COMBINE) as (keyof Access)[]) {
    put(out, key, COMBINE[key](a, b));
  }
  return out;
}

function put<K extends keyof Access>(out: Access, key: K, value: Access[K]) {
  if (value !== undefined) out[key] = value;
}
