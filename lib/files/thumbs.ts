/**
 * Thumbnails of stored images (`GET /api/files/<entity>/<name>?thumb=…`):
 * which size a caller may have, and the thumbnail file to serve, made once
 * and stored beside its original.
 *
 * A size the file's field lists in `thumbs` is made for anyone who may read
 * the file; any other size only for an admin (a size costs CPU once and
 * disk for good). A caller who may not have a thumbnail, a file that is not
 * a JPEG, PNG, GIF or WebP, and an image that cannot be made into one
 * (broken, above the pixel budget, too slow) get the original. The caller's
 * right to read the file is checked before, as for the original
 * (routes/files.ts).
 *
 * The storage seam: `head`, `read`, `hasDerived` and `writeDerived` of the
 * file store (over its backend: a thumbnail is one more file of the entity,
 * on disk or in S3, served like its original), and the pool
 * (lib/files/thumb_pool.ts) that turns an original's bytes and a size into
 * the thumbnail's bytes. A store that cannot be reached is a 503, as for
 * the original.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import { MoonbaseError } from "../errors.ts";
import type { FieldDef } from "../schema/types.ts";
import { parseThumbSize, type ThumbSize } from "../schema/thumb_sizes.ts";
import { thumbName } from "./names.ts";
import {
  imageFormat,
  THUMB_EXTENSION,
  type ThumbLimits,
} from "./thumb_image.ts";
import { ThumbPool } from "./thumb_pool.ts";
import type { FileStore } from "./store.ts";

/** Limits of thumbnail making in one isolate. */
export interface ThumbsConfig extends ThumbLimits {
  /** Thumbnails made at once. */
  concurrency: number;
  /** Largest original read to make a thumbnail of, in bytes. */
  maxBytes: number;
}

/** A file to serve: its name in the entity's files (a thumbnail's). */
export interface ServedFile {
  name: string;
}

/** How long a failed thumbnail is not tried again (ms). */
const RETRY_AFTER_FAILURE_MS = 10 * 60_000;
const FAILURES_KEPT = 1000;

/** The thumbnails of one file store. */
export class Thumbnails {
  readonly #store: FileStore;
  readonly #pool: ThumbPool;
  readonly #maxBytes: number;
  /** Thumbnails being made now (one making per thumbnail in this isolate). */
  readonly #making = new Map<string, Promise<boolean>>();
  /** Thumbnails that could not be made, until when they are not retried. */
  readonly #failed = new Map<string, number>();

  /** Thumbnails of `store`'s files, made within `config`. */
  constructor(store: FileStore, config: ThumbsConfig) {
    this.#store = store;
    this.#maxBytes = config.maxBytes;
    this.#pool = new ThumbPool({
      concurrency: config.concurrency,
      queue: config.concurrency * 4,
      limits: {
        maxPixels: config.maxPixels,
        maxSide: config.maxSide,
        deadlineMs: config.deadlineMs,
      },
    });
  }

  /**
   * The file to serve for `?thumb=<text>` on the stored file `name` of an
   * entity, held in `field`, to `auth`: the thumbnail, or undefined for the
   * original. A malformed size is a 400; a full queue a 503.
   */
  async pick(
    entityId: string,
    name: string,
    field: FieldDef,
    text: string,
    auth: AuthValue | undefined,
  ): Promise<ServedFile | undefined> {
    const size = parseThumbSize(text);
    if (typeof size === "string") {
      throw new MoonbaseError("invalid", `Cannot make a thumbnail: ${size}`);
    }
    const listed = field.thumbs?.includes(size.text) ?? false;
    if (!listed && auth?.type !== "admin") return undefined;
    return await this.thumbnail(entityId, name, size);
  }

  /** The thumbnail of `size` of a stored file, made if need be; undefined: none. */
  async thumbnail(
    entityId: string,
    original: string,
    size: ThumbSize,
  ): Promise<ServedFile | undefined> {
    const head = await this.#store.head(entityId, original, 16);
    const format = head && imageFormat(head);
    if (!format) return undefined;
    const name = thumbName(original, size.text, THUMB_EXTENSION[format]);
    if (!this.#store.isDerivedName(name)) return undefined;
    if (await this.#store.hasDerived(entityId, name)) return { name };
    const key = `${entityId}/${name}`;
    const until = this.#failed.get(key);
    if (until !== undefined) {
      if (until > Date.now()) return undefined;
      this.#failed.delete(key);
    }
    let making = this.#making.get(key);
    if (!making) {
      making = this.#make(entityId, original, name, format, size, key)
        .finally(() => this.#making.delete(key));
      this.#making.set(key, making);
    }
    return await making ? { name } : undefined;
  }

  /** Stops the workers. */
  close(): void {
    this.#pool.close();
  }

  async #make(
    entityId: string,
    original: string,
    name: string,
    format: Parameters<ThumbPool["make"]>[0],
    size: ThumbSize,
    key: string,
  ): Promise<boolean> {
    const made = await this.#pool.make(
      format,
      size,
      () => this.#store.read(entityId, original, this.#maxBytes),
    );
    if (!made) return false;
    if (!made.ok) {
      if (made.reason !== "unavailable") this.#fail(key);
      return false;
    }
    try {
      await this.#store.writeDerived(entityId, name, made.bytes);
      // The original went while this was made (its record deleted, its file
      // replaced): its removal may have looked for thumbnails before this
      // one was written, so it would outlive its original. It goes now.
      if (!await this.#store.head(entityId, original, 1)) {
        await this.#store.removeDerived(entityId, name);
        return false;
      }
      return true;
    } catch {
      // Not stored (the disk is full, the store or the database
      // unreachable): the original is served (or its own 503), and the
      // thumbnail made again next time.
      return false;
    }
  }

  #fail(key: string): void {
    if (this.#failed.size >= FAILURES_KEPT) {
      const oldest = this.#failed.keys().next().value;
      if (oldest !== undefined) this.#failed.delete(oldest);
    }
    this.#failed.set(key, Date.now() + RETRY_AFTER_FAILURE_MS);
  }
}
