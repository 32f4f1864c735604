/**
 * Time-ordered UUIDv7 identifiers for records and entities.
 *
 * @module
 */

const HEX = Array.from(
  { length: 256 },
  (_, i) => i.toString(16).padStart(2, "0"),
);
// Process-wide on purpose: ids are unique and ordered per process, whichever app makes them.
let lastMs = 0;
let seq = 0;

/**
 * Returns a new UUIDv7 string; ids created later in the same process sort after earlier ones.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uuidv7 } from "moonbase/lib/ids.ts";
 * const a = uuidv7(), b = uuidv7();
 * assert.ok(a < b && /^[0-9a-f-]{36}$/.test(a));
 * ```
 */
export function uuidv7(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = Date.now();
  if (ms <= lastMs) {
    seq = (seq + 1) & 0xfff;
    if (seq === 0) lastMs++;
    ms = lastMs;
  } else {
    lastMs = ms;
    seq = bytes[6] & 0x7f; // random start, room to count up within the millisecond
  }
  bytes[0] = (ms / 2 ** 40) & 0xff;
  bytes[1] = (ms / 2 ** 32) & 0xff;
  bytes[2] = (ms >>> 24) & 0xff;
  bytes[3] = (ms >>> 16) & 0xff;
  bytes[4] = (ms >>> 8) & 0xff;
  bytes[5] = ms & 0xff;
  bytes[6] = 0x70 | ((seq >>> 8) & 0x0f);
  bytes[7] = seq & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  let s = "";
  for (let i = 0; i < 16; i++) {
    s += HEX[bytes[i]];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += "-";
  }
  return s;
}

/**
 * Returns a random URL-safe token with `bytes` bytes of entropy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randomToken } from "moonbase/lib/ids.ts";
 * assert.ok(randomToken(16).length === 22);
 * ```
 */
export function randomToken(bytes = 32): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replaceAll("+", "-").replaceAll(
    "/",
    "_",
  )
    .replace(/=+$/, "");
}

/**
 * Returns a new field id: 16 hex characters (used in index names).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newFieldId } from "moonbase/lib/ids.ts";
 * assert.ok(/^[0-9a-f]{16}$/.test(newFieldId()));
 * ```
 */
export function newFieldId(): string {
  return uuidv7().replaceAll("-", "").slice(16);
}
