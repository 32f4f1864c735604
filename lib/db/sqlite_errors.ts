/**
 * What SQLite errors mean to a client: a statement naming a column a
 * concurrent schema change removed (409), a full disk (507), a lost write
 * group (503), the write lock held by another connection for longer than
 * the busy timeout (503: another isolate of `serve --workers N`, or another
 * process, in a long write transaction).
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
    const stale = new MoonbaseError(
      "conflict",
      "Cannot complete: the entity's schema changed during the request; retry",
    );
    // Kept for schema changes, which say which name the database refused
    // when the admin's own SQL has it (lib/schema/ddl_errors.ts).
    stale.cause = err;
    return stale;
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

/**
 * SQLITE_BUSY: another connection held the write lock for all of the busy
 * timeout. Never a 500, and never "database is locked" in an answer: a 503
 * the client may retry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { busyError } from "moonbase/lib/db/sqlite_errors.ts";
 * const locked = Object.assign(new Error("database is locked"), { errcode: 5 });
 * assert.equal(busyError(locked)?.code, "unavailable");
 * assert.equal(busyError(new Error("other")), undefined);
 * ```
 */
export function busyError(err: unknown): MoonbaseError | undefined {
  const code = (err as { errcode?: number } | null)?.errcode;
  const busy = typeof code === "number"
    ? (code & 0xff) === 5
    : err instanceof Error && /database is locked/.test(err.message);
  if (!busy) return undefined;
  return new MoonbaseError(
    "unavailable",
    "Cannot save now: another write holds the database; try again",
    null,
    { "retry-after": "1" },
  );
}
