/**
 * The `--backups` value (also `MB_BACKUPS`): `local` (`<dataDir>/backups`,
 * the default) or an S3 bucket and prefix in the form of `--files`
 * (`s3://<bucket>[/<prefix>]?endpoint=…&region=…&path_style=…`, the same
 * key from the environment). The exact bucket and prefix of an S3 file
 * store are refused: stored files and backups never share a prefix.
 *
 * @module
 */

import { join } from "node:path";
import { parseFilesUrl, s3CredentialsFromEnv } from "../files/files_url.ts";
import type { S3Credentials, S3Options } from "../files/s3_client.ts";
import { FolderPlace } from "./folder_place.ts";
import type { BackupPlace } from "./place.ts";
import { S3Place } from "./s3_place.ts";

/**
 * Checks a `--backups` value against the `--files` one; throws an Error
 * whose message says what to use.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkBackupsUrl } from "moonbase/lib/backup/backups_url.ts";
 * const at = "?endpoint=http://127.0.0.1:9000";
 * checkBackupsUrl("local", `s3://media${at}`);
 * checkBackupsUrl(`s3://media/backups${at}`, `s3://media${at}`);
 * assert.throws(
 *   () => checkBackupsUrl(`s3://media/app${at}`, `s3://media/app/${at}`),
 *   /the same bucket and prefix as --files/,
 * );
 * assert.throws(() => checkBackupsUrl("ftp://x", "local"), /invalid --backups/);
 * ```
 */
export function checkBackupsUrl(value: string, files: string): void {
  const backups = parseFilesUrl(value, "--backups");
  if (backups.kind !== "s3") return;
  let store;
  try {
    store = parseFilesUrl(files);
  } catch {
    return; // --files says what is wrong with it itself
  }
  if (
    store.kind === "s3" && store.bucket === backups.bucket &&
    store.prefix === backups.prefix
  ) {
    const where = `s3://${backups.bucket}${
      backups.prefix ? `/${backups.prefix}` : ""
    }`;
    throw new Error(
      `invalid --backups ${
        JSON.stringify(value)
      }: ${where} is the same bucket and prefix as --files; stored files and backups must not mix: give backups a prefix of their own, e.g. s3://${backups.bucket}/${
        backups.prefix ? `${backups.prefix}-` : ""
      }backups`,
    );
  }
}

/**
 * The place a `--backups` value names (not checked yet: call `check()`).
 * `credentials` default to the environment's.
 */
export function openBackupPlace(
  value: string,
  files: string,
  dataDir: string,
  options: S3Options,
  credentials?: S3Credentials,
): BackupPlace {
  checkBackupsUrl(value, files);
  const url = parseFilesUrl(value, "--backups");
  if (url.kind === "local") return new FolderPlace(join(dataDir, "backups"));
  const { kind: _, ...location } = url;
  return new S3Place(
    location,
    credentials ?? s3CredentialsFromEnv("an S3 backup store"),
    options,
  );
}
