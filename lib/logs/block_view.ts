/**
 * Request log blocks read back (block.ts writes them): the layout shared
 * with the encoder, `decodeBlock`, which refuses anything that is not a
 * whole, valid block, and `BlockView`, the block's numbers as typed arrays
 * with its entries made on demand.
 *
 * @module
 */

import { isoOf, logIdOf, requestMessage } from "./rows.ts";
import { foldText } from "../rules/text_fold.ts";
import { type Level, LEVELS, type LogEntry } from "./types.ts";

/** The first four bytes of a block: "MBL1". */
export const MAGIC = 0x314c424d;
/** Header bytes. */
export const HEADER = 32;
/** Dictionary references per entry (method, path, IP, auth id, auth entity). */
export const REFS = 5;
/** A reference to no string (null). */
export const NULL_REF = 0xffff;
/** The length of no request id (null). */
export const NULL_RID = 255;
/** Most entries in one block. */
export const MAX_BLOCK_ROWS = 8192;
/** Blocks are little-endian typed arrays: readable on such machines only. */
export const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The sizes a block's header gives. */
export interface Sizes {
  rows: number;
  dictCount: number;
  dictUnits: number;
  ridBytes: number;
}

/** Where each section starts, and the block's whole size (`end`). */
export interface Offsets {
  ms: number;
  seq: number;
  dur: number;
  status: number;
  refs: number;
  dictLens: number;
  dictUnits: number;
  ridLens: number;
  rid: number;
  rank: number;
  end: number;
}

/** The sections' offsets of a block of these sizes. */
export function offsets(s: Sizes): Offsets {
  const r = s.rows;
  const ms = HEADER,
    seq = ms + 8 * r,
    dur = seq + 4 * r,
    status = dur + 4 * r,
    refs = status + 2 * r,
    dictLens = refs + 10 * r,
    dictUnits = dictLens + 2 * s.dictCount,
    ridLens = dictUnits + 2 * s.dictUnits,
    rid = ridLens + r,
    rank = rid + s.ridBytes;
  return {
    ms,
    seq,
    dur,
    status,
    refs,
    dictLens,
    dictUnits,
    ridLens,
    rid,
    rank,
    end: rank + r,
  };
}

const UTF16 = new TextDecoder("utf-16le", { ignoreBOM: true });

/** A decoded block: its numbers as typed arrays, entries made on demand. */
export class BlockView {
  readonly rows: number;
  readonly tag: string;
  readonly ms: Float64Array;
  readonly seq: Uint32Array;
  readonly status: Uint16Array;
  readonly rank: Uint8Array;
  readonly #dur: Uint32Array;
  readonly #refs: Uint16Array;
  readonly #lens: Uint16Array;
  readonly #units: Uint16Array;
  #decoded: string[] | undefined;
  readonly #lower: string[] = [];
  readonly #ridLens: Uint8Array;
  readonly #ridAt: Uint32Array;
  readonly #ridBytes: Uint8Array;

  constructor(data: Uint8Array, s: Sizes) {
    const o = offsets(s), buf = data.buffer, base = data.byteOffset;
    this.rows = s.rows;
    this.tag = String.fromCharCode(...data.subarray(20, 26));
    this.ms = new Float64Array(buf, base + o.ms, s.rows);
    this.seq = new Uint32Array(buf, base + o.seq, s.rows);
    this.#dur = new Uint32Array(buf, base + o.dur, s.rows);
    this.status = new Uint16Array(buf, base + o.status, s.rows);
    this.#refs = new Uint16Array(buf, base + o.refs, s.rows * REFS);
    this.#lens = new Uint16Array(buf, base + o.dictLens, s.dictCount);
    this.#units = new Uint16Array(buf, base + o.dictUnits, s.dictUnits);
    let pos = 0;
    for (const n of this.#lens) pos += n;
    if (pos !== s.dictUnits) throw new Error("dictionary size");
    this.#ridLens = data.subarray(o.ridLens, o.ridLens + s.rows);
    this.#ridBytes = data.subarray(o.rid, o.rid + s.ridBytes);
    this.#ridAt = new Uint32Array(s.rows);
    let at = 0;
    for (let i = 0; i < s.rows; i++) {
      this.#ridAt[i] = at;
      if (this.#ridLens[i] !== NULL_RID) at += this.#ridLens[i];
    }
    if (at !== s.ridBytes) throw new Error("request id size");
    if (!/^[A-Za-z0-9]{6}$/.test(this.tag)) throw new Error("tag");
    for (const ms of this.ms) {
      if (!(Number.isInteger(ms) && ms >= 0 && ms < 2 ** 48)) {
        throw new Error("time");
      }
    }
    for (const ref of this.#refs) {
      if (ref !== NULL_REF && ref >= s.dictCount) throw new Error("reference");
    }
    this.rank = data.subarray(o.rank, o.rank + s.rows);
    for (const rank of this.rank) {
      if (rank >= LEVELS.length) throw new Error("level");
    }
  }

  /** The dictionary, decoded when first needed (a level filter needs none). */
  get #words(): string[] {
    if (this.#decoded) return this.#decoded;
    const all = UTF16.decode(this.#units);
    const words: string[] = new Array(this.#lens.length);
    let pos = 0;
    for (let i = 0; i < words.length; i++) {
      words[i] = all.slice(pos, pos += this.#lens[i]);
    }
    return this.#decoded = words;
  }

  /** String `k` (0 method … 4 auth entity) of entry `i`. */
  str(i: number, k: number): string | null {
    const ref = this.#refs[i * REFS + k];
    return ref === NULL_REF ? null : this.#words[ref];
  }

  /**
   * "method path status" of entry `i`, folded (what search matches:
   * `fold`, lib/rules/text_fold.ts).
   */
  searchText(i: number): string {
    const low = (k: number) => {
      const ref = this.#refs[i * REFS + k];
      if (ref === NULL_REF) return "null";
      return this.#lower[ref] ??= foldText(this.#words[ref]);
    };
    return `${low(0)} ${low(1)} ${this.status[i]}`;
  }

  /** Entry `i`'s id. */
  id(i: number): string {
    return logIdOf(this.ms[i], this.seq[i], this.tag);
  }

  /** Entry `i` as the logs API returns it. */
  entry(i: number): LogEntry {
    const method = this.str(i, 0), path = this.str(i, 1);
    const n = this.#ridLens[i], at = this.#ridAt[i];
    return {
      id: this.id(i),
      time: isoOf(this.ms[i]),
      level: (LEVELS[this.rank[i]] ?? "info") as Level,
      type: "request",
      message: requestMessage(method, path, this.status[i]),
      method,
      path,
      status: this.status[i],
      duration_ms: this.#dur[i] / 100,
      ip: this.str(i, 2),
      auth_id: this.str(i, 3),
      auth_entity: this.str(i, 4),
      request_id: n === NULL_RID
        ? null
        : String.fromCharCode(...this.#ridBytes.subarray(at, at + n)),
      data: null,
    };
  }
}

/**
 * A stored block read back, or `undefined` when it is not a whole, valid
 * block (then its entries are skipped, never half-read).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeBlock } from "moonbase/lib/logs/block.ts";
 * assert.ok(decodeBlock(new Uint8Array(40)) === undefined);
 * ```
 */
export function decodeBlock(value: unknown): BlockView | undefined {
  if (!LITTLE || !(value instanceof Uint8Array) || value.length < HEADER) {
    return undefined;
  }
  // Typed views need aligned offsets: a driver's slice may not be (copied
  // by the constructor: a Buffer's slice() would be another view).
  const data = value.byteOffset % 8 === 0 ? value : new Uint8Array(value);
  const head = new DataView(data.buffer, data.byteOffset, HEADER);
  const s: Sizes = {
    rows: head.getUint32(4, true),
    dictCount: head.getUint32(8, true),
    dictUnits: head.getUint32(12, true),
    ridBytes: head.getUint32(16, true),
  };
  if (
    head.getUint32(0, true) !== MAGIC || s.rows < 1 ||
    s.rows > MAX_BLOCK_ROWS || s.dictCount >= NULL_REF ||
    offsets(s).end !== data.length
  ) return undefined;
  try {
    return new BlockView(data, s);
  } catch {
    // Sizes that do not fit the bytes: not a valid block (see above).
    return undefined;
  }
}
