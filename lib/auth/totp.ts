/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP): HMAC-SHA-1,
 * 6 digits, 30-second steps, as authenticator apps compute them, plus the
 * base32 secrets (RFC 4648) they are given. Pure functions over a clock the
 * caller passes in; the enrolments and the "each step once" rule live in
 * totp_enrollment.ts.
 *
 * @module
 */

import { createHmac, timingSafeEqual } from "node:crypto";

/** Seconds per step. */
export const TOTP_STEP = 30;
/** Digits of a code. */
export const TOTP_DIGITS = 6;
/** Steps before and after the current one a code may come from (clock drift). */
export const TOTP_WINDOW = 1;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/**
 * Base32 without padding (RFC 4648), as `otpauth://` URIs carry secrets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { base32Encode } from "moonbase/lib/auth/totp.ts";
 * assert.equal(base32Encode(new TextEncoder().encode("foobar")), "MZXW6YTBOI");
 * ```
 */
export function base32Encode(bytes: Uint8Array): string {
  let out = "", bits = 0, value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * Decodes base32 (case, spaces and padding ignored); undefined when it holds
 * another character.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { base32Decode } from "moonbase/lib/auth/totp.ts";
 * assert.equal(new TextDecoder().decode(base32Decode("mzxw 6ytb oi==")), "foobar");
 * assert.equal(base32Decode("MZ1"), undefined);
 * ```
 */
export function base32Decode(text: string): Uint8Array | undefined {
  const clean = text.replace(/[\s=]/g, "").toUpperCase();
  const out: number[] = [];
  let bits = 0, value = 0;
  for (const c of clean) {
    const v = BASE32.indexOf(c);
    if (v < 0) return undefined;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** HOTP (RFC 4226): the code of `counter`, `digits` long. */
export function hotp(
  secret: Uint8Array,
  counter: number,
  digits = TOTP_DIGITS,
): string {
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(counter));
  const mac = createHmac("sha1", secret).update(msg).digest();
  const offset = mac[mac.length - 1] & 0xf;
  const bin = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) |
    (mac[offset + 2] << 8) | mac[offset + 3];
  return String(bin % 10 ** digits).padStart(digits, "0");
}

/** The step a time (ms since the epoch) falls in. */
export function stepAt(ms: number): number {
  return Math.floor(ms / 1000 / TOTP_STEP);
}

/**
 * The TOTP code at a time (ms since the epoch).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { totpAt } from "moonbase/lib/auth/totp.ts";
 * const secret = new TextEncoder().encode("12345678901234567890");
 * assert.equal(totpAt(secret, 59_000, 8), "94287082"); // RFC 6238, appendix B
 * ```
 */
export function totpAt(
  secret: Uint8Array,
  ms: number,
  digits = TOTP_DIGITS,
): string {
  return hotp(secret, stepAt(ms), digits);
}

/**
 * The step whose code `code` is, among the steps within `TOTP_WINDOW` of
 * the time `ms`, later than `after` (a step used before is not accepted
 * again); undefined when none. Every candidate is compared, in constant
 * time, whichever matches.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchStep, stepAt, totpAt } from "moonbase/lib/auth/totp.ts";
 * const secret = new TextEncoder().encode("12345678901234567890");
 * const now = 1_111_111_109_000;
 * assert.equal(matchStep(secret, totpAt(secret, now - 30_000), now), stepAt(now) - 1);
 * assert.equal(matchStep(secret, totpAt(secret, now - 60_000), now), undefined);
 * assert.equal(matchStep(secret, totpAt(secret, now), now, stepAt(now)), undefined);
 * ```
 */
export function matchStep(
  secret: Uint8Array,
  code: string,
  ms: number,
  after = -1,
): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const given = new TextEncoder().encode(code);
  const now = stepAt(ms);
  let found: number | undefined;
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    const want = new TextEncoder().encode(hotp(secret, step));
    if (timingSafeEqual(want, given) && step > after && found === undefined) {
      found = step;
    }
  }
  return found;
}

/**
 * The `otpauth://` URI an authenticator app reads (from a QR code):
 * `otpauth://totp/<issuer>:<account>?secret=…&issuer=…`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { otpauthUri } from "moonbase/lib/auth/totp.ts";
 * assert.equal(
 *   otpauthUri("My App", "ann@example.com", "JBSWY3DPEHPK3PXP"),
 *   "otpauth://totp/My%20App:ann%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=My%20App",
 * );
 * ```
 */
export function otpauthUri(
  issuer: string,
  account: string,
  secret: string,
): string {
  const i = encodeURIComponent(issuer);
  return `otpauth://totp/${i}:${
    encodeURIComponent(account)
  }?secret=${secret}&issuer=${i}`;
}
