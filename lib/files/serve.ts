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
import type { ByteRange, FileBackend, FileInfo } from "./backend.ts";
import { parseRange, type RangeAsked, resolveRange } from "./byte_range.ts";
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
 * One request to the store when it is remote (S3): a GET opens the file,
 * the range asked sent along, and its answer gives the size and time the
 * headers need (`FileBackend.open`); a HEAD, or a revalidation whose
 * `If-None-Match` names this file's ETag for some size, asks only for the
 * size and time (`stat`), then opens the file if it is not fresh after all.
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
  const inm = req.headers.get("if-none-match");
  const header = req.headers.get("range");
  const ifRange = req.headers.get("if-range");
  // Unless If-Range names this file's ETag for some size, the whole file.
  const asked =
    header !== null && (ifRange === null || mayBeEtag(ifRange, name))
      ? parseRange(header)
      : undefined;
  if (
    req.method === "HEAD" ||
    (inm !== null && tagsOf(inm).some((t) => mayBeEtag(t, name)))
  ) {
    const info = await backend.stat(entityId, name);
    if (!info) return undefined;
    const answer = answerOf(req, name, info, asked, cache, allowed);
    if (req.method === "HEAD" || answer.status === 304) {
      return new Response(null, answer);
    }
  }
  const file = await backend.open(entityId, name, asked);
  if (!file) return undefined;
  const answer = answerOf(req, name, file, asked, cache, allowed);
  if (answer.status === 304 || answer.status === 416) {
    await file.body?.cancel().catch(() => {});
    return new Response(null, answer);
  }
  let body = file.body;
  if (
    !body || file.range?.start !== answer.range?.start ||
    file.range?.end !== answer.range?.end
  ) {
    // Other bytes than opened (an If-Range whose size is not the file's):
    // read those.
    await body?.cancel().catch(() => {});
    body = await backend.read(entityId, name, answer.range);
    if (!body) return undefined;
  }
  return trackedResponse(body, answer);
}

/** What a GET or HEAD of a file is answered: status, headers and the bytes served. */
interface Answer {
  status: 200 | 206 | 304 | 416;
  headers: Record<string, string>;
  /** The bytes of a 206; undefined: all. */
  range?: ByteRange;
}

/**
 * The answer to `req` for the stored file `name` of `info`'s size and time,
 * `asked` its range (parsed, when If-Range allowed it by name).
 */
function answerOf(
  req: Request,
  name: string,
  info: FileInfo,
  asked: RangeAsked | undefined,
  cache: string,
  allowed: readonly string[] | undefined,
): Answer {
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
  if (inm && tagsOf(inm).includes(etag)) return { status: 304, headers };
  const ifRange = req.headers.get("if-range");
  if (asked && (!ifRange || ifRange === etag)) {
    const range = resolveRange(asked, info.size);
    if (!range) {
      return {
        status: 416,
        headers: { ...headers, "content-range": `bytes */${info.size}` },
      };
    }
    headers["content-range"] = `bytes ${range.start}-${range.end}/${info.size}`;
    headers["content-length"] = String(range.end - range.start + 1);
    return { status: 206, headers, range };
  }
  headers["content-length"] = String(info.size);
  return { status: 200, headers };
}

/** The entity tags of an `If-None-Match` header (weak ones as strong). */
function tagsOf(header: string): string[] {
  return header.split(",").map((s) => s.trim().replace(/^W\//, ""));
}

/**
 * Whether `tag` is the ETag `name` has at some size (`etagOf`): then only
 * the size tells whether it is this file's.
 */
function mayBeEtag(tag: string, name: string): boolean {
  const size = /^"([0-9a-z]{1,11})-/.exec(tag)?.[1];
  return size !== undefined && tag === etagOf(name, parseInt(size, 36));
}
