/**
 * Where backups live (`--backups`): a folder, `<dataDir>/backups`
 * (folder_place.ts, the default), or objects under a prefix of an S3
 * bucket (s3_place.ts). The backups of a server (service.ts) are written
 * once over this interface; tests/_backup_place_contract.ts holds both to
 * it.
 *
 * A place is given only names `backupName` (names.ts) accepted: it never
 * checks them again, and lists only objects whose names are backup names
 * (anything else there is not a backup and is left alone).
 *
 * @module
 */

import type { FilesState } from "../files/backend.ts";

/** A backup as the API lists it. */
export interface BackupInfo {
  name: string;
  size: number;
  /** ISO 8601 time it was written. */
  created: string;
}

/** A file on disk holding a backup, for reading it more than once. */
export interface LocalBackup {
  path: string;
  /** Removes the copy made for this (nothing when `path` is the backup itself). */
  release(): Promise<void>;
}

/** Where backups live. */
export interface BackupPlace {
  /** How it is named to people: `local` or `s3://bucket/prefix`. */
  readonly name: string;
  /** Where a backup of this name is, for people: a path or an `s3://` URL. */
  where(name: string): string;
  /**
   * Checks it can be used (start-up): throws an Error whose one-line
   * message says what is wrong and what to do.
   */
  check(): Promise<void>;
  /** Its state from what it saw lately, at no cost (as `FileBackend.state`). */
  state(): FilesState;
  /** The backups there (only names that are backup names), in no order. */
  list(): Promise<BackupInfo[]>;
  /** One backup, or undefined when there is none of that name. */
  stat(name: string): Promise<BackupInfo | undefined>;
  /**
   * Writes a backup: `fill` writes the archive into `out` and closes it.
   * The bytes are passed on as they come (never the whole archive in
   * memory); the backup appears under `name` only once `fill` succeeded.
   * When `fill` or the place fails, it throws and leaves no backup.
   * `owner` marks it as made by that database (see `madeBy`).
   */
  write<T>(
    name: string,
    owner: string,
    fill: (out: WritableStream<Uint8Array>) => Promise<T>,
  ): Promise<T>;
  /** The backup's bytes, or undefined when there is none of that name. */
  read(name: string): Promise<ReadableStream<Uint8Array> | undefined>;
  /**
   * The backup as a file on disk (the folder's own file, or a copy in
   * `tempDir` that `release` removes), or undefined when there is none.
   */
  local(name: string, tempDir: string): Promise<LocalBackup | undefined>;
  /**
   * Whether the backup was made by the database `owner` (the scheduled
   * backups' `keep` deletes only those). A folder belongs to one data
   * directory, so to its database: always true there.
   */
  madeBy(name: string, owner: string): Promise<boolean>;
  /** Removes a backup; nothing when there is none of that name. */
  remove(name: string): Promise<void>;
  /** Stops background work. */
  close(): Promise<void>;
}
