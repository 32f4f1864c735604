/**
 * Where the bytes of stored files live: a directory on disk
 * (lib/files/disk_backend.ts) or an S3 bucket (lib/files/s3_backend.ts).
 * Everything above (uploads, the ledger, removal after a commit, sweeps,
 * serving with its headers, protection and tokens) is written once over
 * this interface; tests/_file_backend_contract.ts holds both to it.
 *
 * A file's place is `<entity id>/<name>` (lib/files/names.ts `fileKey`,
 * which refuses anything but a stored name, a thumbnail's or a temporary
 * one). Stored files are never overwritten: a stored name is new (random)
 * and the ledger's unique row guards it; only a thumbnail is written again
 * (`put`, the same bytes).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { ByteRange, RangeAsked } from "./byte_range.ts";

/** What a backend knows of a stored file. */
export interface FileInfo {
  size: number;
  /** When it was written (kept by `moonbase files migrate`). */
  modified: Date;
}

export type { ByteRange } from "./byte_range.ts";

/**
 * A file opened to be read: its size and time, and a stream of its bytes
 * (`open`).
 */
export interface OpenedFile extends FileInfo {
  /** The bytes `body` holds; undefined: the whole file. */
  range?: ByteRange;
  /**
   * Its bytes (all, or `range`); undefined when the range asked comes to no
   * bytes of this file (lib/files/byte_range.ts `resolveRange`: a 416). A
   * stream not read to its end must be cancelled (it holds a file or a
   * connection). It errors when it stalls or breaks.
   */
  body?: ReadableStream<Uint8Array>;
}

/** The store's state as health reports it. */
export type FilesState = "ok" | "unavailable";

/** Where stored files' bytes live. */
export interface FileBackend {
  /** How it is named to people: `local` or `s3://bucket/prefix`. */
  readonly name: string;
  /**
   * Checks it can be used (start-up, `files migrate`): throws an Error whose
   * one-line message says what is wrong and what to do.
   */
  check(): Promise<void>;
  /**
   * Its state from what it saw lately, at no cost (no request per call; a
   * backend may start a probe of its own in the background).
   */
  state(): FilesState;
  /**
   * Writes a new file from `chunks` (read as they come: never the whole
   * file in memory). When `chunks` throws or the write fails, it throws and
   * leaves no file, except when it throws `FilesUnavailableError` (the
   * store did not answer: an object may have landed) or `LeftBehindError`
   * (it could not remove what it wrote): the sweep removes those later.
   * `modified` keeps a copy's time.
   */
  write(
    entityId: string,
    name: string,
    chunks: AsyncIterable<Uint8Array>,
    modified?: Date,
  ): Promise<void>;
  /**
   * Writes a small file whole from `bytes` (a thumbnail): a reader sees none
   * of it or all of it, never a part, and a file already of that name is
   * replaced (two writers of one thumbnail write the same bytes). A store
   * without whole writes of its own (a disk) writes it under `temp` first
   * and renames it (the caller records `temp` so that a crash leaves a file
   * the sweep knows); one with them (S3) never uses `temp`. When it fails it
   * throws and leaves no file, except as `write` says.
   */
  put(
    entityId: string,
    name: string,
    bytes: Uint8Array,
    temp: string,
  ): Promise<void>;
  /** The file's size and time, or undefined when there is no such file. */
  stat(entityId: string, name: string): Promise<FileInfo | undefined>;
  /**
   * The file's bytes (all, or `range`), or undefined when there is no such
   * file. A stream that stalls or breaks errors.
   */
  read(
    entityId: string,
    name: string,
    range?: ByteRange,
  ): Promise<ReadableStream<Uint8Array> | undefined>;
  /**
   * Opens a file to serve it, in one request where the store is remote (S3:
   * one GET, whose answer gives the size and time): its size, its time and
   * its bytes: with `range`, those it comes to for the file's size
   * (`resolveRange`, then `range` says which) or none when it comes to none;
   * else all. Undefined when there is no such file. A store that cannot be
   * reached throws its 503.
   */
  open(
    entityId: string,
    name: string,
    range?: RangeAsked,
  ): Promise<OpenedFile | undefined>;
  /** Removes a file: true once it is gone (removed now, or missing), false when it could not. */
  remove(entityId: string, name: string): Promise<boolean>;
  /** Removes what an entity leaves once its files are gone (on disk: its empty directory). */
  removeEntity(entityId: string): Promise<void>;
  /** Stops background work. */
  close(): Promise<void>;
}

/** Seconds a client is told to wait when the file store cannot be reached. */
export const FILES_RETRY_AFTER = 5;

/**
 * The file store (S3) did not answer, answered too late or refused: a 503
 * with `Retry-After`. Its message never carries what the store said (that
 * goes to the log).
 */
export class FilesUnavailableError extends MoonbaseError {
  constructor() {
    super(
      "unavailable",
      "Cannot reach the file store: try again shortly",
      null,
      { "retry-after": String(FILES_RETRY_AFTER) },
    );
  }
}

/**
 * A write failed and could not remove what it had written (`cause` is
 * why it failed): the file's ledger row stays for the sweep.
 */
export class LeftBehindError extends Error {
  override readonly cause: unknown;
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.name = "LeftBehindError";
    this.cause = cause;
  }
}

/**
 * The error of a file store that cannot be reached (503, `Retry-After`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filesUnavailable } from "moonbase/lib/files/backend.ts";
 * const e = filesUnavailable();
 * assert.equal(e.code, "unavailable");
 * assert.equal(e.headers["retry-after"], "5");
 * ```
 */
export function filesUnavailable(): FilesUnavailableError {
  return new FilesUnavailableError();
}
