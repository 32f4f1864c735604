/**
 * Files on disk: `<dataDir>/files/<entity id>/<stored name>`. Uploads are
 * streamed to their final path while bytes are counted; a failed request
 * deletes what it wrote. Every file written is first recorded in the
 * database's ledger (lib/files/ledger.ts), and only recorded files are ever
 * removed: a file of another database in the same data directory, or one
 * put there by hand, is never touched.
 *
 * @module
 */

import { join } from "node:path";
import { diskFull, MoonbaseError } from "../errors.ts";
import type { FileLedger } from "./ledger.ts";
import type { Part } from "./multipart.ts";
import {
  isFileName,
  originalOf,
  STORED_NAME,
  storedName,
  tempName,
} from "./names.ts";
import { sniff, typeAllowed } from "./sniff.ts";

/** A file written by an upload. */
export interface StoredFile {
  name: string;
  size: number;
  type: string;
}

/** Byte budget shared by every file of one request. */
export interface UploadBudget {
  maxFile: number;
  remaining: number;
}

/** The file area of one data directory. */
export class FileStore {
  readonly root: string;
  /** The files this database wrote (the only ones it removes). */
  readonly ledger: FileLedger;
  #holds = 0;
  #deferred: { entityId: string; names: string[] }[] = [];

  /** Files live under `<dataDir>/files`; `ledger` is the connected database's. */
  constructor(dataDir: string, ledger: FileLedger) {
    this.root = join(dataDir, "files");
    this.ledger = ledger;
  }

  /** Directory of an entity's files. */
  dir(entityId: string): string {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(entityId)) {
      throw new Error(`Cannot use entity id ${entityId} as a directory`);
    }
    return join(this.root, entityId);
  }

  /** Path of a stored file, or undefined when the name is not a stored name. */
  path(entityId: string, name: string): string | undefined {
    return STORED_NAME.test(name) ? join(this.dir(entityId), name) : undefined;
  }

  /**
   * Path of a thumbnail (lib/files/names.ts `thumbName`), or undefined when
   * the name is not one. Thumbnails live beside their originals.
   */
  derivedPath(entityId: string, name: string): string | undefined {
    return originalOf(name) !== undefined
      ? join(this.dir(entityId), name)
      : undefined;
  }

  /**
   * The first `length` bytes of a stored file (fewer if it is shorter), or
   * undefined when it is missing.
   */
  async head(
    entityId: string,
    name: string,
    length: number,
  ): Promise<Uint8Array | undefined> {
    const path = this.path(entityId, name);
    if (!path) return undefined;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch {
      return undefined;
    }
    try {
      const buf = new Uint8Array(length);
      let n = 0;
      while (n < length) {
        const got = await file.read(buf.subarray(n));
        if (got === null) break;
        n += got;
      }
      return buf.subarray(0, n);
    } finally {
      file.close();
    }
  }

  /**
   * A stored file's bytes, or undefined when it is missing or larger than
   * `maxBytes`.
   */
  async read(
    entityId: string,
    name: string,
    maxBytes: number,
  ): Promise<Uint8Array<ArrayBuffer> | undefined> {
    const path = this.path(entityId, name);
    if (!path) return undefined;
    try {
      const info = await Deno.stat(path);
      if (!info.isFile || info.size > maxBytes) return undefined;
      const bytes = await Deno.readFile(path);
      return bytes.length > maxBytes ? undefined : bytes;
    } catch {
      return undefined;
    }
  }

  /**
   * Writes a thumbnail (a file derived from a stored one, named by
   * `thumbName`) whole: recorded in the ledger first, written under a
   * temporary name, then renamed, so a reader never sees half of it. Two
   * writers of the same thumbnail both succeed (the same bytes, the last
   * rename wins). Removing the original removes it (`remove`).
   */
  async writeDerived(
    entityId: string,
    name: string,
    bytes: Uint8Array,
  ): Promise<void> {
    const path = this.derivedPath(entityId, name);
    if (!path) throw new Error(`Cannot write ${name}: not a thumbnail's name`);
    // Kept even if this write fails: another writer of the same thumbnail
    // may have recorded it too, and a row without its file is harmless.
    await this.ledger.ensure(entityId, name);
    const temp = tempName(name);
    const tempPath = join(this.dir(entityId), temp);
    // Recorded too: a crash leaves a file the sweep knows to be its own
    // (no record references a temporary name).
    await this.ledger.record(entityId, temp);
    try {
      await Deno.mkdir(this.dir(entityId), { recursive: true });
      await Deno.writeFile(tempPath, bytes, { createNew: true, mode: 0o640 });
      await Deno.rename(tempPath, path);
    } catch (err) {
      await removeFile(tempPath);
      throw noSpace(err) ? diskFull() : err;
    } finally {
      await this.#forget(entityId, [temp]);
    }
  }

  /** Streams one file part to disk under a new stored name. */
  async write(
    entityId: string,
    part: Part,
    budget: UploadBudget,
    mimeTypes?: readonly string[],
  ): Promise<StoredFile> {
    const name = storedName(part.filename ?? "");
    const path = join(this.dir(entityId), name);
    // Recorded before it exists: a crash from here on leaves a file (or a
    // row) the start-up sweep knows to be this database's own.
    await this.ledger.record(entityId, name);
    let file: Deno.FsFile;
    try {
      await Deno.mkdir(this.dir(entityId), { recursive: true });
      file = await Deno.open(path, {
        write: true,
        createNew: true,
        mode: 0o640,
      });
    } catch (err) {
      await this.#forget(entityId, [name]);
      throw noSpace(err) ? diskFull() : err;
    }
    let size = 0, head: Uint8Array = new Uint8Array(0), type = "";
    try {
      for await (const chunk of part.body()) {
        size += chunk.length;
        if (size > budget.maxFile || size > budget.remaining) {
          throw new MoonbaseError(
            "too_large",
            `Cannot store ${part.name}: larger than the upload limit`,
          );
        }
        if (!type) {
          head = concat(head, chunk.subarray(0, 512 - head.length));
          if (head.length >= 512) type = checkType(part, head, mimeTypes);
        }
        let off = 0;
        while (off < chunk.length) off += await file.write(chunk.subarray(off));
      }
      if (!type) type = checkType(part, head, mimeTypes);
      budget.remaining -= size;
      return { name, size, type };
    } catch (err) {
      file.close();
      // createNew above: this file is the one this request made.
      if (await removeFile(path)) await this.#forget(entityId, [name]);
      throw noSpace(err) ? diskFull() : err;
    } finally {
      try {
        file.close();
      } catch { /* already closed */ }
    }
  }

  /**
   * Defers removals (`remove`) until the returned function is called, so
   * that a backup reading the files of its snapshot finds them all; holds
   * nest, and the deferred removals run when the last one is released.
   */
  hold(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds > 0) return;
      const deferred = this.#deferred.splice(0);
      for (const d of deferred) {
        // Never throws (see `remove`): a file left stays recorded for the sweep.
        this.remove(d.entityId, d.names);
      }
    };
  }

  /**
   * The bytes and size of a stored file, or undefined when it is missing
   * (for a backup, which reads every recorded file).
   */
  async stream(
    entityId: string,
    name: string,
  ): Promise<{ size: number; body: AsyncIterable<Uint8Array> } | undefined> {
    const path = this.path(entityId, name);
    if (!path) return undefined;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    const { size } = await file.stat();
    return { size, body: file.readable };
  }

  /**
   * Writes a file under its stored name (a restore puts back the files of a
   * backup): recorded first, like an upload; a file already there with the
   * same name and size is kept (it is that file); any other is a conflict.
   * Returns false when the file was already there.
   */
  async writeNamed(
    entityId: string,
    name: string,
    size: number,
    body: AsyncIterable<Uint8Array>,
  ): Promise<boolean> {
    const path = this.path(entityId, name);
    if (!path) {
      throw new MoonbaseError(
        "invalid",
        `Cannot restore file ${name}: not a stored file name`,
      );
    }
    try {
      const st = await Deno.stat(path);
      if (st.isFile && st.size === size) return false;
      throw new MoonbaseError(
        "conflict",
        `Cannot restore file ${entityId}/${name}: another file of that name is in the data directory`,
      );
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    await this.ledger.adopt(entityId, [name]);
    let file: Deno.FsFile;
    try {
      await Deno.mkdir(this.dir(entityId), { recursive: true });
      file = await Deno.open(path, {
        write: true,
        createNew: true,
        mode: 0o640,
      });
    } catch (err) {
      throw noSpace(err) ? diskFull() : err;
    }
    try {
      for await (const chunk of body) {
        let off = 0;
        while (off < chunk.length) off += await file.write(chunk.subarray(off));
      }
    } catch (err) {
      file.close();
      // createNew above: this file is the one this restore made.
      await removeFile(path);
      throw noSpace(err) ? diskFull() : err;
    }
    file.close();
    return true;
  }

  /**
   * Deletes stored files of an entity that the ledger records (others, and
   * missing ones, are left alone), and the recorded thumbnails of each;
   * returns how many files were removed. Never throws: a file it could not
   * remove stays recorded, and the start-up sweep tries again once no
   * record references it (or its original).
   */
  async remove(entityId: string, names: readonly string[]): Promise<number> {
    const valid = names.filter((n) => isFileName(n));
    if (valid.length === 0) return 0;
    if (this.#holds > 0) {
      // A backup is reading: these go when it is done (see `hold`).
      this.#deferred.push({ entityId, names: valid });
      return valid.length;
    }
    let recorded: string[];
    try {
      recorded = await this.ledger.recorded(entityId, valid);
      const originals = valid.filter((n) => STORED_NAME.test(n));
      recorded.push(...await this.ledger.derivedOf(entityId, originals));
    } catch {
      // The database is unreachable: remove nothing (the sweep will).
      return 0;
    }
    const gone: string[] = [];
    for (const n of new Set(recorded.filter(isFileName))) {
      if (await removeFile(join(this.dir(entityId), n))) gone.push(n);
    }
    await this.#forget(entityId, gone);
    return gone.length;
  }

  /**
   * Deletes the recorded files of an entity (a dropped one), then its
   * directory if that is left empty: files the ledger does not record stay.
   */
  async removeEntity(entityId: string): Promise<void> {
    let names: string[];
    try {
      names = await this.ledger.of(entityId);
    } catch {
      // The database is unreachable: the sweep removes them at a later start.
      return;
    }
    await this.remove(entityId, names);
    await this.removeEmptyDir(entityId);
  }

  /** Removes an entity's directory when it is empty (a non-empty one stays). */
  async removeEmptyDir(entityId: string): Promise<void> {
    try {
      // Not recursive: fails, and so keeps the directory, when anything is in it.
      await Deno.remove(this.dir(entityId));
    } catch { /* not empty, missing, or not an entity id: it stays */ }
  }

  async #forget(entityId: string, names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    // A row left behind names a missing file: the sweep drops it later.
    await this.ledger.forget(entityId, names).catch(() => {});
  }
}

/** Removes one file; true when it is gone (removed now, or missing). */
async function removeFile(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
    return true;
  } catch (err) {
    return err instanceof Deno.errors.NotFound;
  }
}

/** The disk (or the user's quota) is full. */
function noSpace(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function checkType(
  part: Part,
  head: Uint8Array,
  allowed?: readonly string[],
): string {
  const type = sniff(head);
  if (allowed && allowed.length > 0 && !typeAllowed(type, allowed)) {
    throw new MoonbaseError(
      "invalid",
      `Cannot store ${part.name}: file type ${type} is not allowed`,
      {
        fields: {
          [part.name]: {
            code: "invalid_type",
            message: `File type ${type} is not allowed`,
          },
        },
      },
    );
  }
  return type;
}
