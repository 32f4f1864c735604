/**
 * Password hashing with scrypt (N=2^15, r=8, p=1), a per-password random
 * salt, and constant-time verification. Format: `scrypt$N$r$p$salt$hash`
 * (base64).
 *
 * @module
 */

import { scrypt, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import { MoonbaseError } from "../errors.ts";
import { KdfGate, type KdfPriority } from "./kdf_gate.ts";

const N = 32768, R = 8, P = 1, KEYLEN = 32;
const MAXMEM = 128 * N * R * 2;

/**
 * One scrypt per core at a time (a burst of logins is served in turn, not
 * all at once); past 256 waiting, a login is refused with a 503. New
 * passwords (sign-ups, password changes) wait behind logins, use at most
 * one slot fewer than there are cores, and past 64 waiting get the 503.
 *
 * Process-wide on purpose: the cores and memory it rations belong to the
 * process, so every app in the process shares it (a gate per app would let
 * each app run one scrypt per core at once).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { kdfGate } from "moonbase/lib/auth/password.ts";
 * assert.ok(kdfGate.limit >= 1);
 * assert.equal(kdfGate.maxWaiting, 256);
 * assert.equal(kdfGate.maxLowWaiting, 64);
 * ```
 */
export const kdfGate = new KdfGate(
  navigator.hardwareConcurrency || 2,
  256,
  64,
);

function derive(
  password: string,
  salt: Buffer,
  n: number,
  r: number,
  p: number,
  priority: KdfPriority,
): Promise<Buffer> {
  return kdfGate.run(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password.normalize("NFC"), salt, KEYLEN, {
          N: n,
          r,
          p,
          maxmem: MAXMEM * 2,
        }, (err, key) => err ? reject(err) : resolve(key))
      ),
    priority,
  );
}

/**
 * Hashes a password with a fresh salt.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hashPassword, verifyPassword } from "moonbase/lib/auth/password.ts";
 * const h = await hashPassword("correct horse");
 * assert.equal(await verifyPassword("correct horse", h), true);
 * assert.equal(await verifyPassword("wrong", h), false);
 * ```
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = Buffer.from(crypto.getRandomValues(new Uint8Array(16)));
  const key = await derive(password, salt, N, R, P, "low");
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${
    key.toString("base64")
  }`;
}

/**
 * Verifies a password against a stored hash in constant time. A malformed
 * hash verifies as false. Logins verify at `high` priority; a check that
 * guards a password change passes `low`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { verifyPassword } from "moonbase/lib/auth/password.ts";
 * assert.equal(await verifyPassword("x", "not-a-hash"), false);
 * ```
 */
export async function verifyPassword(
  password: string,
  stored: string,
  priority: KdfPriority = "high",
): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const powerOfTwo = Number.isSafeInteger(n) && n >= 1024 && n <= 2 ** 20 &&
    (n & (n - 1)) === 0;
  if (!powerOfTwo || !(r >= 1 && r <= 32) || !(p >= 1 && p <= 4)) return false;
  if (!Number.isInteger(r) || !Number.isInteger(p)) return false;
  const salt = Buffer.from(parts[4], "base64");
  const expected = Buffer.from(parts[5], "base64");
  if (salt.length < 8 || expected.length < 16) return false;
  let key: Buffer;
  try {
    key = await derive(password, salt, n, r, p, priority);
  } catch (err) {
    // A full queue is not a wrong password.
    if (err instanceof MoonbaseError) throw err;
    return false;
  }
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A fixed hash (of a password nobody has) with the current parameters, so an
 * unknown user costs exactly one verification and nothing is cached that a
 * failure could spoil. `password_test.ts` checks it matches N, r and p.
 */
export const DUMMY_HASH =
  "scrypt$32768$8$1$Yw2eoL62ki/zjGFjxm31Cw==$QvLbN5U+Uw5wilVoIwZ9Nt+Lek9goT/eLjPyFHAnIkM=";

/** The scrypt parameters of new hashes, as `N$r$p`. */
export const PARAMS = `${N}$${R}$${P}`;

/**
 * Spends the same time as a real verification, for unknown users, so
 * response timing does not reveal whether an account exists.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { verifyDummy } from "moonbase/lib/auth/password.ts";
 * assert.equal(await verifyDummy("anything"), false);
 * ```
 */
export async function verifyDummy(
  password: string,
  priority: KdfPriority = "high",
): Promise<false> {
  await verifyPassword(password, DUMMY_HASH, priority);
  return false;
}
