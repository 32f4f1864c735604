/**
 * Request log blocks: a chunk of request entries stored as one binary value
 * (`mb_log_blocks`), ~45 bytes per entry instead of one ~150-byte row each.
 * Under load the log writer's cost was SQLite's per-row insert (1.1–1.6 µs
 * whatever the columns) and the bytes committed; a block is one insert.
 *
 * Layout, little-endian, sections in decreasing alignment:
 * - header (32 bytes): magic, rows, dictionary entries, dictionary code
 *   units, request-id bytes (five `u32`), the writer's 6-character tag;
 * - per entry: time in ms (`f64`), sequence (`u32`), duration in
 *   hundredths of a ms (`u32`), status (`u16`), five `u16` references into
 *   the dictionary (method, path, IP, auth id, auth entity; `0xFFFF`: null);
 * - the dictionary: lengths (`u16`) and UTF-16 code units;
 * - per entry: request-id length (`u8`, 255: null), then their bytes
 *   (request ids are ASCII), then the level rank (`u8`).
 *
 * A block that does not read back exactly (size, magic, references) is
 * refused by `decodeBlock`, never half-read.
 *
 * @module
 */

import { type PackedChunk, readChunk } from "./packed.ts";
import { isoOf, logIdOf, requestMessage } from "./rows.ts";
import { type Level, LEVELS, type LogEntry } from "./types.ts";

const MAGIC = 0x314c424d; // "MBL1"
const HEADER = 32;
const REFS = 5;
const NULL_REF = 0xffff;
const NULL_RID = 255;
/** Most entries in one block. */
export const MAX_BLOCK_ROWS = 8192;
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** An encoded block and the ids of its first and last entries. */
export interface EncodedBlock {
  lo: string;
  hi: string;
  rows: number;
  data: Uint8Array<ArrayBuffer>;
}

interface Sizes {
  rows: number;
  dictCount: number;
  dictUnits: number;
  ridBytes: number;
}

function offsets(s: Sizes) {
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

/**
 * The block of a packed chunk written by the process tagged `tag`, or
 * `undefined` when it cannot be one (empty, too large, a request id that is
 * not ASCII or longer than 254, a big-endian machine): the caller writes
 * rows instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chunkOf } from "moonbase/lib/logs/packed.ts";
 * import { decodeBlock, encodeBlock } from "moonbase/lib/logs/block.ts";
 * const b = encodeBlock(chunkOf([
 *   [1000, 7, 2, "GET", "/x", 200, 1.25, "::1", null, null, "r1"],
 * ]), "abcdef")!;
 * assert.deepEqual([b.lo, b.rows], ["0000000003e8-00000007-abcdef", 1]);
 * const v = decodeBlock(b.data)!;
 * assert.deepEqual(
 *   [v.entry(0).message, v.entry(0).duration_ms, v.entry(0).request_id],
 *   ["GET /x 200", 1.25, "r1"],
 * );
 * ```
 */
export function encodeBlock(
  chunk: PackedChunk,
  tag: string,
): EncodedBlock | undefined {
  const rows = chunk.rows;
  if (!LITTLE || rows < 1 || rows > MAX_BLOCK_ROWS) return undefined;
  if (!/^[A-Za-z0-9]{6}$/.test(tag)) return undefined;
  const refs = new Uint16Array(rows * REFS);
  const dict = new Map<string, number>();
  const words: string[] = [];
  const rids: (string | null)[] = new Array(rows);
  let dictUnits = 0, ridBytes = 0, r = 0, ok = true;
  readChunk(chunk, (_n, _at, s) => {
    for (let k = 0; k < REFS; k++) {
      const v = s[k];
      if (v === null) {
        refs[r * REFS + k] = NULL_REF;
        continue;
      }
      let ref = dict.get(v);
      if (ref === undefined) {
        ref = words.length;
        dict.set(v, ref);
        words.push(v);
        if (v.length > 0xffff) ok = false;
        dictUnits += v.length;
      }
      refs[r * REFS + k] = ref;
    }
    const rid = s[5];
    if (rid !== null) {
      if (rid.length >= NULL_RID) ok = false;
      ridBytes += rid.length;
    }
    rids[r++] = rid;
  });
  if (!ok || words.length >= NULL_REF) return undefined;
  const o = offsets({ rows, dictCount: words.length, dictUnits, ridBytes });
  const data = new Uint8Array(o.end);
  const head = new DataView(data.buffer);
  [MAGIC, rows, words.length, dictUnits, ridBytes].forEach((v, i) =>
    head.setUint32(i * 4, v, true)
  );
  for (let i = 0; i < 6; i++) data[20 + i] = tag.charCodeAt(i);
  const ms = new Float64Array(data.buffer, o.ms, rows);
  const seq = new Uint32Array(data.buffer, o.seq, rows);
  const dur = new Uint32Array(data.buffer, o.dur, rows);
  const status = new Uint16Array(data.buffer, o.status, rows);
  const n = chunk.nums;
  let lo = 0, hi = 0;
  for (let i = 0; i < rows; i++) {
    const at = i * 5;
    ms[i] = n[at];
    seq[i] = n[at + 1];
    data[o.rank + i] = n[at + 2];
    status[i] = n[at + 3];
    const d = Math.round(n[at + 4] * 100);
    dur[i] = d > 0 ? Math.min(d, 0xffffffff) : 0;
    if (ms[i] < ms[lo] || (ms[i] === ms[lo] && seq[i] < seq[lo])) lo = i;
    if (ms[i] > ms[hi] || (ms[i] === ms[hi] && seq[i] > seq[hi])) hi = i;
  }
  new Uint16Array(data.buffer, o.refs, rows * REFS).set(refs);
  const lens = new Uint16Array(data.buffer, o.dictLens, words.length);
  const units = new Uint16Array(data.buffer, o.dictUnits, dictUnits);
  let u = 0;
  words.forEach((w, i) => {
    lens[i] = w.length;
    for (let c = 0; c < w.length; c++) units[u++] = w.charCodeAt(c);
  });
  let b = o.rid;
  for (let i = 0; i < rows; i++) {
    const rid = rids[i];
    data[o.ridLens + i] = rid === null ? NULL_RID : rid.length;
    if (rid === null) continue;
    for (let c = 0; c < rid.length; c++) {
      const code = rid.charCodeAt(c);
      if (code > 0x7f) return undefined;
      data[b++] = code;
    }
  }
  return {
    lo: logIdOf(ms[lo], seq[lo], tag),
    hi: logIdOf(ms[hi], seq[hi], tag),
    rows,
    data,
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
   * "method path status" of entry `i`, ASCII letters lowercase (what search
   * matches; `lower` folds, as block_read.ts's `asciiLower`).
   */
  searchText(i: number, lower: (s: string) => string): string {
    const low = (k: number) => {
      const ref = this.#refs[i * REFS + k];
      if (ref === NULL_REF) return "null";
      return this.#lower[ref] ??= lower(this.#words[ref]);
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
    return undefined;
  }
}
