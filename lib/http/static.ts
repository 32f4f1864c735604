/**
 * Serving a directory (`--publicDir`) at `/`: no listing, no traversal,
 * `index.html` for directories, streamed bodies.
 *
 * @module
 */

import { extname, join, resolve, sep } from "node:path";
import { trackedResponse } from "./progress.ts";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".pdf": "application/pdf",
  ".wasm": "application/wasm",
  ".woff2": "font/woff2",
  ".xml": "application/xml",
  ".mp4": "video/mp4",
  ".mp3": "audio/mpeg",
};

/**
 * Content type for a file name (octet-stream when unknown).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contentTypeOf } from "moonbase/lib/http/static.ts";
 * assert.ok(contentTypeOf("a.PNG") === "image/png");
 * ```
 */
export function contentTypeOf(name: string): string {
  return TYPES[extname(name).toLowerCase()] ?? "application/octet-stream";
}

/**
 * Resolves a URL path inside `root`, or undefined when it would escape it
 * or is malformed (encoded NUL, backslash, `..`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { safeJoin } from "moonbase/lib/http/static.ts";
 * assert.ok(safeJoin("/srv", "/a/b.txt") === "/srv/a/b.txt");
 * assert.ok(safeJoin("/srv", "/../etc/passwd") === undefined);
 * assert.ok(safeJoin("/srv", "/%2e%2e/etc") === undefined);
 * ```
 */
export function safeJoin(root: string, urlPath: string): string | undefined {
  const parts: string[] = [];
  for (const raw of urlPath.split("/")) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return undefined; // malformed percent-encoding: no file
    }
    if (seg === "" || seg === ".") continue;
    if (
      seg === ".." || seg.includes("\0") || seg.includes("\\") ||
      seg.includes("/")
    ) return undefined;
    parts.push(seg);
  }
  const base = resolve(root);
  const full = resolve(join(base, ...parts));
  return full === base || full.startsWith(base + sep) ? full : undefined;
}

/** Serves a file from `root` for GET/HEAD, or returns undefined when none matches. */
export async function serveStatic(
  root: string,
  req: Request,
  path: string,
): Promise<Response | undefined> {
  let full = safeJoin(root, path);
  if (!full) return undefined;
  try {
    let info = await Deno.stat(full);
    if (info.isDirectory) {
      full = join(full, "index.html");
      info = await Deno.stat(full);
    }
    if (!info.isFile) return undefined;
    const real = await Deno.realPath(full);
    const base = await Deno.realPath(root);
    if (real !== base && !real.startsWith(base + sep)) return undefined;
    const headers = {
      "content-type": contentTypeOf(full),
      "content-length": String(info.size),
      "x-content-type-options": "nosniff",
      "cache-control": "no-cache",
      ...(info.mtime ? { "last-modified": info.mtime.toUTCString() } : {}),
    };
    if (req.method === "HEAD") return new Response(null, { headers });
    const file = await Deno.open(real, { read: true });
    return trackedResponse(file.readable, { headers });
  } catch {
    // Missing, unreadable, or gone between stat and open: no file (the
    // caller answers 404; nothing of the disk reaches the client).
    return undefined;
  }
}
