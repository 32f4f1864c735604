/**
 * HS256 JWTs (via jose) with the claims `sub`, `entity`, `jti`, `iat`, `exp`
 * and `gen` (the user's password generation, see `revocation.ts`).
 * Only HS256 is accepted; `exp` is required. Verified tokens are cached
 * until they expire so the hot path does not re-verify signatures.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import { jwtVerify, SignJWT } from "npm:jose@6.2.17";
import { uuidv7 } from "../ids.ts";

/** Claims Moonbase puts in every token. */
export interface TokenClaims {
  sub: string;
  entity: string;
  jti: string;
  iat: number;
  exp: number;
  /** `"file"` for short-lived file-download tokens (accepted only on file routes). */
  scope?: string;
  /** The user's password generation when issued (absent in tokens from before generations). */
  gen?: number;
  /**
   * The id of the admin who impersonated the user (impersonation tokens
   * only, lib/auth/impersonation.ts): such a token cannot be refreshed.
   */
  imp?: string;
}

const CACHE_MAX = 10_000;

/** A UUIDv7 carrying the time `ms` (the time base, not the process clock). */
function uuidAt(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}${uuidv7().slice(13)}`;
}

/**
 * Signs and verifies tokens with one secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TokenSigner } from "moonbase/lib/auth/jwt.ts";
 * const signer = new TokenSigner("a-secret-of-at-least-32-characters!!", 3600);
 * const { token } = await signer.sign("user-1", "users");
 * const claims = await signer.verify(token);
 * assert.equal(claims?.sub, "user-1");
 * assert.equal(claims?.entity, "users");
 * assert.equal(await signer.verify(token + "x"), undefined);
 * ```
 */
export class TokenSigner {
  #key: Uint8Array;
  #ttl: number;
  #cache = new Map<string, TokenClaims>();
  #now: () => number;

  /**
   * `ttlSeconds` is the lifetime of new tokens; `now` the time base in ms
   * (every instance on one database uses the database's clock, see
   * `lib/db/db_clock.ts`).
   */
  constructor(
    secret: string,
    ttlSeconds: number,
    now: () => number = () => Date.now(),
  ) {
    this.#key = new TextEncoder().encode(secret);
    this.#ttl = ttlSeconds;
    this.#now = now;
  }

  /** Token lifetime in seconds. */
  get ttl(): number {
    return this.#ttl;
  }

  /** Issues a token for a user of an entity. */
  async sign(
    sub: string,
    entity: string,
    options: { ttl?: number; scope?: string; gen?: number; imp?: string } = {},
  ): Promise<{ token: string; claims: TokenClaims }> {
    const ms = this.#now();
    const iat = Math.floor(ms / 1000);
    const claims: TokenClaims = {
      sub,
      entity,
      jti: uuidAt(ms),
      iat,
      exp: iat + (options.ttl ?? this.#ttl),
    };
    const extra: Record<string, string | number> = { entity };
    if (options.scope) extra.scope = claims.scope = options.scope;
    if (options.gen !== undefined) extra.gen = claims.gen = options.gen;
    if (options.imp !== undefined) extra.imp = claims.imp = options.imp;
    const token = await new SignJWT(extra)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(sub)
      .setJti(claims.jti)
      .setIssuedAt(iat)
      .setExpirationTime(claims.exp)
      .sign(this.#key);
    return { token, claims };
  }

  /** Returns the claims of a valid, unexpired token, else undefined. */
  async verify(token: string): Promise<TokenClaims | undefined> {
    const ms = this.#now();
    const now = ms / 1000;
    const hit = this.#cache.get(token);
    if (hit) {
      if (hit.exp > now) return hit;
      this.#cache.delete(token);
      return undefined;
    }
    if (token.length > 4096) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: ["HS256"],
        requiredClaims: ["sub", "jti", "iat", "exp"],
        currentDate: new Date(ms),
      });
      const { sub, entity, jti, iat, exp, scope, gen, imp } = payload;
      if (
        typeof sub !== "string" || typeof entity !== "string" ||
        typeof jti !== "string" ||
        typeof iat !== "number" || typeof exp !== "number"
      ) return undefined;
      if (scope !== undefined && typeof scope !== "string") return undefined;
      if (imp !== undefined && typeof imp !== "string") return undefined;
      if (
        gen !== undefined && !(Number.isSafeInteger(gen) && Number(gen) >= 0)
      ) return undefined;
      const claims: TokenClaims = { sub, entity, jti, iat, exp };
      if (scope) claims.scope = scope;
      if (gen !== undefined) claims.gen = gen as number;
      if (imp !== undefined) claims.imp = imp;
      if (this.#cache.size >= CACHE_MAX) this.#cache.clear();
      this.#cache.set(token, claims);
      return claims;
    } catch {
      return undefined;
    }
  }

  /** Drops a token from the verification cache (after revocation). */
  forget(token: string): void {
    this.#cache.delete(token);
  }
}
