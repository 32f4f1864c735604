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
import { logIdOf } from "./rows.ts";
import {
  LITTLE,
  MAGIC,
  MAX_BLOCK_ROWS,
  NULL_REF,
  NULL_RID,
  offsets,
  REFS,
} from "./block_view.ts";

export { BlockView, decodeBlock, MAX_BLOCK_ROWS } from "./block_view.ts";

/** An encoded block and the ids of its first and last entries. */
export interface EncodedBlock {
  lo: string;
  hi: string;
  rows: number;
  data: Uint8Array<ArrayBuffer>;
}

/** Fewest packed request entries written as a block (fewer become rows). */
export const BLOCK_MIN = 64;

/** The statement that stores a block: `lo`, `hi`, `n`, `data`. */
export const BLOCK_INSERT_SQL =
  `INSERT INTO "mb_log_blocks" ("lo", "hi", "n", "data") VALUES (?, ?, ?, ?)`;

/**
 * The block packed request entries are written as, or `undefined` when they
 * are rows: fewer than `BLOCK_MIN`, or not encodable (`encodeBlock`).
 */
export function requestBlock(
  chunk: PackedChunk,
  tag: string,
): EncodedBlock | undefined {
  return chunk.rows >= BLOCK_MIN ? encodeBlock(chunk, tag) : undefined;
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
