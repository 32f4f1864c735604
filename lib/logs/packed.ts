/**
 * Request entries packed into typed arrays as they are logged: per entry
 * five numbers (time in ms, sequence, level rank, status, duration) and the
 * UTF-16 code units of six strings (method, path, IP, auth id, auth entity,
 * request id) with their lengths. The request thread copies the characters
 * while they are still in its cache and keeps no string alive; a chunk is
 * handed to the writer thread by transferring its buffers (no copy, no
 * serialisation) and read there from one decoded string.
 *
 * @module
 */

/** Numbers per entry. */
export const NUMS = 5;
/** Strings per entry. */
export const STRS = 6;

/** Packed entries, as handed on (transferable buffers). */
export interface PackedChunk {
  /** Entries. */
  rows: number;
  /** `NUMS` per entry. */
  nums: Float64Array<ArrayBuffer>;
  /** `STRS` lengths per entry (-1: null). */
  lens: Int32Array<ArrayBuffer>;
  /** The strings' code units, one after the other. */
  chars: Uint16Array<ArrayBuffer>;
}

/** One entry's values, in `PackedRequest` order (for tests and callers). */
export type PackedRequest = [
  ms: number,
  seq: number,
  rank: number,
  method: string,
  path: string,
  status: number,
  durationMs: number,
  ip: string | null,
  authId: string | null,
  authEntity: string | null,
  requestId: string,
];

/** Packs entries until `take()`; grows as needed, starting small. */
export class RequestPacker {
  rows = 0;
  #nums = new Float64Array(16 * NUMS);
  #lens = new Int32Array(16 * STRS);
  #chars = new Uint16Array(16 * 48);
  #used = 0;

  /** Adds one entry. */
  add(
    ms: number,
    seq: number,
    rank: number,
    method: string,
    path: string,
    status: number,
    durationMs: number,
    ip: string | null,
    authId: string | null,
    authEntity: string | null,
    requestId: string,
  ): void {
    const r = this.rows;
    if ((r + 1) * NUMS > this.#nums.length) this.#grow();
    const n = r * NUMS;
    const nums = this.#nums;
    nums[n] = ms;
    nums[n + 1] = seq;
    nums[n + 2] = rank;
    nums[n + 3] = status;
    nums[n + 4] = durationMs;
    const s = r * STRS;
    this.#str(s, method);
    this.#str(s + 1, path);
    this.#str(s + 2, ip);
    this.#str(s + 3, authId);
    this.#str(s + 4, authEntity);
    this.#str(s + 5, requestId);
    this.rows = r + 1;
  }

  #str(at: number, v: string | null): void {
    if (v === null || v === undefined) {
      this.#lens[at] = -1;
      return;
    }
    const n = v.length;
    let used = this.#used;
    if (used + n > this.#chars.length) this.#growChars(used + n);
    const chars = this.#chars;
    for (let i = 0; i < n; i++) chars[used++] = v.charCodeAt(i);
    this.#used = used;
    this.#lens[at] = n;
  }

  #grow(): void {
    const nums = new Float64Array(this.#nums.length * 2);
    nums.set(this.#nums);
    this.#nums = nums;
    const lens = new Int32Array(this.#lens.length * 2);
    lens.set(this.#lens);
    this.#lens = lens;
  }

  #growChars(need: number): void {
    const chars = new Uint16Array(Math.max(need, this.#chars.length * 2));
    chars.set(this.#chars.subarray(0, this.#used));
    this.#chars = chars;
  }

  #spare: PackedChunk[] = [];

  /**
   * The entries packed so far (their own buffers, free to transfer); the
   * packer starts again with a chunk given back (`reuse`), or new buffers
   * sized for as many.
   */
  take(): PackedChunk {
    const chunk: PackedChunk = {
      rows: this.rows,
      nums: this.#nums,
      lens: this.#lens,
      chars: this.#chars,
    };
    const spare = this.#spare.pop();
    if (spare) {
      this.#nums = spare.nums;
      this.#lens = spare.lens;
      this.#chars = spare.chars;
    } else {
      const cap = Math.max(16, this.rows);
      this.#nums = new Float64Array(cap * NUMS);
      this.#lens = new Int32Array(cap * STRS);
      this.#chars = new Uint16Array(Math.max(16 * 48, this.#used));
    }
    this.rows = 0;
    this.#used = 0;
    return chunk;
  }

  /** Keeps a written chunk's buffers to pack into again (two at most). */
  reuse(chunk: PackedChunk | undefined): void {
    if (chunk && chunk.nums.byteLength > 0 && this.#spare.length < 2) {
      this.#spare.push(chunk);
    }
  }
}

/**
 * A chunk of the given entries (tests, tools).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chunkOf, readChunk } from "moonbase/lib/logs/packed.ts";
 * const c = chunkOf([[5, 1, 2, "GET", "/é", 200, 1.5, null, null, null, "r"]]);
 * const seen: unknown[] = [];
 * readChunk(c, (n, at, s) => seen.push(n[at], s[1], s[2]));
 * assert.deepEqual(seen, [5, "/é", null]);
 * ```
 */
export function chunkOf(entries: readonly PackedRequest[]): PackedChunk {
  const p = new RequestPacker();
  for (const e of entries) p.add(...e);
  return p.take();
}

const DECODER = new TextDecoder("utf-16le", { ignoreBOM: true });

/**
 * Calls `each` with every entry's numbers (`nums` from `at`) and strings,
 * in order (the same strings array each time: read it, do not keep it). Strings are sliced
 * from one decoded string; a lone surrogate reads as U+FFFD, as it would be
 * stored anyway.
 */
export function readChunk(
  chunk: PackedChunk,
  each: (nums: Float64Array, at: number, strs: (string | null)[]) => void,
): void {
  let used = 0;
  const lens = chunk.lens;
  for (let i = 0; i < chunk.rows * STRS; i++) used += Math.max(0, lens[i]);
  const all = DECODER.decode(chunk.chars.subarray(0, used));
  const strs: (string | null)[] = Array(STRS).fill(null);
  let pos = 0;
  for (let r = 0; r < chunk.rows; r++) {
    for (let k = 0; k < STRS; k++) {
      const n = lens[r * STRS + k];
      if (n < 0) strs[k] = null;
      else {
        strs[k] = all.slice(pos, pos + n);
        pos += n;
      }
    }
    each(chunk.nums, r * NUMS, strs);
  }
}
