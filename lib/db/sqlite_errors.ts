/**
 * What SQLite errors mean to a client: a statement naming a column a
 * concurrent schema change removed (409), a full disk (507), a lost write
 * group (503).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** A statement that names a column or table a concurrent schema change removed: 409, retry. */
export function staleSchema(err: unknown): unknown {
  const msg = err instanceof Error ? err.message : "";
  if (
    /^(no such column|no such table|table \S+ has no column named)/.test(msg)
  ) {
    return new MoonbaseError(
      "conflict",
      "Cannot complete: the entity's schema changed during the request; retry",
    );
  }
  return err;
}

/** SQLITE_FULL: the disk, or the database's size limit, is full. */
export function noSpace(err: unknown): boolean {
  const code = (err as { errcode?: number } | null)?.errcode;
  if (typeof code === "number") return (code & 0xff) === 13;
  // `exec` (a COMMIT) throws without an errcode: SQLITE_FULL's message.
  return err instanceof Error && /database or disk is full/.test(err.message);
}

/** How long a write that failed for lack of space keeps health on "full". */
export const FULL_REPORTED_MS = 60_000;

/** Told to the writes of a group that could not be committed. */
export function groupLost(): MoonbaseError {
  return new MoonbaseError(
    "unavailable",
    "Cannot save: the database could not commit the write; try again",
  );
}
