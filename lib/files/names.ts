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

/** What every entity id used in a file's place matches. */
export const ENTITY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The place of a stored file inside a store, `<entity id>/<stored name>`:
 * the one place a file's path on disk or key in a bucket is made, from a
 * checked entity id and a stored name only (anything else throws), so no
 * input can leave the store's directory or the bucket's prefix.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileKey } from "moonbase/lib/files/names.ts";
 * assert.equal(fileKey("e1", "a_0123456789.png"), "e1/a_0123456789.png");
 * assert.throws(() => fileKey("..", "a_0123456789.png"));
 * assert.throws(() => fileKey("e1", "../a_0123456789.png"));
 * ```
 */
export function fileKey(entityId: string, name: string): string {
  if (!ENTITY_ID.test(entityId)) {
    throw new Error(`Cannot use entity id ${entityId.slice(0, 80)} for files`);
  }
  if (!STORED_NAME.test(name)) {
    throw new Error(`Cannot use ${name.slice(0, 80)} as a stored file name`);
  }
  return `${entityId}/${name}`;
}
