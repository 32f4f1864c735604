/**
 * Serving a stored file like a good static server: Content-Type,
 * Content-Length, ETag / If-None-Match, Last-Modified, single Range
 * requests, `nosniff`, attachments for types a browser would run, streamed
 * from the file store's backend (disk or S3: one way of serving for both).
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
import type { FileBackend } from "./backend.ts";
import { originalOf, thumbSizeOf } from "./names.ts";
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

/**
 * A stored file's ETag: its size and the random part of its stored name
 * (a thumbnail's: its original's, and its size). A stored name is never
 * written twice (the ledger's row guards it), nor a thumbnail with other
 * bytes, so this names its bytes, and stays the same when `moonbase files
 * migrate` moves the file to another store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { etagOf } from "moonbase/lib/files/serve.ts";
 * assert.equal(etagOf("photo_Ab3dE5gH9k.png", 1000), '"rs-Ab3dE5gH9k"');
 * assert.equal(
 *   etagOf("photo_Ab3dE5gH9k.png.100x100t.thumb.png", 1000),
 *   '"rs-Ab3dE5gH9k-100x100t"',
 * );
 * ```
 */
export function etagOf(name: string, size: number): string {
  const original = originalOf(name);
  const random = /_([A-Za-z0-9]{10})(?:\.[a-z0-9]{1,10})?$/.exec(
    original ?? name,
  )?.[1] ?? "0";
  const thumb = thumbSizeOf(name);
  return `"${size.toString(36)}-${random}${thumb ? `-${thumb}` : ""}"`;
}

/**
 * Answers GET/HEAD for the stored file `name` of an entity (undefined when
 * the backend has no such file). `cache` is the Cache-Control value;
 * `allowed` the `mime_types` of the field holding the file (see
 * `servedType`). A store that cannot be reached throws its 503.
 *
 * @example
 * ```ts ignore
 * const res = await serveFile(req, app.files.backend, entity.id, "a_0123456789.png", "private, no-cache");
 * ```
 */
export async function serveFile(
  req: Request,
  backend: FileBackend,
  entityId: string,
  name: string,
  cache: string,
  allowed?: readonly string[],
): Promise<Response | undefined> {
  const info = await backend.stat(entityId, name);
  if (!info) return undefined;
  const etag = etagOf(name, info.size);
  const named = contentTypeOf(name);
  const type = servedType(name, allowed);
  // Active by its name: never displayed inline, whatever it is served as.
  const attach = isActiveType(named);
  const headers: Record<string, string> = {
    "content-type": type,
    "etag": etag,
    "last-modified": info.modified.toUTCString(),
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
  const body = await backend.read(
    entityId,
    name,
    status === 206 ? { start, end } : undefined,
  );
  if (!body) return undefined;
  return trackedResponse(body, { status, headers });
}
