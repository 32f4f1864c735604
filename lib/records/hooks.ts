/**
 * Combining operation hooks (a rule and a filter).
 *
 * @module
 */

import type { OpOptions } from "./crud.ts";

/**
 * Combines two sets of hooks: both must hold.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { both } from "moonbase/lib/records/hooks.ts";
 * const h = both({ where: { sql: "a = ?", params: [1] } }, { where: { sql: "b = ?", params: [2] } });
 * assert.ok(h.where?.sql === "(a = ?) AND (b = ?)" && h.where.params.length === 2);
 * ```
 */
export function both(a: OpOptions, b: OpOptions): OpOptions {
  const out: OpOptions = {};
  if (a.where && b.where) {
    out.where = {
      sql: `(${a.where.sql}) AND (${b.where.sql})`,
      params: [...a.where.params, ...b.where.params],
    };
  } else if (a.where ?? b.where) out.where = a.where ?? b.where;
  const [ka, kb] = [a.keep, b.keep];
  if (ka && kb) out.keep = async (r) => (await ka(r)) && (await kb(r));
  else if (ka ?? kb) out.keep = ka ?? kb;
  const [ca, cb] = [a.check, b.check];
  if (ca && cb) {
    out.check = async (r, tx) => {
      await ca(r, tx);
      await cb(r, tx);
    };
  } else if (ca ?? cb) out.check = ca ?? cb;
  return out;
}
