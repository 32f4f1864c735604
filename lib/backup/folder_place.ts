/**
 * Backups in a folder (`--backups local`, the default: `<dataDir>/backups`):
 * one file each, written under a temporary name beside it and renamed when
 * complete, so a failed backup leaves nothing. `created` is the file's
 * modification time.
 *
 * @module
 */

import { join } from "node:path";
import type { FilesState } from "../files/backend.ts";
import type { BackupInfo, BackupPlace, LocalBackup } from "./place.ts";
import { isBackupName } from "./names.ts";

/**
 * Writes a file at `path` through a temporary file beside it (renamed when
 * `fill` succeeded; removed when anything fails): what is at `path` is
 * always a whole file. `fill` writes into `out` and closes it.
 */
export async function writeFileWhole<T>(
  path: string,
  fill: (out: WritableStream<Uint8Array>) => Promise<T>,
): Promise<T> {
  const temp = `${path}.${crypto.randomUUID().slice(0, 8)}.partial`;
  const file = await Deno.open(temp, {
    write: true,
    createNew: true,
    mode: 0o600,
  });
  try {
    const value = await fill(file.writable);
    await Deno.rename(temp, path);
    return value;
  } catch (err) {
    try {
      file.close();
    } catch {
      // Ignored: the stream closed it already.
    }
    // The temporary file is this write's own.
    await Deno.remove(temp).catch(() => {
      // Ignored: it is gone already.
    });
    throw err;
  }
}

/** A folder of backups. */
export class FolderPlace implements BackupPlace {
  readonly name = "local";
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  where(name: string): string {
    return join(this.dir, name);
  }

  check(): Promise<void> {
    // Made on the first backup, in the data directory checked before.
    return Promise.resolve();
  }

  state(): FilesState {
    return "ok";
  }

  async list(): Promise<BackupInfo[]> {
    const out: BackupInfo[] = [];
    try {
      for await (const e of Deno.readDir(this.dir)) {
        if (!e.isFile || !isBackupName(e.name)) continue;
        const info = await this.stat(e.name);
        if (info) out.push(info);
      }
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return [];
      throw err;
    }
    return out;
  }

  async stat(name: string): Promise<BackupInfo | undefined> {
    try {
      const st = await Deno.stat(join(this.dir, name));
      if (!st.isFile) return undefined;
      return {
        name,
        size: st.size,
        created: (st.mtime ?? new Date(0)).toISOString(),
      };
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
  }

  async write<T>(
    name: string,
    _owner: string,
    fill: (out: WritableStream<Uint8Array>) => Promise<T>,
  ): Promise<T> {
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    return await writeFileWhole(join(this.dir, name), fill);
  }

  async read(name: string): Promise<ReadableStream<Uint8Array> | undefined> {
    try {
      return (await Deno.open(join(this.dir, name), { read: true })).readable;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
  }

  async local(name: string): Promise<LocalBackup | undefined> {
    if (!await this.stat(name)) return undefined;
    return {
      path: join(this.dir, name),
      release: () => Promise.resolve(),
    };
  }

  madeBy(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async remove(name: string): Promise<void> {
    try {
      await Deno.remove(join(this.dir, name));
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
