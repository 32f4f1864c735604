/**
 * Backups (`/api/v1/sys/backups`, admins only): list, create, upload,
 * download, delete and restore the archives of the server's project.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";
import { fileName, seg, type Transport } from "./transport.ts";

/** A backup as the server lists it. */
export interface BackupInfo {
  /** `<name>.tar.gz`: letters, digits, `_`, `-` and `.`. */
  name: string;
  /** Bytes. */
  size: number;
  /** When the archive was written (ISO 8601). */
  created: string;
}

/** What a restore put back. */
export interface RestoreResult {
  name: string;
  /** When the backup's snapshot was taken (ISO 8601). */
  created: string;
  /** The database that made it. */
  database: "sqlite" | "postgres";
  /** The Moonbase version that made it. */
  moonbase: string;
  /** Rows per table. */
  tables: Record<string, number>;
  /** Files archived. */
  files: number;
}

/** Options of one call. */
export interface BackupCallOptions {
  signal?: AbortSignal;
}

/** The server's backups. */
export class BackupsService {
  readonly #t: Transport;

  /** Made by `Moonbase`. */
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** Every backup, newest first. */
  list(options: BackupCallOptions = {}): Promise<BackupInfo[]> {
    return this.#t.send("GET", "/api/v1/sys/backups", {
      signal: options.signal,
    });
  }

  /**
   * Makes a backup while the server keeps serving; `name` defaults to
   * `mb_backup_<UTC time>.tar.gz` (`.tar.gz` is added when missing).
   */
  create(name?: string, options: BackupCallOptions = {}): Promise<BackupInfo> {
    return this.#t.send("POST", "/api/v1/sys/backups", {
      body: name === undefined || name === "" ? {} : { name },
      signal: options.signal,
    });
  }

  /**
   * Uploads an archive (a `File` or `Blob`), kept as `name` (default: the
   * file's name). The server checks it whole first: a damaged or foreign
   * archive is refused (400) and not kept.
   */
  upload(
    file: Blob,
    name?: string,
    options: BackupCallOptions = {},
  ): Promise<BackupInfo> {
    const form = new FormData();
    // The name goes first: the server reads the parts in order.
    if (name !== undefined && name !== "") form.append("name", name);
    form.append("file", file, fileName(file));
    return this.#t.send("POST", "/api/v1/sys/backups/upload", {
      body: form,
      signal: options.signal,
    });
  }

  /**
   * The URL of a backup's archive. A plain link (`<a href>`) cannot send
   * the Authorization header: give an admin's file token
   * (`await mb.files.token()`, valid two minutes) as `token`.
   */
  downloadUrl(name: string, options: { token?: string } = {}): string {
    return this.#t.url(`/api/v1/sys/backups/${seg(name)}`, {
      token: options.token,
    });
  }

  /** A backup's archive as a stream (to write it to a file, say). */
  async download(
    name: string,
    options: BackupCallOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const path = `/api/v1/sys/backups/${seg(name)}`;
    const res = await this.#t.open("GET", path, { signal: options.signal });
    if (res.body) return res.body;
    throw new MoonbaseError(
      res.status,
      `Cannot download backup ${name}: the answer has no body`,
    );
  }

  /** Deletes a backup. */
  async delete(name: string, options: BackupCallOptions = {}): Promise<void> {
    await this.#t.send("DELETE", `/api/v1/sys/backups/${seg(name)}`, {
      signal: options.signal,
    });
  }

  /**
   * Replaces the project's data with a backup's, all or nothing; resolves
   * once it is done. The admins are then the backup's: the token in the
   * store works on only if the backup came from a server with the same
   * JWT secret and its admin is in the backup, so sign in again.
   */
  restore(
    name: string,
    options: BackupCallOptions = {},
  ): Promise<RestoreResult> {
    return this.#t.send(
      "POST",
      `/api/v1/sys/backups/${seg(name)}/restore`,
      { signal: options.signal },
    );
  }
}
