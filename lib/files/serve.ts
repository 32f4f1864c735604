/**
 * Serving a stored file like a good static server: Content-Type,
 * Content-Length, ETag / If-None-Match, Last-Modified, single Range
 * requests, `nosniff`, attachments for types a browser would run, streamed
 * from disk.
 *
 * A type a browser would run or apply (`.js`, `.html`, `.svg`, `.xml`,
 * `.css`) is served as such only when the file's field names it in
 * `mime_types`; otherwise as `application/octet-stream`. An attachment
 * header and a sandbox CSP stop a browser from opening the file as a page,
 * but not a `<script src>` or a stylesheet `<link>` on another page of the
 * same origin from running or applying it: with `nosniff`, only a script
 * type runs and only `text/css` applies.
 *
 * @module
 */

import { trackedResponse } from "../http/progress.ts";
import { contentTypeOf } from "../http/static.ts";
import { isActiveType, typeAllowed } from "./sniff.ts";

/**
 * The Content-Type a stored file is served with: by its name, but a type a
 * browser would run only if `allowed` (the field's `mime_types`) names it;
 * else `application/octet-stream`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { servedType } from "moonbase/lib/files/serve.ts";
 * assert.equal(servedType("a.png", undefined), "image/png");
 * assert.equal(servedType("x.js", undefined), "application/octet-stream");
 * assert.equal(servedType("logo.svg", ["image/*"]), "application/octet-stream");
 * assert.equal(servedType("logo.svg", ["image/svg+xml"]), "image/svg+xml");
 * assert.equal(servedType("x.css", ["image/*"]), "application/octet-stream");
 * ```
 */
export function servedType(
  name: string,
  allowed: readonly string[] | undefined,
): string {
  const type = contentTypeOf(name);
  if (!isActiveType(type)) return type;
  const base = type.split(";")[0].trim();
  return allowed && typeAllowed(base, allowed)
    ? type
    : "application/octet-stream";
}

function rangeStream(
  file: Deno.FsFile,
  start: number,
  length: number,
): ReadableStream<Uint8Array> {
  let left = length;
  let positioned = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!positioned) {
          await file.seek(start, Deno.SeekMode.Start);
          positioned = true;
        }
        if (left <= 0) {
          file.close();
          controller.close();
          return;
        }
        const buf = new Uint8Array(Math.min(64 * 1024, left));
        const n = await file.read(buf);
        if (n === null || n === 0) {
          file.close();
          controller.close();
          return;
        }
        left -= n;
        controller.enqueue(buf.subarray(0, n));
      } catch (err) {
        try {
          file.close();
        } catch { /* closed */ }
        controller.error(err);
      }
    },
    cancel() {
      try {
        file.close();
      } catch { /* closed */ }
    },
  }, { highWaterMark: 1 });
}

/**
 * Answers GET/HEAD for a file at `path` (undefined when it does not exist).
 * `cache` is the Cache-Control value; `allowed` the `mime_types` of the
 * field holding the file (see `servedType`).
 *
 * @example
 * ```ts ignore
 * const res = await serveFile(req, "/data/files/e/a_0123456789.png", "a_0123456789.png", "private, no-cache");
 * ```
 */
export async function serveFile(
  req: Request,
  path: string,
  name: string,
  cache: string,
  allowed?: readonly string[],
): Promise<Response | undefined> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch {
    return undefined;
  }
  if (!info.isFile) return undefined;
  const mtime = info.mtime ?? new Date(0);
  const etag = `"${info.size.toString(36)}-${mtime.getTime().toString(36)}"`;
  const named = contentTypeOf(name);
  const type = servedType(name, allowed);
  // Active by its name: never displayed inline, whatever it is served as.
  const attach = isActiveType(named);
  const headers: Record<string, string> = {
    "content-type": type,
    "etag": etag,
    "last-modified": mtime.toUTCString(),
    "cache-control": cache,
    "accept-ranges": "bytes",
    "x-content-type-options": "nosniff",
    "content-disposition": `${
      attach ? "attachment" : "inline"
    }; filename="${name}"`,
  };
  if (attach) {
    headers["content-security-policy"] = "default-src 'none'; sandbox";
  }
  const inm = req.headers.get("if-none-match");
  if (
    inm &&
    inm.split(",").map((s) => s.trim().replace(/^W\//, "")).includes(etag)
  ) {
    return new Response(null, { status: 304, headers });
  }
  let start = 0, end = info.size - 1, status = 200;
  const range = req.headers.get("range");
  const ifRange = req.headers.get("if-range");
  if (range && (!ifRange || ifRange === etag)) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    if (m && (m[1] !== "" || m[2] !== "")) {
      if (m[1] === "") {
        start = Math.max(0, info.size - Number(m[2]));
      } else {
        start = Number(m[1]);
        if (m[2] !== "") end = Math.min(end, Number(m[2]));
      }
      if (
        start > end || start >= info.size || (m[1] === "" && Number(m[2]) === 0)
      ) {
        return new Response(null, {
          status: 416,
          headers: { ...headers, "content-range": `bytes */${info.size}` },
        });
      }
      status = 206;
      headers["content-range"] = `bytes ${start}-${end}/${info.size}`;
    }
  }
  const length = info.size === 0 ? 0 : end - start + 1;
  headers["content-length"] = String(length);
  if (req.method === "HEAD") return new Response(null, { status, headers });
  const file = await Deno.open(path, { read: true });
  const body = status === 200
    ? file.readable
    : rangeStream(file, start, length);
  return trackedResponse(body, { status, headers });
}
