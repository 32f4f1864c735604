/**
 * A single byte range as a client asks it (`Range: bytes=…`, HTTP's Range header)
 * and what it comes to once the file's size is known: the one reading of a
 * range for serving (lib/files/serve.ts) and for both file stores
 * (`FileBackend.open`), which may learn the size only from the answer that
 * carries the bytes.
 *
 * @module
 */

/** Bytes `start` to `end` of a file, both included. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * A range asked: from `start` to `end` (both included; to the last byte when
 * `end` is undefined), or the last `suffix` bytes.
 */
export type RangeAsked = { start: number; end?: number } | { suffix: number };

/**
 * The range of a `Range` header, or undefined when it is not one single byte
 * range Moonbase serves (then the whole file is served, as today).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRange } from "moonbase/lib/files/byte_range.ts";
 * assert.deepEqual(parseRange("bytes=0-99"), { start: 0, end: 99 });
 * assert.deepEqual(parseRange(" bytes=100- "), { start: 100 });
 * assert.deepEqual(parseRange("bytes=-500"), { suffix: 500 });
 * assert.equal(parseRange("bytes=-"), undefined);
 * assert.equal(parseRange("bytes=0-1,5-9"), undefined);
 * assert.equal(parseRange("items=0-1"), undefined);
 * ```
 */
export function parseRange(header: string): RangeAsked | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  if (m[1] === "") return { suffix: Number(m[2]) };
  return m[2] === ""
    ? { start: Number(m[1]) }
    : { start: Number(m[1]), end: Number(m[2]) };
}

/**
 * The bytes `asked` comes to in a file of `size` bytes (the end cut to the
 * last byte), or undefined when none can be served (a 416): it starts past
 * the end, ends before it starts, asks the last 0 bytes, or the file is
 * empty.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveRange } from "moonbase/lib/files/byte_range.ts";
 * assert.deepEqual(resolveRange({ start: 5, end: 99 }, 20), { start: 5, end: 19 });
 * assert.deepEqual(resolveRange({ start: 5 }, 20), { start: 5, end: 19 });
 * assert.deepEqual(resolveRange({ suffix: 50 }, 20), { start: 0, end: 19 });
 * assert.deepEqual(resolveRange({ suffix: 5 }, 20), { start: 15, end: 19 });
 * assert.equal(resolveRange({ start: 20 }, 20), undefined);
 * assert.equal(resolveRange({ start: 5, end: 3 }, 20), undefined);
 * assert.equal(resolveRange({ suffix: 0 }, 20), undefined);
 * assert.equal(resolveRange({ suffix: 5 }, 0), undefined);
 * ```
 */
export function resolveRange(
  asked: RangeAsked,
  size: number,
): ByteRange | undefined {
  let start: number, end = size - 1;
  if ("suffix" in asked) {
    if (asked.suffix === 0) return undefined;
    start = Math.max(0, size - asked.suffix);
  } else {
    start = asked.start;
    if (asked.end !== undefined) end = Math.min(end, asked.end);
  }
  return start > end || start >= size ? undefined : { start, end };
}

/**
 * The `Range` header that asks another server (S3) for `asked`, or undefined
 * when it is better asked whole (a number too large to write as digits:
 * some servers misread it). An end too large is left out (to the last byte,
 * the same bytes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rangeHeader } from "moonbase/lib/files/byte_range.ts";
 * assert.equal(rangeHeader({ start: 0, end: 9 }), "bytes=0-9");
 * assert.equal(rangeHeader({ start: 7 }), "bytes=7-");
 * assert.equal(rangeHeader({ suffix: 3 }), "bytes=-3");
 * assert.equal(rangeHeader({ start: 0, end: 1e21 }), "bytes=0-");
 * assert.equal(rangeHeader({ start: 1e21 }), undefined);
 * ```
 */
export function rangeHeader(asked: RangeAsked): string | undefined {
  const digits = Number.isSafeInteger;
  if ("suffix" in asked) {
    return digits(asked.suffix) ? `bytes=-${asked.suffix}` : undefined;
  }
  if (!digits(asked.start)) return undefined;
  return asked.end !== undefined && digits(asked.end)
    ? `bytes=${asked.start}-${asked.end}`
    : `bytes=${asked.start}-`;
}
