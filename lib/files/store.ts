/**
 * Stored files, written once over either backend (lib/files/backend.ts:
 * the data directory's `files/`, or an S3 bucket). Uploads are streamed to
 * the backend while bytes are counted and the type is checked; a failed
 * request removes what it wrote. Every file written is first recorded in
 * the database's ledger (lib/files/ledger.ts), and only recorded files are
 * ever removed: a file of another database in the same directory or
 * bucket, or one put there by hand, is never touched. Thumbnails
 * (lib/files/thumbs.ts) are kept beside their originals, in the same
 * backend, and go with them.
 *
 * Over 350 lines, one idea: files written once over a backend; kept whole
 * because upload, serving and removal share the ledger and the backend.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import {
  type FileBackend,
  FilesUnavailableError,
  LeftBehindError,
} from "./backend.ts";
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

/** The stored files of one database, in one backend. */
export class FileStore {
  /** Where the bytes live. */
  readonly backend: FileBackend;
  /** The files this database wrote (the only ones it removes). */
  readonly ledger: FileLedger;
  /** Milliseconds since the epoch: the ledger's clock (the database's). */
  readonly now: () => number;
  #strayAt: number | undefined;
  #holds = 0;
  #deferred: { entityId: string; names: string[] }[] = [];

  /** `ledger` is the connected database's; `now` its clock. */
  constructor(
    backend: FileBackend,
    ledger: FileLedger,
    now: () => number = Date.now,
  ) {
    this.backend = backend;
    this.ledger = ledger;
    this.now = now;
  }

  /** True when `name` is a stored name (only those are ever looked up). */
  isStoredName(name: string): boolean {
    return STORED_NAME.test(name);
  }

  /**
   * When (`now()`) a file was last left behind that a sweep must remove
   * (a removal or a failed upload the store did not answer), or undefined;
   * `swept(t)` clears it when no file was left since `t`.
   */
  get strayAt(): number | undefined {
    return this.#strayAt;
  }

  /** A sweep covered every file left behind up to `t`. */
  swept(t: number): void {
    if (this.#strayAt !== undefined && this.#strayAt <= t) {
      this.#strayAt = undefined;
    }
  }

  #stray(): void {
    this.#strayAt = this.now();
  }

  /**
   * True when `name` is a thumbnail's name (lib/files/names.ts `thumbName`):
   * a file derived from a stored one, kept beside it in the same store.
   */
  isDerivedName(name: string): boolean {
    return originalOf(name) !== undefined;
  }

  /**
   * The first `length` bytes of a stored file (fewer if it is shorter), or
   * undefined when it is missing. A store that cannot be reached throws its
   * 503.
   */
  async head(
    entityId: string,
    name: string,
    length: number,
  ): Promise<Uint8Array | undefined> {
    if (!this.isStoredName(name)) return undefined;
    const info = await this.backend.stat(entityId, name);
    if (!info) return undefined;
    if (info.size === 0 || length <= 0) return new Uint8Array(0);
    const body = await this.backend.read(entityId, name, {
      start: 0,
      end: Math.min(length, info.size) - 1,
    });
    return body && await collect(body, length);
  }

  /**
   * A stored file's bytes, or undefined when it is missing or larger than
   * `maxBytes`. A store that cannot be reached throws its 503.
   */
  async read(
    entityId: string,
    name: string,
    maxBytes: number,
  ): Promise<Uint8Array<ArrayBuffer> | undefined> {
    if (!this.isStoredName(name)) return undefined;
    const info = await this.backend.stat(entityId, name);
    if (!info || info.size > maxBytes) return undefined;
    const body = await this.backend.read(entityId, name);
    const bytes = body && await collect(body, maxBytes + 1);
    return bytes && bytes.length <= maxBytes ? bytes : undefined;
  }

  /**
   * Whether a thumbnail (`isDerivedName`) is in the store. A store that
   * cannot be reached throws its 503.
   */
  async hasDerived(entityId: string, name: string): Promise<boolean> {
    if (!this.isDerivedName(name)) return false;
    return await this.backend.stat(entityId, name) !== undefined;
  }

  /**
   * Writes a thumbnail (a file derived from a stored one, named by
   * `thumbName`) whole, in the same store as its original: recorded in the
   * ledger first, then written so that a reader never sees half of it (on
   * disk under a temporary name, itself recorded, then renamed; on S3 one
   * PUT). Two writers of the same thumbnail both succeed (the same bytes,
   * the last write wins). Removing the original removes it (`remove`).
   */
  async writeDerived(
    entityId: string,
    name: string,
    bytes: Uint8Array,
  ): Promise<void> {
    if (!this.isDerivedName(name)) {
      throw new Error(`Cannot write ${name}: not a thumbnail's name`);
    }
    // Kept even if this write fails: another writer of the same thumbnail
    // may have recorded it too, and a row without its file is harmless.
    await this.ledger.ensure(entityId, name);
    const temp = tempName(name);
    // Recorded too: a crash leaves a file the sweep knows to be its own
    // (no record references a temporary name).
    await this.ledger.record(entityId, temp);
    try {
      await this.backend.put(entityId, name, bytes, temp);
    } catch (err) {
      if (err instanceof LeftBehindError) {
        // The temporary file stays recorded for the sweep.
        this.#stray();
        throw err.cause;
      }
      // The store did not answer: the thumbnail's row stays, and the sweep
      // removes it with its original.
      if (err instanceof FilesUnavailableError) this.#stray();
      await this.#forget(entityId, [temp]);
      throw err;
    }
    await this.#forget(entityId, [temp]);
  }

  /**
   * Removes a thumbnail this process wrote whose original is gone (removed
   * while the thumbnail was made), and its row: the original's removal may
   * have forgotten the row before the thumbnail was written. Never throws: a
   * thumbnail it could not remove stays recorded for the sweep.
   */
  async removeDerived(entityId: string, name: string): Promise<void> {
    if (!this.isDerivedName(name)) return;
    if (await this.backend.remove(entityId, name)) {
      await this.#forget(entityId, [name]);
    } else this.#stray();
  }

  /** Streams one file part to the backend under a new stored name. */
  async write(
    entityId: string,
    part: Part,
    budget: UploadBudget,
    mimeTypes?: readonly string[],
  ): Promise<StoredFile> {
    const name = storedName(part.filename ?? "");
    // Recorded before it exists: a crash from here on leaves a file (or a
    // row) the sweep knows to be this database's own.
    await this.ledger.record(entityId, name);
    let size = 0, head: Uint8Array = new Uint8Array(0), type = "";
    async function* checked(): AsyncGenerator<Uint8Array> {
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
        yield chunk;
      }
      // Before the last bytes are committed (an S3 PUT is sent after this).
      if (!type) type = checkType(part, head, mimeTypes);
    }
    try {
      await this.backend.write(entityId, name, checked());
    } catch (err) {
      if (err instanceof LeftBehindError) {
        this.#stray();
        throw err.cause;
      }
      // The store did not answer: whether an object landed is unknown. The
      // row stays, and a sweep removes it (and the object) later.
      if (err instanceof FilesUnavailableError) this.#stray();
      else await this.#forget(entityId, [name]);
      throw err;
    }
    budget.remaining -= size;
    return { name, size, type };
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
    if (!this.isStoredName(name)) return undefined;
    const info = await this.backend.stat(entityId, name);
    if (!info) return undefined;
    const body = await this.backend.read(entityId, name);
    return body ? { size: info.size, body } : undefined;
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
    if (!this.isStoredName(name)) {
      throw new MoonbaseError(
        "invalid",
        `Cannot restore file ${name}: not a stored file name`,
      );
    }
    const there = await this.backend.stat(entityId, name);
    if (there) {
      if (there.size === size) return false;
      throw new MoonbaseError(
        "conflict",
        `Cannot restore file ${entityId}/${name}: another file of that name is in the file store`,
      );
    }
    await this.ledger.adopt(entityId, [name]);
    try {
      await this.backend.write(entityId, name, body);
    } catch (err) {
      // The row stays (adopted: maybe an older one): the sweep drops it
      // once no record references the file.
      if (err instanceof LeftBehindError) {
        this.#stray();
        throw err.cause;
      }
      if (err instanceof FilesUnavailableError) this.#stray();
      throw err;
    }
    return true;
  }

  /**
   * Deletes stored files of an entity that the ledger records (others, and
   * missing ones, are left alone), and the recorded thumbnails of each;
   * returns how many files were removed. Never throws: a file it could not
   * remove stays recorded, and a sweep tries again once no record
   * references it (or its original).
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
      if (await this.backend.remove(entityId, n)) gone.push(n);
      else this.#stray();
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
    await this.backend.removeEntity(entityId);
  }

  async #forget(entityId: string, names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    // A row left behind names a missing file: the sweep drops it later.
    await this.ledger.forget(entityId, names).catch(() => {});
  }
}

/**
 * A stream's bytes, at most `max` of them (the rest is not read), or
 * undefined when it breaks.
 */
async function collect(
  body: ReadableStream<Uint8Array>,
  max: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // A broken or stalled read: the caller treats the file as missing.
    return undefined;
  } finally {
    // Stops the download (and closes the file) when `max` was reached early.
    await reader.cancel().catch(() => {});
  }
  const out = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const c of chunks) {
    if (at >= out.length) break;
    const part = c.subarray(0, out.length - at);
    out.set(part, at);
    at += part.length;
  }
  return out;
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
