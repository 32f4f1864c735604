/**
 * Serving a stored file like a good static server: Content-Type,
 * Content-Length, ETag / If-None-Match, Last-Modified, single Range
 * requests, `nosniff`, attachments for types a browser would run, streamed
 * from disk.
 *
 * @module
 */

import { trackedResponse } from "../http/progress.ts";
import { contentTypeOf } from "../http/static.ts";
import { isActiveType } from "./sniff.ts";

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
 * `cache` is the Cache-Control value.
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
  const type = contentTypeOf(name);
  const headers: Record<string, string> = {
    "content-type": type,
    "etag": etag,
    "last-modified": mtime.toUTCString(),
    "cache-control": cache,
    "accept-ranges": "bytes",
    "x-content-type-options": "nosniff",
    "content-disposition": `${
      isActiveType(type) ? "attachment" : "inline"
    }; filename="${name}"`,
  };
  if (isActiveType(type)) {
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
