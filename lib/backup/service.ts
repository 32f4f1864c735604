/**
 * The backups of a server: archives in a place (`--backups`: the folder
 * `<dataDir>/backups`, or an S3 bucket; place.ts), made, listed, read,
 * uploaded, deleted and restored (the admin API and the CLI both use
 * this). Names are checked here, once (names.ts). One backup or restore
 * runs at a time per process.
 *
 * Over 350 lines, one idea: the backups folder; kept whole because every
 * operation goes through the same name checks and the one-at-a-time lock.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { Storage } from "../db/storage.ts";
import type { WritePause } from "../http/write_pause.ts";
import { type BackupSource, type Progress, writeBackup } from "./create.ts";
import type { BackupManifest } from "./format.ts";
import {
  type OpenArchive,
  restoreDatabase,
  restoreFiles,
  verifyBackup,
} from "./restore.ts";
import type { BackupFiles, BackupSecrets } from "./sources.ts";
import { FolderPlace, writeFileWhole } from "./folder_place.ts";
import type { BackupInfo, BackupPlace } from "./place.ts";
import { backupName, defaultBackupName } from "./names.ts";
import { join } from "node:path";

export type { BackupInfo } from "./place.ts";
export { backupName, defaultBackupName } from "./names.ts";

/** What the backups of a server need. */
export interface BackupsOptions {
  /** The data directory (a restore from S3 downloads the archive there first). */
  dataDir: string;
  /** Where backups live (default: the folder `<dataDir>/backups`). */
  place?: BackupPlace;
  /** The id of the database (`mb_meta.database_id`): whose backups these are. */
  owner: () => Promise<string>;
  storage: Storage;
  files: BackupFiles;
  secrets: BackupSecrets;
  version: string;
  now: () => number;
  /** Write requests pause while a restore runs. */
  pause?: WritePause;
  /** After a restore: reload what the process keeps in memory. */
  restored?: () => Promise<void>;
}

/** A backup's bytes for a download. */
export interface BackupDownload {
  info: BackupInfo;
  body: ReadableStream<Uint8Array>;
}

/** The backups of one server. */
export class Backups {
  readonly place: BackupPlace;
  readonly #o: BackupsOptions;
  #busy: string | undefined;

  constructor(options: BackupsOptions) {
    this.#o = options;
    this.place = options.place ??
      new FolderPlace(join(options.dataDir, "backups"));
  }

  #claim(what: string): () => void {
    if (this.#busy) {
      throw new MoonbaseError(
        "conflict",
        `Cannot ${what}: ${this.#busy} is running; try again when it is done`,
      );
    }
    this.#busy = what;
    return () => {
      this.#busy = undefined;
    };
  }

  #source(): BackupSource {
    const o = this.#o;
    return {
      storage: o.storage,
      files: o.files,
      secrets: o.secrets,
      version: o.version,
      now: o.now,
    };
  }

  /** The backups of the place, newest first. */
  async list(): Promise<BackupInfo[]> {
    return (await this.place.list()).sort((a, b) =>
      b.created.localeCompare(a.created) || a.name.localeCompare(b.name)
    );
  }

  /** One backup's info; 404 when there is none of that name. */
  async info(name: string): Promise<BackupInfo> {
    const file = backupName(name);
    const info = await this.place.stat(file);
    if (!info) throw missing(file);
    return info;
  }

  /** A backup's bytes; 404 when there is none of that name. */
  async open(name: string): Promise<BackupDownload> {
    const info = await this.info(name);
    const body = await this.place.read(info.name);
    if (!body) throw missing(info.name);
    return { info, body };
  }

  /**
   * True when the backup was made by this database (the schedule's `keep`
   * deletes only those; in a folder, every backup is the data directory's).
   */
  async ours(name: string): Promise<boolean> {
    return await this.place.madeBy(backupName(name), await this.#o.owner());
  }

  /**
   * Makes a backup into the place (a failed one leaves nothing). 409 when
   * one of that name exists.
   */
  async create(
    name?: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupInfo & { manifest: BackupManifest }> {
    const file = name === undefined
      ? defaultBackupName(this.#o.now())
      : backupName(name);
    const release = this.#claim("a backup");
    try {
      if (await this.place.stat(file)) {
        throw new MoonbaseError(
          "conflict",
          `Cannot create backup ${file}: one of that name exists; choose another name or delete it first`,
        );
      }
      const manifest = await this.place.write(
        file,
        await this.#o.owner(),
        (out) => writeBackup(this.#source(), out, onProgress),
      ).catch((err) => {
        throw noSpace(err)
          ? new MoonbaseError(
            "insufficient_storage",
            "Cannot create backup: the disk is full; free space or delete old backups",
          )
          : err;
      });
      return { ...await this.info(file), manifest };
    } finally {
      release();
    }
  }

  /** Writes a backup to any path on disk (the CLI's `--out`). */
  async createAt(
    path: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupManifest> {
    const release = this.#claim("a backup");
    try {
      if (await exists(path)) {
        throw new MoonbaseError(
          "conflict",
          `Cannot create backup ${path}: the file exists`,
        );
      }
      return await writeFileWhole(
        path,
        (out) => writeBackup(this.#source(), out, onProgress),
      ).catch((err) => {
        throw noSpace(err)
          ? new MoonbaseError(
            "insufficient_storage",
            "Cannot create backup: the disk is full; free space or delete old backups",
          )
          : err;
      });
    } finally {
      release();
    }
  }

  /**
   * Stores an uploaded archive in the place, checked as it streams in: it
   * must read as a backup of a format this version restores (a damaged
   * upload is refused and nothing is stored).
   */
  async upload(
    name: string,
    body: AsyncIterable<Uint8Array>,
  ): Promise<BackupInfo> {
    const file = backupName(name);
    if (await this.place.stat(file)) {
      throw new MoonbaseError(
        "conflict",
        `Cannot upload backup ${file}: one of that name exists; rename the file or delete the other first`,
      );
    }
    await this.place.write(
      file,
      await this.#o.owner(),
      (out) => copyVerified(body, out),
    ).catch((err) => {
      throw noSpace(err)
        ? new MoonbaseError(
          "insufficient_storage",
          "Cannot upload backup: the disk is full; free space or delete old backups",
        )
        : err;
    });
    return await this.info(file);
  }

  /** Deletes a backup of the place; 404 when there is none of that name. */
  async remove(name: string): Promise<void> {
    const info = await this.info(name);
    await this.place.remove(info.name);
  }

  /**
   * Replaces the data with a backup's (one in the place, or any file for
   * the CLI): verified whole first, then files, then one transaction. Write
   * requests answer 503 meanwhile; a failure leaves the data as it was. A
   * backup in S3 is downloaded into the data directory first (and removed
   * after): the three reads then read the same bytes.
   */
  async restore(
    nameOrPath: string,
    options: { path?: boolean; onProgress?: (p: Progress) => void } = {},
  ): Promise<BackupManifest> {
    const file = options.path ? undefined : (await this.info(nameOrPath)).name;
    const release = this.#claim("a restore");
    let local: { path: string; release(): Promise<void> } | undefined;
    let resume: (() => void) | undefined;
    try {
      if (file === undefined) {
        local = { path: nameOrPath, release: () => Promise.resolve() };
      } else {
        local = await this.place.local(file, this.#o.dataDir);
        if (!local) throw missing(file);
      }
      const path = local.path;
      resume = this.#o.pause?.begin("a restore is replacing the data");
      const open: OpenArchive = () => openFile(path);
      const manifest = await verifyBackup(open);
      await restoreFiles(open, this.#o.files, options.onProgress);
      await restoreDatabase(
        open,
        { storage: this.#o.storage, secrets: this.#o.secrets },
        manifest,
        options.onProgress,
      );
      await this.#o.restored?.();
      return manifest;
    } catch (err) {
      throw noSpace(err)
        ? new MoonbaseError(
          "insufficient_storage",
          "Cannot restore backup: the disk is full; nothing was replaced",
        )
        : err;
    } finally {
      resume?.();
      await local?.release();
      release();
    }
  }
}

function missing(name: string): MoonbaseError {
  return new MoonbaseError(
    "not_found",
    `Cannot find backup ${name}: list them with GET /api/v1/sys/backups`,
  );
}

/**
 * Copies an uploaded archive into `out` while `verifyBackup` reads the same
 * bytes (a chunk at a time, nothing held beyond it); `out` is closed only
 * once the archive checked out, and aborted when it did not.
 */
async function copyVerified(
  body: AsyncIterable<Uint8Array>,
  out: WritableStream<Uint8Array>,
): Promise<BackupManifest> {
  const check = new TransformStream<Uint8Array, Uint8Array>();
  const feed = check.writable.getWriter();
  let settled = false;
  const verdict = verifyBackup(() => Promise.resolve(check.readable));
  const over = verdict.then(
    () => settled = true,
    () => settled = true,
  );
  const writer = out.getWriter();
  try {
    for await (const chunk of body) {
      await writer.write(chunk);
      if (settled) continue;
      // False when the check stopped reading (it failed, or the archive
      // ended before the bytes do): `verdict` then says how it went.
      const fed = feed.write(chunk).then(() => true, () => false);
      if (!await Promise.race([fed, over.then(() => false)])) {
        await verdict;
        settled = true;
      }
    }
    if (!settled) {
      // A close that fails means the check stopped reading: `verdict` says why.
      const closed = feed.close().then(() => {}, () => {});
      await Promise.race([closed, over]);
    }
    const manifest = await verdict;
    await writer.close();
    return manifest;
  } catch (err) {
    await feed.abort(err).catch(() => {
      // Ignored: the check ended already.
    });
    await writer.abort(err).catch(() => {
      // Ignored: the place ended the write already.
    });
    throw err;
  }
}

async function openFile(path: string): Promise<ReadableStream<Uint8Array>> {
  const f = await Deno.open(path, { read: true });
  return f.readable;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

function noSpace(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT" ||
    (err instanceof MoonbaseError && err.code === "insufficient_storage");
}
