/**
 * Stored files on disk: `<dataDir>/files/<entity id>/<stored name>`
 * (`--files local`, the default), thumbnails beside them. A file is created
 * new (never over another), written as its chunks come, and removed again
 * when the write fails; a thumbnail is written under a temporary name and
 * renamed.
 *
 * @module
 */

import { join } from "node:path";
import { diskFull } from "../errors.ts";
import {
  type ByteRange,
  type FileBackend,
  type FileInfo,
  type FilesState,
  LeftBehindError,
  type OpenedFile,
} from "./backend.ts";
import { type RangeAsked, resolveRange } from "./byte_range.ts";
import { ENTITY_ID, fileKey } from "./names.ts";

/** The file area of one data directory. */
export class DiskBackend implements FileBackend {
  readonly name = "local";
  /** `<dataDir>/files`. */
  readonly root: string;

  constructor(dataDir: string) {
    this.root = join(dataDir, "files");
  }

  /** The path of a stored file (throws for anything but an entity id and a stored name). */
  path(entityId: string, name: string): string {
    return join(this.root, fileKey(entityId, name));
  }

  check(): Promise<void> {
    // The data directory was checked (and made) before: nothing more to ask.
    return Promise.resolve();
  }

  state(): FilesState {
    return "ok";
  }

  async write(
    entityId: string,
    name: string,
    chunks: AsyncIterable<Uint8Array>,
    modified?: Date,
  ): Promise<void> {
    const path = this.path(entityId, name);
    let file: Deno.FsFile;
    try {
      await Deno.mkdir(join(this.root, entityId), { recursive: true });
      file = await Deno.open(path, {
        write: true,
        createNew: true,
        mode: 0o640,
      });
    } catch (err) {
      throw noSpace(err) ? diskFull() : err;
    }
    try {
      for await (const chunk of chunks) {
        let off = 0;
        while (off < chunk.length) off += await file.write(chunk.subarray(off));
      }
      if (modified) await file.utime(modified, modified);
    } catch (err) {
      file.close();
      const failure = noSpace(err) ? diskFull() : err;
      try {
        // createNew above: this file is the one this write made.
        await Deno.remove(path);
      } catch (gone) {
        if (!(gone instanceof Deno.errors.NotFound)) {
          throw new LeftBehindError(failure);
        }
      }
      throw failure;
    }
    file.close();
  }

  async put(
    entityId: string,
    name: string,
    bytes: Uint8Array,
    temp: string,
  ): Promise<void> {
    const path = this.path(entityId, name);
    const tempPath = this.path(entityId, temp);
    try {
      await Deno.mkdir(join(this.root, entityId), { recursive: true });
      await Deno.writeFile(tempPath, bytes, { createNew: true, mode: 0o640 });
      // A rename is whole: a reader opens the old file or the new one.
      await Deno.rename(tempPath, path);
    } catch (err) {
      const failure = noSpace(err) ? diskFull() : err;
      try {
        await Deno.remove(tempPath);
      } catch (gone) {
        if (!(gone instanceof Deno.errors.NotFound)) {
          throw new LeftBehindError(failure);
        }
      }
      throw failure;
    }
  }

  async stat(entityId: string, name: string): Promise<FileInfo | undefined> {
    const path = this.path(entityId, name);
    try {
      const info = await Deno.stat(path);
      if (!info.isFile) return undefined;
      return { size: info.size, modified: info.mtime ?? new Date(0) };
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
  }

  async read(
    entityId: string,
    name: string,
    range?: ByteRange,
  ): Promise<ReadableStream<Uint8Array> | undefined> {
    const path = this.path(entityId, name);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    return range
      ? rangeStream(file, range.start, range.end - range.start + 1)
      : file.readable;
  }

  async open(
    entityId: string,
    name: string,
    range?: RangeAsked,
  ): Promise<OpenedFile | undefined> {
    const path = this.path(entityId, name);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    let info: Deno.FileInfo;
    try {
      // The size of the file opened (not of a path that may change since).
      info = await file.stat();
    } catch (err) {
      file.close();
      throw err;
    }
    if (!info.isFile) {
      file.close();
      return undefined;
    }
    const size = info.size, modified = info.mtime ?? new Date(0);
    if (!range) return { size, modified, body: file.readable };
    const bytes = resolveRange(range, size);
    if (!bytes) {
      file.close();
      return { size, modified };
    }
    return {
      size,
      modified,
      range: bytes,
      body: rangeStream(file, bytes.start, bytes.end - bytes.start + 1),
    };
  }

  async remove(entityId: string, name: string): Promise<boolean> {
    const path = this.path(entityId, name);
    try {
      await Deno.remove(path);
      return true;
    } catch (err) {
      return err instanceof Deno.errors.NotFound;
    }
  }

  async removeEntity(entityId: string): Promise<void> {
    if (!ENTITY_ID.test(entityId)) return;
    try {
      // Not recursive: fails, and so keeps the directory, when anything is in it.
      await Deno.remove(join(this.root, entityId));
    } catch { /* not empty, or missing: it stays */ }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The disk (or the user's quota) is full. */
function noSpace(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

function rangeStream(
  file: Deno.FsFile,
  start: number,
  length: number,
): ReadableStream<Uint8Array> {
  let left = length;
  let positioned = false;
  const close = () => {
    try {
      file.close();
    } catch { /* closed */ }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!positioned) {
          await file.seek(start, Deno.SeekMode.Start);
          positioned = true;
        }
        if (left <= 0) {
          close();
          controller.close();
          return;
        }
        const buf = new Uint8Array(Math.min(64 * 1024, left));
        const n = await file.read(buf);
        if (n === null || n === 0) {
          close();
          controller.close();
          return;
        }
        left -= n;
        controller.enqueue(buf.subarray(0, n));
      } catch (err) {
        close();
        controller.error(err);
      }
    },
    cancel() {
      close();
    },
  }, { highWaterMark: 1 });
}
