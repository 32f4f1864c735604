/**
 * Stored files in an S3-compatible bucket (`--files s3://bucket/prefix?…`):
 * the key of a file is `<prefix>/<entity id>/<stored name>` (a thumbnail's
 * `<prefix>/<entity id>/<thumbnail name>`). The requests, their deadlines,
 * multipart uploads and the mapping of failures to a 503 with
 * `Retry-After` are lib/files/s3_client.ts's.
 *
 * @module
 */

import type {
  ByteRange,
  FileBackend,
  FileInfo,
  FilesState,
  OpenedFile,
} from "./backend.ts";
import type { RangeAsked } from "./byte_range.ts";
import { fileKey } from "./names.ts";
import {
  S3Client,
  type S3Credentials,
  type S3Location,
  type S3Options,
} from "./s3_client.ts";

export type { S3Credentials, S3Location, S3Options } from "./s3_client.ts";
export { PART_SIZE } from "./s3_client.ts";

/** An S3 bucket (or a prefix of one) holding stored files. */
export class S3Backend implements FileBackend {
  readonly name: string;
  readonly location: S3Location;
  readonly #s3: S3Client;

  constructor(
    location: S3Location,
    credentials: S3Credentials,
    options: S3Options,
  ) {
    this.#s3 = new S3Client(location, credentials, options);
    this.location = location;
    this.name = this.#s3.name;
  }

  /** The key of a file: always under the prefix. */
  #key(entityId: string, name: string): string {
    return this.#s3.key(fileKey(entityId, name));
  }

  check(): Promise<void> {
    return this.#s3.check();
  }

  state(): FilesState {
    return this.#s3.state();
  }

  async write(
    entityId: string,
    name: string,
    chunks: AsyncIterable<Uint8Array>,
    modified?: Date,
  ): Promise<void> {
    const key = this.#key(entityId, name);
    const headers: Record<string, string> = {
      "content-type": "application/octet-stream",
    };
    if (modified) headers["x-amz-meta-mtime"] = String(modified.getTime());
    await this.#s3.write(key, chunks, headers);
  }

  async put(
    entityId: string,
    name: string,
    bytes: Uint8Array,
  ): Promise<void> {
    // One PUT is whole: a reader gets the old object or the new one.
    await this.#s3.put(this.#key(entityId, name), bytes, {
      "content-type": "application/octet-stream",
    });
  }

  async stat(entityId: string, name: string): Promise<FileInfo | undefined> {
    const head = await this.#s3.head(this.#key(entityId, name));
    return head && { size: head.size, modified: modifiedOf(head) };
  }

  async open(
    entityId: string,
    name: string,
    range?: RangeAsked,
  ): Promise<OpenedFile | undefined> {
    const got = await this.#s3.open(this.#key(entityId, name), range);
    return got && {
      size: got.size,
      modified: modifiedOf(got),
      range: got.range,
      body: got.body,
    };
  }

  async read(
    entityId: string,
    name: string,
    range?: ByteRange,
  ): Promise<ReadableStream<Uint8Array> | undefined> {
    return await this.#s3.read(this.#key(entityId, name), range);
  }

  async remove(entityId: string, name: string): Promise<boolean> {
    return await this.#s3.remove(this.#key(entityId, name));
  }

  removeEntity(): Promise<void> {
    // A bucket has no directories: nothing is left once the files are gone.
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.#s3.close();
    return Promise.resolve();
  }
}

/** When a file was written: the time a copy kept (`x-amz-meta-mtime`), else S3's. */
function modifiedOf(
  object: { modified: Date; headers: Headers },
): Date {
  const kept = Number(object.headers.get("x-amz-meta-mtime"));
  return Number.isFinite(kept) && kept > 0 ? new Date(kept) : object.modified;
}
