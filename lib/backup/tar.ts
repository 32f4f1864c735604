/**
 * A small ustar archive writer and reader over web streams: the container of
 * a backup (backup_archive.ts). Only what backups need: regular files with
 * names up to 255 bytes (the ustar prefix field), sizes below 8 GiB, read
 * and written as streams so neither side holds a whole archive in memory.
 * Any tool that reads tar (`tar -tzf`) lists a backup.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

const BLOCK = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One entry's header: what the writer writes and the reader yields. */
export interface TarHeader {
  name: string;
  size: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function splitName(name: string): [prefix: string, name: string] {
  const bytes = encoder.encode(name);
  if (bytes.length <= 100) return ["", name];
  // The prefix holds the leading directories, the name field the rest.
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== "/") continue;
    const prefix = name.slice(0, i), rest = name.slice(i + 1);
    if (
      encoder.encode(prefix).length <= 155 && encoder.encode(rest).length <= 100
    ) return [prefix, rest];
  }
  throw new Error(`Cannot archive ${name}: the name is too long for tar`);
}

/**
 * The 512-byte ustar header of a regular file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tarHeader } from "moonbase/lib/backup/tar.ts";
 * const h = tarHeader({ name: "a.txt", size: 3 }, 0);
 * assert.equal(h.length, 512);
 * assert.equal(new TextDecoder().decode(h.subarray(257, 262)), "ustar");
 * ```
 */
export function tarHeader(header: TarHeader, mtime: number): Uint8Array {
  const [prefix, name] = splitName(header.name);
  const h = new Uint8Array(BLOCK);
  const put = (at: number, text: string) => h.set(encoder.encode(text), at);
  put(0, name);
  put(100, octal(0o600, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(header.size, 12));
  put(136, octal(Math.floor(mtime / 1000), 12));
  put(148, "        "); // the checksum counts its own field as spaces
  h[156] = 0x30; // "0": a regular file
  put(257, "ustar\0");
  put(263, "00");
  put(345, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}

/** Zeros that pad an entry of `size` bytes to a whole block. */
function padding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

/**
 * Writes a tar stream: `add` entries one after another (each awaited), then
 * `close`. Backpressure comes from the readable side (`stream`).
 */
export class TarWriter {
  readonly #stream: TransformStream<Uint8Array, Uint8Array>;
  readonly #out: WritableStreamDefaultWriter<Uint8Array>;
  readonly #mtime: number;

  /** `mtime` (ms) is written as every entry's modification time. */
  constructor(mtime: number) {
    this.#stream = new TransformStream();
    this.#out = this.#stream.writable.getWriter();
    this.#mtime = mtime;
  }

  /** The archive's bytes. */
  get stream(): ReadableStream<Uint8Array> {
    return this.#stream.readable;
  }

  /** Adds an entry whose bytes are in memory. */
  async add(name: string, bytes: Uint8Array): Promise<void> {
    await this.#out.write(tarHeader({ name, size: bytes.length }, this.#mtime));
    if (bytes.length) await this.#out.write(bytes);
    const pad = padding(bytes.length);
    if (pad.length) await this.#out.write(pad);
  }

  /**
   * Adds an entry streamed from `body`, which must give exactly `size`
   * bytes (a file that changed size fails the archive rather than corrupt it).
   */
  async addStream(
    name: string,
    size: number,
    body: AsyncIterable<Uint8Array>,
  ): Promise<void> {
    await this.#out.write(tarHeader({ name, size }, this.#mtime));
    let written = 0;
    for await (const chunk of body) {
      written += chunk.length;
      if (written > size) break;
      await this.#out.write(chunk);
    }
    if (written !== size) {
      throw new Error(
        `Cannot archive ${name}: expected ${size} bytes, read ${written}`,
      );
    }
    const pad = padding(size);
    if (pad.length) await this.#out.write(pad);
  }

  /** Ends the archive (two zero blocks). */
  async close(): Promise<void> {
    await this.#out.write(new Uint8Array(BLOCK * 2));
    await this.#out.close();
  }

  /** Fails the archive's stream (its reader sees `reason`). */
  async abort(reason: unknown): Promise<void> {
    await this.#out.abort(reason).catch(() => {
      // Ignored: the stream failed already; its reader has the first error.
    });
  }
}

function corrupt(why: string): MoonbaseError {
  return new MoonbaseError("invalid", `Cannot read backup: ${why}`);
}

/** Reads exact byte counts from a stream. */
class ByteReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf: Uint8Array = new Uint8Array(0);

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** Up to `max` bytes (fewer only at the end of the stream). */
  async some(max: number): Promise<Uint8Array> {
    if (this.#buf.length === 0) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await this.#reader.read();
      } catch (err) {
        if (err instanceof MoonbaseError) throw err;
        // The source's own failure (a gzip stream that does not check out).
        throw corrupt("the archive is damaged");
      }
      const { value, done } = next;
      if (done) return new Uint8Array(0);
      this.#buf = value;
    }
    const out = this.#buf.subarray(0, max);
    this.#buf = this.#buf.subarray(out.length);
    return out;
  }

  /** Exactly `n` bytes, or fewer when the stream ends first. */
  async exact(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const part = await this.some(n - at);
      if (part.length === 0) return out.subarray(0, at);
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  async skip(n: number): Promise<boolean> {
    let left = n;
    while (left > 0) {
      const part = await this.some(Math.min(left, 65536));
      if (part.length === 0) return false;
      left -= part.length;
    }
    return true;
  }

  cancel(): void {
    this.#reader.cancel().catch(() => {
      // Ignored: cancelling a failed stream has nothing left to release.
    });
  }
}

function field(h: Uint8Array, at: number, len: number): string {
  const raw = h.subarray(at, at + len);
  const end = raw.indexOf(0);
  return decoder.decode(end < 0 ? raw : raw.subarray(0, end));
}

function parseHeader(h: Uint8Array): TarHeader & { type: string } {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
  const stored = parseInt(field(h, 148, 8).trim(), 8);
  if (stored !== sum) throw corrupt("an entry's header checksum is wrong");
  const sizeText = field(h, 124, 12).trim();
  if (!/^[0-7]+$/.test(sizeText)) {
    throw corrupt("an entry's size is unreadable");
  }
  const prefix = field(h, 345, 155), name = field(h, 0, 100);
  return {
    name: prefix ? `${prefix}/${name}` : name,
    size: parseInt(sizeText, 8),
    type: String.fromCharCode(h[156] || 0x30),
  };
}

/** One entry being read: its bytes must be read (or skipped) before the next. */
export interface TarEntry extends TarHeader {
  /** The entry's bytes as they arrive. */
  body(): AsyncGenerator<Uint8Array>;
  /**
   * The whole entry in memory (for small entries); a 400 when it is larger
   * than `max` bytes, before anything is allocated (a header can claim any
   * size).
   */
  bytes(max: number): Promise<Uint8Array>;
}

/**
 * The entries of a tar stream, in order. Throws a 400 `MoonbaseError`
 * ("Cannot read backup: …") on a truncated or damaged archive.
 */
export async function* readTar(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<TarEntry> {
  const input = new ByteReader(stream);
  try {
    while (true) {
      const block = await input.exact(BLOCK);
      if (block.length < BLOCK) throw corrupt("the archive is truncated");
      if (block.every((b) => b === 0)) return;
      const header = parseHeader(block);
      let left = header.size;
      const take = async function* (): AsyncGenerator<Uint8Array> {
        while (left > 0) {
          const part = await input.some(Math.min(left, 1 << 16));
          if (part.length === 0) throw corrupt("the archive is truncated");
          left -= part.length;
          yield part;
        }
      };
      const entry: TarEntry = {
        name: header.name,
        size: header.size,
        body: take,
        async bytes(max: number) {
          if (header.size > max) {
            throw corrupt(
              `${header.name.slice(0, 200)} is larger than ${max} bytes`,
            );
          }
          const out = new Uint8Array(header.size);
          let at = 0;
          for await (const part of take()) {
            out.set(part, at);
            at += part.length;
          }
          return out;
        },
      };
      if (header.type === "0" || header.type === "\0") yield entry;
      // Whatever the consumer left unread (or another entry type) is skipped.
      if (!await input.skip(left)) throw corrupt("the archive is truncated");
      if (!await input.skip(padding(header.size).length)) {
        throw corrupt("the archive is truncated");
      }
    }
  } finally {
    input.cancel();
  }
}
