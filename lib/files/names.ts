/**
 * Stored file names: a sanitized base of the client's name plus a random
 * suffix. Stored names only ever contain `[A-Za-z0-9._-]`, never start with
 * a dot, and fit in 150 characters, so they cannot traverse paths.
 *
 * @module
 */

import { randomToken } from "../ids.ts";

/** What every stored name matches. */
export const STORED_NAME =
  /^[A-Za-z0-9][A-Za-z0-9_-]{0,120}_[A-Za-z0-9]{10}(?:\.[a-z0-9]{1,10})?$/;

/**
 * Makes a stored name from a client's file name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storedName, STORED_NAME } from "moonbase/lib/files/names.ts";
 * const n = storedName("../../etc/pass wd.PNG");
 * assert.ok(STORED_NAME.test(n) && n.startsWith("pass_wd_") && n.endsWith(".png"));
 * assert.ok(STORED_NAME.test(storedName("")));
 * ```
 */
export function storedName(original: string): string {
  const base = original.normalize("NFKC").split(/[/\\]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  const rawExt = dot > 0 ? base.slice(dot + 1) : "";
  const ext = /^[A-Za-z0-9]{1,10}$/.test(rawExt) ? rawExt.toLowerCase() : "";
  const stem = (dot > 0 ? base.slice(0, dot) : base)
    .replace(/[^A-Za-z0-9_-]+/g, "_")
    .replace(/_+/g, "_")
    .replace(/^[_-]+|[_-]+$/g, "")
    .slice(0, 100) || "file";
  const suffix = randomToken(16).replace(/[^A-Za-z0-9]/g, "").slice(0, 10)
    .padEnd(10, "0");
  return `${stem}_${suffix}${ext ? "." + ext : ""}`;
}
