/**
 * Backups in an S3 bucket (`--backups s3://bucket/prefix?…`): the object
 * `<prefix>/<name>` each, written as the archive is made (a multipart
 * upload above the part size, aborted when anything fails: a failed backup
 * leaves no object). Requests, deadlines and the mapping of failures to a
 * 503 with `Retry-After` are lib/files/s3_client.ts's, as for stored files.
 *
 * - `list` is one request per 1000 objects (ListObjectsV2 with the
 *   delimiter `/`: objects deeper under the prefix are not looked at);
 *   `created` is S3's `LastModified`, cut to the second (a listing and a
 *   HEAD give it at different precisions).
 * - Each backup carries the id of the database that made it
 *   (`x-amz-meta-mb-database`): instances of one project share the
 *   listing, and the schedule's `keep` deletes only its own.
 * - `local` downloads the archive into a file in the data directory: a
 *   restore reads it three times (verify, files, rows), and reading one
 *   downloaded copy means the bytes restored are the bytes verified even if
 *   another instance replaces the object meanwhile, one download instead
 *   of three, and no S3 connection held open across the database's
 *   transaction.
 *
 * @module
 */

import { join } from "node:path";
import { MoonbaseError } from "../errors.ts";
import type { FilesState } from "../files/backend.ts";
import {
  S3Client,
  type S3Credentials,
  type S3Location,
  type S3Options,
  type S3Purpose,
} from "../files/s3_client.ts";
import type { BackupInfo, BackupPlace, LocalBackup } from "./place.ts";
import { isBackupName } from "./names.ts";

/** Seconds a client is told to wait when the backup store cannot be reached. */
export const BACKUPS_RETRY_AFTER = 5;

/**
 * The error of a backup store that cannot be reached (503, `Retry-After`);
 * what S3 said goes to the log only.
 */
export function backupsUnavailable(): MoonbaseError {
  return new MoonbaseError(
    "unavailable",
    "Cannot reach the backup store: try again shortly",
    null,
    { "retry-after": String(BACKUPS_RETRY_AFTER) },
  );
}

const PURPOSE: S3Purpose = {
  option: "--backups",
  failure: "Cannot use the backup store",
  unavailable: backupsUnavailable,
};

const OWNER = "x-amz-meta-mb-database";

function seconds(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString();
}

/** Backups under a prefix of an S3 bucket. */
export class S3Place implements BackupPlace {
  readonly name: string;
  readonly #s3: S3Client;

  constructor(
    location: S3Location,
    credentials: S3Credentials,
    options: S3Options,
  ) {
    this.#s3 = new S3Client(location, credentials, options, PURPOSE);
    this.name = this.#s3.name;
  }

  where(name: string): string {
    return `${this.name}/${name}`;
  }

  check(): Promise<void> {
    return this.#s3.check();
  }

  state(): FilesState {
    return this.#s3.state();
  }

  async list(): Promise<BackupInfo[]> {
    return (await this.#s3.list()).filter((o) => isBackupName(o.place)).map((
      o,
    ) => ({ name: o.place, size: o.size, created: seconds(o.modified) }));
  }

  async stat(name: string): Promise<BackupInfo | undefined> {
    const head = await this.#s3.head(this.#s3.key(name));
    return head
      ? { name, size: head.size, created: seconds(head.modified) }
      : undefined;
  }

  async write<T>(
    name: string,
    owner: string,
    fill: (out: WritableStream<Uint8Array>) => Promise<T>,
  ): Promise<T> {
    const key = this.#s3.key(name);
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    const inner = pipe.writable.getWriter();
    // `fill` may hold `out` locked when it fails: the place ends the upload
    // through its own writer.
    const out = new WritableStream<Uint8Array>({
      write: (chunk) => inner.write(chunk),
      close: () => inner.close(),
      abort: (why) => inner.abort(why),
    });
    const uploading = this.#s3.write(key, pipe.readable, {
      "content-type": "application/gzip",
      [OWNER]: owner,
    });
    const filling = Promise.resolve().then(() => fill(out)).catch(
      async (err) => {
        await inner.abort(err).catch(() => {
          // Ignored: the upload ended already (and says why).
        });
        throw err;
      },
    );
    const [filled, uploaded] = await Promise.allSettled([filling, uploading]);
    if (uploaded.status === "rejected") {
      // The store's failure (or `fill`'s, passed through the stream).
      throw filled.status === "rejected" &&
          !(uploaded.reason instanceof MoonbaseError)
        ? filled.reason
        : uploaded.reason;
    }
    if (filled.status === "rejected") {
      // `fill` closed `out` and failed after: the object is this write's own.
      await this.#s3.remove(key);
      throw filled.reason;
    }
    return filled.value;
  }

  read(name: string): Promise<ReadableStream<Uint8Array> | undefined> {
    return this.#s3.read(this.#s3.key(name));
  }

  async local(name: string, tempDir: string): Promise<LocalBackup | undefined> {
    const body = await this.read(name);
    if (!body) return undefined;
    const path = join(
      tempDir,
      `.restore-${crypto.randomUUID().slice(0, 8)}.tar.gz.partial`,
    );
    const release = () =>
      Deno.remove(path).catch(() => {
        // Ignored: it was never made, or is gone already.
      });
    const reader = body.getReader();
    let file: Deno.FsFile | undefined;
    try {
      file = await Deno.open(path, {
        write: true,
        createNew: true,
        mode: 0o600,
      });
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch {
          // The download broke or stalled (the store logged why).
          throw backupsUnavailable();
        }
        if (next.done) break;
        let off = 0;
        while (off < next.value.length) {
          off += await file.write(next.value.subarray(off));
        }
      }
      const done = file;
      file = undefined;
      done.close();
    } catch (err) {
      file?.close();
      await reader.cancel().catch(() => {
        // Ignored: it failed or ended already.
      });
      await release();
      throw err;
    }
    return { path, release };
  }

  async madeBy(name: string, owner: string): Promise<boolean> {
    const head = await this.#s3.head(this.#s3.key(name));
    return head?.headers.get(OWNER) === owner;
  }

  async remove(name: string): Promise<void> {
    if (!await this.#s3.remove(this.#s3.key(name))) throw backupsUnavailable();
  }

  close(): Promise<void> {
    this.#s3.close();
    return Promise.resolve();
  }
}
