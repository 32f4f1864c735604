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
 * What every thumbnail's name matches: its original's stored name, the
 * size, and the format's extension (`a_0123456789.png.100x100t.thumb.png`).
 * Never a stored name: a thumbnail is served only through its original.
 */
const THUMB_NAME =
  /^([A-Za-z0-9][A-Za-z0-9_-]{0,120}_[A-Za-z0-9]{10}(?:\.[a-z0-9]{1,10})?)\.([0-9]{1,4}x[0-9]{1,4}[tbf]?)\.thumb\.(?:jpg|png|gif|webp)$/;

/** A file being written under a name of its own before it is renamed. */
const TEMP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.tmp_[A-Za-z0-9]{10}$/;

/**
 * The place of a file inside a store, `<entity id>/<name>`: the one place a
 * file's path on disk or key in a bucket is made, from a checked entity id
 * and a name Moonbase writes (`isFileName`: a stored name, a thumbnail's,
 * or a temporary one) only (anything else throws), so no input can leave
 * the store's directory or the bucket's prefix.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileKey } from "moonbase/lib/files/names.ts";
 * assert.equal(fileKey("e1", "a_0123456789.png"), "e1/a_0123456789.png");
 * assert.equal(
 *   fileKey("e1", "a_0123456789.png.100x0.thumb.png"),
 *   "e1/a_0123456789.png.100x0.thumb.png",
 * );
 * assert.throws(() => fileKey("..", "a_0123456789.png"));
 * assert.throws(() => fileKey("e1", "../a_0123456789.png"));
 * assert.throws(() => fileKey("e1", "a_0123456789.png/../../x.thumb.png"));
 * ```
 */
export function fileKey(entityId: string, name: string): string {
  if (!ENTITY_ID.test(entityId)) {
    throw new Error(`Cannot use entity id ${entityId.slice(0, 80)} for files`);
  }
  if (!isFileName(name)) {
    throw new Error(`Cannot use ${name.slice(0, 80)} as a stored file name`);
  }
  return `${entityId}/${name}`;
}

/**
 * The name of a thumbnail of the stored file `original`: `size` is its
 * canonical text (`100x100t`), `extension` its format's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { originalOf, thumbName } from "moonbase/lib/files/names.ts";
 * const t = thumbName("cat_0123456789.png", "100x0", "png");
 * assert.equal(t, "cat_0123456789.png.100x0.thumb.png");
 * assert.equal(originalOf(t), "cat_0123456789.png");
 * assert.equal(originalOf("cat_0123456789.png"), undefined);
 * ```
 */
export function thumbName(
  original: string,
  size: string,
  extension: string,
): string {
  return `${original}.${size}.thumb.${extension}`;
}

/** The stored name a thumbnail's name was made from, or undefined. */
export function originalOf(name: string): string | undefined {
  return THUMB_NAME.exec(name)?.[1];
}

/** The size (`100x100t`) in a thumbnail's name, or undefined. */
export function thumbSizeOf(name: string): string | undefined {
  return THUMB_NAME.exec(name)?.[2];
}

/** A name for `name` while it is written (renamed to `name` once complete). */
export function tempName(name: string): string {
  const suffix = randomToken(16).replace(/[^A-Za-z0-9]/g, "").slice(0, 10)
    .padEnd(10, "0");
  return `${name}.tmp_${suffix}`;
}

/** Whether a name is one Moonbase writes: stored, a thumbnail, or a temporary file. */
export function isFileName(name: string): boolean {
  return STORED_NAME.test(name) || THUMB_NAME.test(name) ||
    TEMP_NAME.test(name);
}
