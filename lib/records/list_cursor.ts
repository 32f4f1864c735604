/**
 * Sealed list cursors. A cursor is AES-256-GCM sealed JSON holding a digest
 * of the query it belongs to (entity, effective sort, filter, caller) and a
 * position: the keyset values of the last row the caller was SHOWN, plus how
 * many rows right after it were examined and hidden by a per-row check.
 * A cursor is never built from a hidden row's values, cannot be made or
 * altered by a client, and is refused (400) on any other query.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, createHash } from "node:crypto";
import { MoonbaseError } from "../errors.ts";
import type { ColumnKind, SqlValue } from "../db/storage.ts";
import type { SortKey } from "./list_query.ts";

/** The 32-byte key that seals cursors. */
export type CursorKey = Uint8Array;

/** Who lists, and with which key their cursors are sealed. */
export interface CursorContext {
  key: CursorKey;
  /** The caller's identity, e.g. `user:<entity>:<id>` or `guest`. */
  caller: string;
}

/** Where a page starts: after `values` (undefined: the start), skipping `skip` rows. */
export interface CursorPosition {
  values?: SqlValue[];
  skip: number;
  /**
   * As opened from a cursor whose values were too long to carry (a sort by
   * a long text): the record they are read from again, and their digest
   * (`positionDigest`); `values` is then undefined until the list reads
   * them (`resolvedPosition`).
   */
  ref?: { id: string; digest: string };
}

/**
 * The digest a cursor holds of values too long to carry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { positionDigest } from "moonbase/lib/records/list_cursor.ts";
 * assert.equal(positionDigest(["a", 1]), positionDigest(["a", 1]));
 * assert.notEqual(positionDigest(["a", 1]), positionDigest(["a", 2]));
 * ```
 */
export function positionDigest(values: readonly SqlValue[]): string {
  return createHash("sha256").update(JSON.stringify(values)).digest(
    "base64url",
  ).slice(0, 22);
}

/**
 * Derives the cursor key from the JWT secret, so every instance sharing that
 * secret accepts the others' cursors.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cursorKeyOf } from "moonbase/lib/records/list_cursor.ts";
 * assert.equal(cursorKeyOf("s").length, 32);
 * assert.deepEqual(cursorKeyOf("s"), cursorKeyOf("s"));
 * ```
 */
export function cursorKeyOf(secret: string): CursorKey {
  return new Uint8Array(
    createHash("sha256").update(`moonbase-cursor:${secret}`).digest(),
  );
}

/** Key for lists made through the library API (no server secret): fixed per process. */
export const LIBRARY_CURSORS: CursorContext = Object.freeze({
  key: crypto.getRandomValues(new Uint8Array(32)),
  caller: "library",
});

/**
 * The caller identity a cursor is bound to.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callerOf } from "moonbase/lib/records/list_cursor.ts";
 * assert.equal(callerOf({ type: "guest", entity: "", id: "" }), "guest");
 * assert.equal(callerOf({ type: "user", entity: "e1", id: "u1" }), "user\0e1\0u1");
 * ```
 */
export function callerOf(
  auth: { type: string; entity: string; id: string },
): string {
  return auth.type === "guest"
    ? "guest"
    : `${auth.type}\0${auth.entity}\0${auth.id}`;
}

/** Recent digests by query: a page of a list is usually followed by more. */
const digests = new Map<string, string>();
const DIGESTS_KEPT = 512;

/** Digest naming the query a cursor belongs to. */
function queryDigest(
  entityId: string,
  keys: readonly SortKey[],
  filter: string | undefined,
  caller: string,
  search: string | undefined,
): string {
  const sort = keys.map((k) => (k.desc ? "-" : "+") + k.field).join(",");
  const id = JSON.stringify(
    search === undefined
      ? [entityId, sort, filter ?? null, caller]
      : [entityId, sort, filter ?? null, caller, search],
  );
  let digest = digests.get(id);
  if (digest === undefined) {
    digest = createHash("sha256").update(id).digest("base64url").slice(0, 22);
    if (digests.size >= DIGESTS_KEPT) digests.clear();
    digests.set(id, digest);
  }
  return digest;
}

/** The query a cursor is sealed for. */
export interface CursorQuery {
  entityId: string;
  keys: readonly SortKey[];
  filter?: string;
  /** The words of `search` (joined by spaces). */
  search?: string;
  /** Column kind of each key (values are checked against it). */
  kinds: readonly ColumnKind[];
}

/**
 * Seals a position for a query.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LIBRARY_CURSORS, openCursor, sealCursor } from "moonbase/lib/records/list_cursor.ts";
 * const q = { entityId: "e", keys: [{ field: "id", desc: false }], kinds: ["text" as const] };
 * const c = sealCursor(LIBRARY_CURSORS, q, { values: ["r1"], skip: 0 });
 * assert.deepEqual(openCursor(LIBRARY_CURSORS, q, c), { values: ["r1"], skip: 0 });
 * assert.throws(() => openCursor({ ...LIBRARY_CURSORS, caller: "guest" }, q, c));
 * ```
 */
export function sealCursor(
  ctx: CursorContext,
  q: CursorQuery,
  pos: CursorPosition,
): string {
  const digest = queryDigest(
    q.entityId,
    q.keys,
    q.filter,
    ctx.caller,
    q.search,
  );
  let json = JSON.stringify({ q: digest, v: pos.values ?? null, k: pos.skip });
  const id = q.keys.findIndex((k) => k.field === "id");
  if (
    pos.values && id >= 0 && typeof pos.values[id] === "string" &&
    sealedLength(json) > MAX_TEXT
  ) {
    // Values too long to carry (a sort by a long text): the record they
    // came from instead, and their digest; the list reads them again.
    json = JSON.stringify({
      q: digest,
      v: null,
      k: pos.skip,
      r: [pos.values[id], positionDigest(pos.values)],
    });
  }
  // The same position of the same query seals to the same text (a popular
  // first page asks for it again and again): telling two equal cursors
  // apart would reveal nothing the caller does not see anyway.
  const known = recent(sealed, ctx.key);
  const hit = known.get(json);
  if (hit !== undefined) return hit;
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const cipher = createCipheriv("aes-256-gcm", ctx.key, iv);
  const body = cipher.update(json, "utf8");
  cipher.final(); // GCM is a stream cipher: final adds no bytes
  const out = Buffer.allocUnsafe(28 + body.length);
  out.set(iv, 0);
  out.set(cipher.getAuthTag(), 12);
  out.set(body, 28);
  const text = out.toString("base64url");
  // A text too long to be opened is never asked for again: keeping it would
  // let long sort values pin ~2 MB per entry (a 1 MB text field, 512 filters).
  if (text.length <= MAX_TEXT) remember(known, json, text);
  return text;
}

/** The length of the text `json` seals to (base64url of IV, tag and body). */
function sealedLength(json: string): number {
  return Math.ceil((28 + Buffer.byteLength(json, "utf8")) * 4 / 3);
}

/** Recently sealed texts (by plaintext) and opened ones (by text), per key. */
const sealed = new WeakMap<CursorKey, Map<string, string>>();
const opened = new WeakMap<CursorKey, Map<string, unknown>>();
const CURSORS_KEPT = 512;
/** The longest text opened (and so the longest kept). */
const MAX_TEXT = 8192;

function recent<T>(
  maps: WeakMap<CursorKey, Map<string, T>>,
  key: CursorKey,
): Map<string, T> {
  let m = maps.get(key);
  if (m === undefined) maps.set(key, m = new Map());
  return m;
}

function remember<T>(m: Map<string, T>, k: string, v: T): void {
  if (m.size >= CURSORS_KEPT) m.clear();
  m.set(k, v);
}

function bad(message: string): never {
  throw new MoonbaseError("invalid", `Cannot use cursor: ${message}`);
}

function unseal(key: CursorKey, text: string): unknown {
  const known = recent(opened, key);
  if (known.has(text)) return known.get(text);
  let data: unknown;
  try {
    if (text.length > MAX_TEXT || !/^[A-Za-z0-9_-]+$/.test(text)) throw 0;
    const raw = Buffer.from(text, "base64url");
    if (raw.length < 29) throw 0;
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    const json = Buffer.concat([
      decipher.update(raw.subarray(28)),
      decipher.final(),
    ]).toString("utf8");
    data = JSON.parse(json);
  } catch {
    return bad("after is not a cursor from this list");
  }
  // Only authentic texts are kept; callers read the data, never change it.
  remember(known, text, data);
  return data;
}

/** True when `v` fits a column of `kind` (the values a cursor may hold). */
function fits(kind: ColumnKind, v: unknown): boolean {
  if (v === null) return true;
  switch (kind) {
    case "text":
      return typeof v === "string";
    case "int":
      return Number.isSafeInteger(v);
    case "double":
      return typeof v === "number" && Number.isFinite(v);
    case "bool":
      return typeof v === "boolean" || v === 0 || v === 1;
    default: // view columns: any scalar
      return ["string", "number", "boolean"].includes(typeof v);
  }
}

/**
 * Opens a cursor for a query: 400 when it is garbled, belongs to another
 * query (entity, sort, filter or caller), or holds values that do not fit
 * the sort columns (e.g. after a schema change).
 */
export function openCursor(
  ctx: CursorContext,
  q: CursorQuery,
  text: string,
): CursorPosition {
  const data = unseal(ctx.key, text);
  if (typeof data !== "object" || data === null) bad("it is malformed");
  const { q: digest, v, k, r } = data as Record<string, unknown>;
  if (
    digest !==
      queryDigest(q.entityId, q.keys, q.filter, ctx.caller, q.search)
  ) {
    bad(
      "it belongs to another query (entity, sort, filter, search and caller must match)",
    );
  }
  if (!Number.isSafeInteger(k) || (k as number) < 0) bad("it is malformed");
  if (r !== undefined) {
    if (
      v !== null || !Array.isArray(r) || r.length !== 2 ||
      !r.every((x) => typeof x === "string")
    ) {
      bad("it is malformed");
    }
    return { skip: k as number, ref: { id: r[0], digest: r[1] } };
  }
  if (v === null) return { skip: k as number };
  if (
    !Array.isArray(v) || v.length !== q.keys.length ||
    !v.every((x, i) => fits(q.kinds[i], x))
  ) {
    bad("its values do not fit this list's sort (has the schema changed?)");
  }
  return { values: [...v] as SqlValue[], skip: k as number };
}
