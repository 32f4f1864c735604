/**
 * Secrets the server must read back (a TOTP secret) stored encrypted:
 * AES-256-GCM under a key derived from the JWT secret
 * (code_hash.ts `deriveKey`), as `v1.<iv>.<ciphertext+tag>` in base64url.
 * A copy of the database alone does not give them away; a changed JWT
 * secret makes them unreadable (`unseal` answers undefined).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv } from "node:crypto";
import type { DerivedKey } from "./code_hash.ts";

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64url");

/**
 * Encrypts `plain`; `context` (e.g. the owner's id) is authenticated with
 * it, so a sealed value copied to another row does not open there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveKey } from "moonbase/lib/auth/code_hash.ts";
 * import { seal, unseal } from "moonbase/lib/auth/sealed.ts";
 * const key = deriveKey("s", "totp");
 * const box = seal(key, new Uint8Array([1, 2, 3]), "user-1");
 * assert.deepEqual(unseal(key, box, "user-1"), new Uint8Array([1, 2, 3]));
 * assert.equal(unseal(key, box, "user-2"), undefined);
 * assert.equal(unseal(deriveKey("t", "totp"), box, "user-1"), undefined);
 * ```
 */
export function seal(
  key: DerivedKey,
  plain: Uint8Array,
  context: string,
): string {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = createCipheriv("aes-256-gcm", key, iv);
  c.setAAD(new TextEncoder().encode(context));
  const body = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  return `v1.${b64(iv)}.${b64(body)}`;
}

/** Decrypts a sealed value; undefined when it does not open (wrong key or context, or damaged). */
export function unseal(
  key: DerivedKey,
  sealed: string,
  context: string,
): Uint8Array | undefined {
  const [v, iv, body] = sealed.split(".");
  if (v !== "v1" || !iv || !body) return undefined;
  try {
    const data = Buffer.from(body, "base64url");
    if (data.length < 16) return undefined;
    const d = createDecipheriv(
      "aes-256-gcm",
      key,
      Buffer.from(iv, "base64url"),
    );
    d.setAAD(new TextEncoder().encode(context));
    d.setAuthTag(data.subarray(data.length - 16));
    return new Uint8Array(
      Buffer.concat([d.update(data.subarray(0, data.length - 16)), d.final()]),
    );
  } catch {
    // A wrong key, context or a damaged value: the tag does not verify.
    return undefined;
  }
}
