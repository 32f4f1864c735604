/**
 * Files on disk: `<dataDir>/files/<entity id>/<stored name>`. Uploads are
 * streamed to their final path while bytes are counted; a failed request
 * deletes what it wrote; `sweep` removes files no record references (after
 * a crash).
 *
 * @module
 */

import { join } from "node:path";
import { diskFull, MoonbaseError } from "../errors.ts";
import type { Part } from "./multipart.ts";
import { STORED_NAME, storedName } from "./names.ts";
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

  /** Files live under `<dataDir>/files`. */
  constructor(dataDir: string) {
    this.root = join(dataDir, "files");
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

  /** Streams one file part to disk under a new stored name. */
  async write(
    entityId: string,
    part: Part,
    budget: UploadBudget,
    mimeTypes?: readonly string[],
  ): Promise<StoredFile> {
    const name = storedName(part.filename ?? "");
    const path = join(this.dir(entityId), name);
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
      await Deno.remove(path).catch(() => {});
      throw noSpace(err) ? diskFull() : err;
    } finally {
      try {
        file.close();
      } catch { /* already closed */ }
    }
  }

  /** Deletes stored files (missing ones are ignored). */
  async remove(entityId: string, names: readonly string[]): Promise<void> {
    for (const n of names) {
      const p = this.path(entityId, n);
      if (p) await Deno.remove(p).catch(() => {});
    }
  }

  /** Deletes an entity's whole file directory. */
  async removeEntity(entityId: string): Promise<void> {
    await Deno.remove(this.dir(entityId), { recursive: true }).catch(() => {});
  }

  /**
   * Deletes every file of the entity not in `referenced` and older than
   * `minAgeMs` (so uploads still in flight on another instance survive).
   */
  async sweep(
    entityId: string,
    referenced: ReadonlySet<string>,
    minAgeMs = 0,
  ): Promise<number> {
    let n = 0;
    const cutoff = Date.now() - minAgeMs;
    try {
      for await (const e of Deno.readDir(this.dir(entityId))) {
        if (!e.isFile || referenced.has(e.name)) continue;
        if (minAgeMs > 0) {
          const info = await Deno.stat(join(this.dir(entityId), e.name)).catch(
            () => undefined,
          );
          if (!info || (info.mtime?.getTime() ?? 0) > cutoff) continue;
        }
        await Deno.remove(join(this.dir(entityId), e.name)).catch(() => {});
        n++;
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    return n;
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
