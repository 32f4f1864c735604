/**
 * A streaming `multipart/form-data` parser: part bodies are handed out
 * chunk by chunk as they arrive, so a file can go to disk without the
 * request ever being held in memory.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { type BodyDeadlines, BodyWatch } from "../http/deadlines.ts";

/** One part; read `body()` to the end before asking for the next part. */
export interface Part {
  /** The form field name. */
  name: string;
  /** The client's file name (file parts only). */
  filename?: string;
  /** Declared content type ("" when absent). */
  contentType: string;
  /** The part's bytes, in order. */
  body(): AsyncGenerator<Uint8Array>;
}

const CRLF2 = new Uint8Array([13, 10, 13, 10]);
const MAX_HEADER = 8 * 1024;

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0], n = needle.length;
  for (
    let i = hay.indexOf(first, from);
    i !== -1 && i <= hay.length - n;
    i = hay.indexOf(first, i + 1)
  ) {
    let j = 1;
    while (j < n && hay[i + j] === needle[j]) j++;
    if (j === n) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function bad(message: string): MoonbaseError {
  return new MoonbaseError(
    "invalid",
    `Cannot parse multipart body: ${message}`,
  );
}

/**
 * The boundary of a `multipart/form-data` content type.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boundaryOf } from "moonbase/lib/files/multipart.ts";
 * assert.ok(boundaryOf('multipart/form-data; boundary="abc"') === "abc");
 * ```
 */
export function boundaryOf(contentType: string): string {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  const b = m?.[1] ?? m?.[2];
  if (!b) throw bad("missing boundary");
  return b;
}

function disposition(
  headers: string,
): { name: string; filename?: string; contentType: string } {
  let name: string | undefined, filename: string | undefined, contentType = "";
  for (const line of headers.split("\r\n")) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const key = line.slice(0, i).trim().toLowerCase(),
      value = line.slice(i + 1).trim();
    if (key === "content-type") contentType = value.toLowerCase();
    if (key !== "content-disposition") continue;
    for (
      const m of value.matchAll(
        /;\s*([a-z*]+)=(?:"((?:[^"\\]|\\.)*)"|([^;]*))/gi,
      )
    ) {
      const k = m[1].toLowerCase(),
        v = m[2] !== undefined ? m[2].replace(/\\(["\\])/g, "$1") : m[3].trim();
      if (k === "name") name = v;
      else if (k === "filename") filename = v;
      else if (k === "filename*") {
        const ext = /^utf-8''(.*)$/i.exec(v);
        try {
          if (ext) filename = decodeURIComponent(ext[1]);
        } catch { /* keep the plain filename */ }
      }
    }
  }
  if (name === undefined) throw bad("a part has no name");
  return filename === undefined
    ? { name, contentType }
    : { name, filename, contentType };
}

/**
 * Parses a multipart stream into parts (408 when `bodies`, the app's body
 * deadlines, expires the read).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseMultipart } from "moonbase/lib/files/multipart.ts";
 * const text = '--b\r\nContent-Disposition: form-data; name="t"\r\n\r\nhello\r\n--b--\r\n';
 * const parts: string[] = [];
 * for await (const p of parseMultipart(new Blob([text]).stream(), "b")) {
 *   let s = "";
 *   for await (const c of p.body()) s += new TextDecoder().decode(c);
 *   parts.push(`${p.name}=${s}`);
 * }
 * assert.ok(parts[0] === "t=hello");
 * ```
 */
export async function* parseMultipart(
  stream: ReadableStream<Uint8Array>,
  boundary: string,
  maxParts = 200,
  bodies?: BodyDeadlines,
): AsyncGenerator<Part> {
  const reader = stream.getReader();
  const watch = new BodyWatch(reader, bodies);
  const delim = new TextEncoder().encode(`\r\n--${boundary}`);
  let buf: Uint8Array = new Uint8Array([13, 10]); // so the first delimiter also starts with CRLF
  let done = false;
  const pull = async (): Promise<boolean> => {
    if (done) return false;
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } catch {
      if (watch.expired) throw watch.error();
      throw bad("the connection was interrupted");
    }
    watch.step(r.value?.length);
    if (r.done) {
      done = true;
      return false;
    }
    buf = concat(buf, r.value);
    return true;
  };
  try {
    // Preamble up to the first delimiter.
    let at: number;
    while ((at = indexOf(buf, delim)) === -1) {
      if (buf.length > MAX_HEADER) {
        buf = buf.subarray(buf.length - delim.length);
      }
      if (!(await pull())) throw bad("no boundary found");
    }
    buf = buf.subarray(at + delim.length);
    for (let count = 0;; count++) {
      while (buf.length < 2) if (!(await pull())) throw bad("truncated");
      if (buf[0] === 45 && buf[1] === 45) return; // "--": the end
      let end: number;
      while ((end = indexOf(buf, CRLF2)) === -1) {
        if (buf.length > MAX_HEADER) throw bad("part headers too large");
        if (!(await pull())) throw bad("truncated part headers");
      }
      if (count >= maxParts) {
        throw new MoonbaseError(
          "too_large",
          `Cannot parse multipart body: more than ${maxParts} parts`,
        );
      }
      const info = disposition(new TextDecoder().decode(buf.subarray(0, end)));
      buf = buf.subarray(end + 4);
      let finished = false;
      const body = async function* (): AsyncGenerator<Uint8Array> {
        while (true) {
          const i = indexOf(buf, delim);
          if (i !== -1) {
            if (i > 0) yield buf.subarray(0, i);
            buf = buf.subarray(i + delim.length);
            finished = true;
            return;
          }
          const keep = delim.length - 1;
          if (buf.length > keep) {
            const out = buf.subarray(0, buf.length - keep);
            buf = buf.slice(buf.length - keep);
            yield out;
          }
          if (!(await pull())) throw bad("truncated part body");
        }
      };
      const part: Part = { ...info, body };
      yield part;
      if (!finished) {
        for await (const _ of body()) {
          /* drain what the consumer left */
        }
      }
    }
  } finally {
    watch.done();
    await reader.cancel().catch(() => {});
  }
}
