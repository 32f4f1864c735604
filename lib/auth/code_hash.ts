/**
 * Short codes stored only as hashes: a mailed sign-in code is kept as
 * HMAC-SHA-256 over `<id>:<code>` (the id is the `otp_id` it belongs to),
 * under a key derived from the JWT secret. A leaked table alone does not
 * give the codes back (a 6-digit code has only a million values: without
 * the key each guess costs nothing to check), and a code is checked in
 * constant time.
 *
 * @module
 */

import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/** A key derived from the JWT secret for one purpose. */
export type DerivedKey = Uint8Array;

/**
 * A 32-byte key for `purpose`, derived from the JWT secret with HKDF-SHA-256
 * (each purpose gets its own key; none reveals the secret or another key).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveKey } from "moonbase/lib/auth/code_hash.ts";
 * assert.equal(deriveKey("s", "otp").length, 32);
 * assert.notDeepEqual(deriveKey("s", "otp"), deriveKey("s", "totp"));
 * ```
 */
export function deriveKey(secret: string, purpose: string): DerivedKey {
  return new Uint8Array(
    hkdfSync("sha256", secret, "moonbase", `moonbase-${purpose}`, 32),
  );
}

/**
 * The stored form of `code` for `id` (hex).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { codeHash, deriveKey, sameHash } from "moonbase/lib/auth/code_hash.ts";
 * const key = deriveKey("s", "otp");
 * const stored = codeHash(key, "otp-1", "123456");
 * assert.ok(sameHash(stored, codeHash(key, "otp-1", "123456")));
 * assert.ok(!sameHash(stored, codeHash(key, "otp-2", "123456")));
 * ```
 */
export function codeHash(key: DerivedKey, id: string, code: string): string {
  return createHmac("sha256", key).update(`${id}:${code}`).digest("hex");
}

/** Compares two stored hashes in constant time. */
export function sameHash(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A random numeric code of `length` digits (uniform: no modulo bias).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { randomDigits } from "moonbase/lib/auth/code_hash.ts";
 * assert.match(randomDigits(8), /^\d{8}$/);
 * ```
 */
export function randomDigits(length: number): string {
  let out = "";
  const buf = new Uint8Array(1);
  while (out.length < length) {
    crypto.getRandomValues(buf);
    if (buf[0] < 250) out += String(buf[0] % 10);
  }
  return out;
}
