/**
 * Owner-only permissions for SQLite database files: the file is created
 * with mode 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm`
 * files the database file's mode), and files an older version left
 * world-readable are narrowed when opened.
 *
 * @module
 */

/**
 * Creates `path` with mode 0600 if missing and sets 0600 on it and its
 * `-wal`, `-shm` and `-journal` files (best effort: SQLite reports real
 * problems when it opens the file). `:memory:` and URIs are left alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownerOnly } from "moonbase/lib/db/private_files.ts";
 * const path = (await Deno.makeTempDir()) + "/x.db";
 * ownerOnly(path);
 * assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
 * ```
 */
export function ownerOnly(path: string): void {
  if (path === "" || path.startsWith(":") || path.startsWith("file:")) return;
  try {
    Deno.openSync(path, { create: true, append: true, mode: 0o600 }).close();
  } catch {
    // Ignored: SQLite opens the file next and reports why it cannot (a
    // missing directory, no permission) in the error the caller sees.
    return;
  }
  for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      Deno.chmodSync(p, 0o600);
    } catch {
      // Ignored: the file is absent (no WAL yet), or the system has no
      // modes; nothing is left readable that could have been narrowed.
    }
  }
}
