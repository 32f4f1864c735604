/**
 * Names of backups, checked here once for every place (a folder or S3): a
 * name is letters, digits, `_`, `-` and `.`, ends in `.tar.gz` (added when
 * missing), and never escapes its folder or prefix.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}\.tar\.gz$/;

/**
 * True when `name` is a backup's name as it is stored (what a listing
 * shows; anything else in a place is not a backup).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isBackupName } from "moonbase/lib/backup/names.ts";
 * assert.ok(isBackupName("nightly.tar.gz"));
 * assert.ok(!isBackupName("nightly.tar.gz.1a2b3c4d.partial"));
 * assert.ok(!isBackupName("notes.txt"));
 * ```
 */
export function isBackupName(name: string): boolean {
  return NAME.test(name) && !name.includes("..");
}

/**
 * The stored name of a backup: `name` with `.tar.gz` added when missing;
 * 400 for anything that is not a plain name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backupName } from "moonbase/lib/backup/names.ts";
 * assert.equal(backupName("nightly"), "nightly.tar.gz");
 * assert.equal(backupName("a.tar.gz"), "a.tar.gz");
 * assert.throws(() => backupName("../x"), /Cannot use backup name/);
 * assert.throws(() => backupName(".hidden"), /Cannot use backup name/);
 * ```
 */
export function backupName(name: string): string {
  const full = name.endsWith(".tar.gz") ? name : `${name}.tar.gz`;
  if (!isBackupName(full)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot use backup name: use letters, digits, _, - and . (at most 120), ending in .tar.gz or nothing",
      { name: { code: "invalid", message: "not a plain file name" } },
    );
  }
  return full;
}

/** A default name: `mb_backup_<UTC time>.tar.gz`. */
export function defaultBackupName(now: number): string {
  const t = new Date(now).toISOString().replace(/[-:]/g, "").replace(
    /\.\d+Z$/,
    "Z",
  );
  return `mb_backup_${t}.tar.gz`;
}
