/**
 * The edges between the storage interface and node:sqlite's synchronous
 * calls: statements as promises (a failure rejects, never throws), and
 * parameters as node:sqlite binds them.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { SqlValue } from "./storage.ts";

/** A synchronous statement as a promise: its failure rejects. */
export function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Parameters as node:sqlite binds them: booleans as 1/0 (it refuses
 * booleans), and a string with a NUL refused (it would cut the string there
 * and store the rest silently), as PostgreSQL refuses it.
 */
export function bindable(params: readonly SqlValue[]): never[] {
  let out: SqlValue[] | undefined;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (typeof p === "boolean") {
      (out ??= [...params])[i] = p ? 1 : 0;
    } else if (typeof p === "string" && p.includes("\0")) {
      throw new MoonbaseError(
        "invalid",
        "Cannot use value: it contains characters the database cannot store",
      );
    }
  }
  return (out ?? params) as never[];
}
