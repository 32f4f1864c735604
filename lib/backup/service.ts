/**
 * The backups of a server: archives in `<dataDir>/backups`, made, listed,
 * read, uploaded, deleted and restored (the admin API and the CLI both use
 * this). Names are checked here, once: a name is letters, digits, `_`, `-`
 * and `.`, ends in `.tar.gz` (added when missing), and never escapes the
 * folder. One backup or restore runs at a time per process.
 *
 * Over 350 lines, one idea: the backups folder; kept whole because every
 * operation goes through the same name checks and the one-at-a-time lock.
 *
 * @module
 */

import { join } from "node:path";
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

/** A backup in the folder. */
export interface BackupInfo {
  name: string;
  size: number;
  /** ISO 8601 time the file was written. */
  created: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}\.tar\.gz$/;

/**
 * The file name of a backup: `name` with `.tar.gz` added when missing; 400
 * for anything that is not a plain name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backupName } from "moonbase/lib/backup/service.ts";
 * assert.equal(backupName("nightly"), "nightly.tar.gz");
 * assert.equal(backupName("a.tar.gz"), "a.tar.gz");
 * assert.throws(() => backupName("../x"), /Cannot use backup name/);
 * assert.throws(() => backupName(".hidden"), /Cannot use backup name/);
 * ```
 */
export function backupName(name: string): string {
  const full = name.endsWith(".tar.gz") ? name : `${name}.tar.gz`;
  if (!NAME.test(full) || full.includes("..")) {
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

/** What the backups of a server need. */
export interface BackupsOptions {
  dataDir: string;
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

/** The backups of one server. */
export class Backups {
  readonly dir: string;
  readonly #o: BackupsOptions;
  #busy: string | undefined;

  constructor(options: BackupsOptions) {
    this.#o = options;
    this.dir = join(options.dataDir, "backups");
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

  /** The backups in the folder, newest first. */
  async list(): Promise<BackupInfo[]> {
    const out: BackupInfo[] = [];
    try {
      for await (const e of Deno.readDir(this.dir)) {
        if (!e.isFile || !NAME.test(e.name)) continue;
        const st = await Deno.stat(join(this.dir, e.name));
        out.push({
          name: e.name,
          size: st.size,
          created: (st.mtime ?? new Date(0)).toISOString(),
        });
      }
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return [];
      throw err;
    }
    return out.sort((a, b) =>
      b.created.localeCompare(a.created) || a.name.localeCompare(b.name)
    );
  }

  /** One backup's info; 404 when there is none of that name. */
  async info(name: string): Promise<BackupInfo> {
    const file = backupName(name);
    try {
      const st = await Deno.stat(join(this.dir, file));
      if (!st.isFile) throw new Deno.errors.NotFound();
      return {
        name: file,
        size: st.size,
        created: (st.mtime ?? new Date(0)).toISOString(),
      };
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) {
        throw new MoonbaseError(
          "not_found",
          `Cannot find backup ${file}: list them with GET /api/v1/sys/backups`,
        );
      }
      throw err;
    }
  }

  /** The path of an existing backup. */
  async path(name: string): Promise<string> {
    const info = await this.info(name);
    return join(this.dir, info.name);
  }

  /**
   * Makes a backup into the folder (written under a temporary name, renamed
   * when complete: a failed one leaves nothing). 409 when one of that name
   * exists.
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
      await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
      const final = join(this.dir, file);
      if (await exists(final)) {
        throw new MoonbaseError(
          "conflict",
          `Cannot create backup ${file}: one of that name exists; choose another name or delete it first`,
        );
      }
      const manifest = await this.#writeTo(final, onProgress);
      return { ...await this.info(file), manifest };
    } finally {
      release();
    }
  }

  /** Writes a backup to `path` (through a temporary file in the same folder). */
  async #writeTo(
    path: string,
    onProgress?: (p: Progress) => void,
  ): Promise<BackupManifest> {
    const temp = `${path}.${crypto.randomUUID().slice(0, 8)}.partial`;
    const out = await Deno.open(temp, {
      write: true,
      createNew: true,
      mode: 0o600,
    });
    try {
      const manifest = await writeBackup(
        this.#source(),
        out.writable,
        onProgress,
      );
      await Deno.rename(temp, path);
      return manifest;
    } catch (err) {
      // The temporary file is this backup's own.
      await Deno.remove(temp).catch(() => {
        // Ignored: it was never made or is gone already.
      });
      throw noSpace(err)
        ? new MoonbaseError(
          "insufficient_storage",
          "Cannot create backup: the disk is full; free space or delete old backups",
        )
        : err;
    }
  }

  /** Writes a backup to any path (the CLI's `--out`). */
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
      return await this.#writeTo(path, onProgress);
    } finally {
      release();
    }
  }

  /**
   * Stores an uploaded archive in the folder, after checking it reads as a
   * backup of a format this version restores (a damaged upload is refused
   * and removed).
   */
  async upload(
    name: string,
    body: AsyncIterable<Uint8Array>,
  ): Promise<BackupInfo> {
    const file = backupName(name);
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const final = join(this.dir, file);
    if (await exists(final)) {
      throw new MoonbaseError(
        "conflict",
        `Cannot upload backup ${file}: one of that name exists; rename the file or delete the other first`,
      );
    }
    const temp = `${final}.${crypto.randomUUID().slice(0, 8)}.partial`;
    const out = await Deno.open(temp, {
      write: true,
      createNew: true,
      mode: 0o600,
    });
    try {
      try {
        for await (const chunk of body) {
          let off = 0;
          while (off < chunk.length) {
            off += await out.write(chunk.subarray(off));
          }
        }
      } finally {
        out.close();
      }
      await verifyBackup(() => openFile(temp));
      await Deno.rename(temp, final);
    } catch (err) {
      // The temporary file is this upload's own.
      await Deno.remove(temp).catch(() => {
        // Ignored: it is gone already.
      });
      throw noSpace(err)
        ? new MoonbaseError(
          "insufficient_storage",
          "Cannot upload backup: the disk is full; free space or delete old backups",
        )
        : err;
    }
    return this.info(file);
  }

  /** Deletes a backup of the folder. */
  async remove(name: string): Promise<void> {
    const path = await this.path(name);
    await Deno.remove(path);
  }

  /**
   * Replaces the data with a backup's (one in the folder, or any file for
   * the CLI): verified whole first, then files, then one transaction. Write
   * requests answer 503 meanwhile; a failure leaves the data as it was.
   */
  async restore(
    nameOrPath: string,
    options: { path?: boolean; onProgress?: (p: Progress) => void } = {},
  ): Promise<BackupManifest> {
    const path = options.path ? nameOrPath : await this.path(nameOrPath);
    const release = this.#claim("a restore");
    const resume = this.#o.pause?.begin("a restore is replacing the data");
    try {
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
      release();
    }
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
