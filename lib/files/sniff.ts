/**
 * Content types from a file's leading bytes (magic numbers), and from its
 * extension; which types a browser would run.
 *
 * @module
 */

const SIGNATURES: [string, number[], number?][] = [
  ["image/png", [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ["image/jpeg", [0xff, 0xd8, 0xff]],
  ["image/gif", [0x47, 0x49, 0x46, 0x38]],
  ["application/pdf", [0x25, 0x50, 0x44, 0x46, 0x2d]],
  ["application/zip", [0x50, 0x4b, 0x03, 0x04]],
  ["application/gzip", [0x1f, 0x8b]],
  ["image/bmp", [0x42, 0x4d]],
  ["audio/mpeg", [0x49, 0x44, 0x33]],
  ["application/wasm", [0x00, 0x61, 0x73, 0x6d]],
];

function startsWith(bytes: Uint8Array, sig: number[], at = 0): boolean {
  return bytes.length >= at + sig.length &&
    sig.every((b, i) => bytes[at + i] === b);
}

/**
 * Detects a content type from leading bytes; `text/plain` for UTF-8 text
 * without markup, `text/html`/`image/svg+xml`/`application/xml` for markup,
 * else `application/octet-stream`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sniff } from "moonbase/lib/files/sniff.ts";
 * assert.ok(sniff(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) === "image/png");
 * assert.ok(sniff(new TextEncoder().encode("<svg xmlns=...>")) === "image/svg+xml");
 * ```
 */
export function sniff(head: Uint8Array): string {
  for (const [type, sig] of SIGNATURES) if (startsWith(head, sig)) return type;
  if (
    startsWith(head, [0x52, 0x49, 0x46, 0x46]) &&
    startsWith(head, [0x57, 0x45, 0x42, 0x50], 8)
  ) return "image/webp";
  if (startsWith(head, [0x66, 0x74, 0x79, 0x70], 4)) return "video/mp4";
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      head.subarray(0, Math.min(head.length, 512)),
    );
  } catch {
    return "application/octet-stream";
  }
  const t = text.replace(/^\uFEFF/, "").trimStart().slice(0, 256).toLowerCase();
  if (t.startsWith("<svg") || (t.startsWith("<?xml") && t.includes("<svg"))) {
    return "image/svg+xml";
  }
  if (/^<(!doctype html|html|head|body|script|iframe|div|p|a |img)/.test(t)) {
    return "text/html";
  }
  if (t.startsWith("<?xml")) return "application/xml";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 9 || (c > 13 && c < 32)) return "application/octet-stream";
  }
  return "text/plain";
}

/**
 * Types a browser would execute, render as a document or apply to a page
 * (a stylesheet of the same origin can read a page through its selectors):
 * always served as attachments.
 */
const ACTIVE =
  /^(text\/html|application\/xhtml\+xml|image\/svg\+xml|application\/xml|text\/xml|text\/javascript|application\/javascript|text\/css)/;

/** True for content types a browser would run. */
export function isActiveType(type: string): boolean {
  return ACTIVE.test(type);
}

/**
 * True when `type` matches one of `allowed` (`image/*` style wildcards
 * allowed, SVG/HTML only by name; case does not matter).
 */
export function typeAllowed(type: string, allowed: readonly string[]): boolean {
  const t = type.toLowerCase();
  // Wildcards never admit types a browser would run (image/* does not admit SVG).
  return allowed.some((entry) => {
    const a = entry.toLowerCase();
    return a === t ||
      (a.endsWith("/*") && t.startsWith(a.slice(0, -1)) && !isActiveType(t));
  });
}
