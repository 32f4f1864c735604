/**
 * The values of one sign-in attempt, made fresh by every `methods` call and
 * checked by `login-oauth2` without any server-side storage until then:
 *
 * - `code_verifier` (PKCE, RFC 7636) is a sealed token: a version byte, its
 *   expiry (Unix seconds), 16 random bytes and an HMAC-SHA256 over them and
 *   the entity id, provider name and redirect URL it was made for; 71
 *   base64url characters (the RFC allows 43-128 of that alphabet). Only
 *   this server can make one, and one opens only for its entity, provider
 *   and redirect URL, within {@link FLOW_TTL_S}.
 * - `code_challenge` = BASE64URL(SHA-256(code_verifier)), method `S256`: the
 *   provider issues a code only for it, and hands the tokens out only to
 *   the holder of the verifier.
 * - `state` and the OpenID Connect `nonce` are derived from the verifier
 *   with the same key (HMAC), so `login-oauth2` recomputes them: a `state`
 *   sent with the login must match, and the id token must carry the nonce.
 *
 * Single use is the caller's part: `opened.id` is spent in the database
 * (lib/auth/oauth2/spent.ts) before the code is exchanged.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** Seconds a `methods` answer stays good for a sign-in. */
export const FLOW_TTL_S = 600;

const VERSION = 1, HEAD = 21, MAC = 32;

/** The PKCE and state values a login page uses for one provider. */
export interface FlowValues {
  state: string;
  code_verifier: string;
  code_challenge: string;
  code_challenge_method: "S256";
  /** Goes into the authorization URL; the id token must carry it. */
  nonce: string;
}

/** A verifier that opened: what single use and the id token check need. */
export interface OpenedFlow {
  /** Unique per verifier (hex): spent once. */
  id: string;
  /** Unix seconds after which the verifier no longer opens. */
  expires: number;
  state: string;
  nonce: string;
}

/** What a verifier is bound to. */
export interface FlowBinding {
  entityId: string;
  provider: string;
  /** The redirect URL given to `methods` ("" when none was). */
  redirect: string;
}

function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** Makes and opens the sealed values with one key (derived from the JWT secret). */
export class FlowSeal {
  #key: Uint8Array;

  /** Derives the sealing key from the server's secret. */
  constructor(secret: string) {
    this.#key = new Uint8Array(
      createHash("sha256").update(`moonbase-oauth2-flow:${secret}`).digest(),
    );
  }

  #mac(head: Uint8Array, b: FlowBinding): Buffer {
    return createHmac("sha256", this.#key)
      .update(head)
      .update(`\0${b.entityId}\0${b.provider}\0${b.redirect}`)
      .digest();
  }

  #derive(label: string, verifier: string): string {
    return createHmac("sha256", this.#key).update(`${label}\0${verifier}`)
      .digest("base64url");
  }

  /**
   * Fresh values for one provider, good for {@link FLOW_TTL_S} from
   * `nowMs`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { FlowSeal } from "moonbase/lib/auth/oauth2/flow.ts";
   * const seal = new FlowSeal("secret");
   * const b = { entityId: "e1", provider: "google", redirect: "" };
   * const v = seal.issue(b, Date.now());
   * assert.equal(v.code_verifier.length, 71);
   * assert.equal(seal.open(v.code_verifier, b, Date.now())?.state, v.state);
   * assert.equal(seal.open(v.code_verifier, { ...b, provider: "gitlab" }, Date.now()), undefined);
   * ```
   */
  issue(binding: FlowBinding, nowMs: number): FlowValues {
    const head = new Uint8Array(HEAD);
    head[0] = VERSION;
    new DataView(head.buffer).setUint32(
      1,
      Math.floor(nowMs / 1000) + FLOW_TTL_S,
    );
    crypto.getRandomValues(head.subarray(5));
    const sealed = new Uint8Array(HEAD + MAC);
    sealed.set(head);
    sealed.set(this.#mac(head, binding), HEAD);
    const verifier = b64url(sealed);
    return {
      state: this.#derive("state", verifier),
      code_verifier: verifier,
      code_challenge: createHash("sha256").update(verifier).digest(
        "base64url",
      ),
      code_challenge_method: "S256",
      nonce: this.#derive("nonce", verifier),
    };
  }

  /**
   * The verifier's flow, or undefined when it was not made here for this
   * binding, or has expired. Compares in constant time.
   */
  open(
    verifier: string,
    binding: FlowBinding,
    nowMs: number,
  ): OpenedFlow | undefined {
    if (!/^[A-Za-z0-9_-]{71}$/.test(verifier)) return undefined;
    const sealed = Buffer.from(verifier, "base64url");
    if (sealed.length !== HEAD + MAC || sealed[0] !== VERSION) {
      return undefined;
    }
    const head = new Uint8Array(sealed.subarray(0, HEAD));
    const mac = this.#mac(head, binding);
    if (!timingSafeEqual(mac, sealed.subarray(HEAD))) return undefined;
    // base64url of 53 bytes has unused low bits in its last character: only
    // the canonical spelling opens (one verifier, one id).
    if (b64url(sealed) !== verifier) return undefined;
    const expires = new DataView(head.buffer).getUint32(1);
    if (nowMs / 1000 > expires) return undefined;
    return {
      id: Buffer.from(head.subarray(5)).toString("hex"),
      expires,
      state: this.#derive("state", verifier),
      nonce: this.#derive("nonce", verifier),
    };
  }
}

/** Constant-time equality of two strings. */
export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a), y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
