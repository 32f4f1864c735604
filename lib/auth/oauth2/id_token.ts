/**
 * Id token verification (OpenID Connect Core 1.0, section 3.1.3.7) with
 * `jose`: the signature by a key of the issuer's JWKS (asymmetric
 * algorithms only: those the discovery document lists), `iss` the
 * discovered issuer, `aud` the client id (and `azp` the client id when the
 * token has several audiences), `exp` in the future and `iat` present
 * (60 s of clock skew allowed), `sub` present, and `nonce` the one the
 * sign-in's code verifier derives. Any failure is a 401 that names it.
 *
 * Key sets are fetched within the outbound bounds and cached for an hour;
 * a token signed by a key not in the cached set fetches the set again
 * (rotation), at most once a minute per issuer.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import * as jose from "npm:jose@6.2.17";
import { MoonbaseError } from "../../errors.ts";
import { sameText } from "./flow.ts";
import { refusedLogin } from "./exchange.ts";
import { fetchJson, type FetchLimits, providerFailed } from "./fetch.ts";
import type { Endpoints } from "./types.ts";

/** How long a key set is kept, and the least time between two fetches. */
export const JWKS_TTL_MS = 3_600_000, JWKS_COOLDOWN_MS = 60_000;

type KeyLookup = ReturnType<typeof jose.createLocalJWKSet>;

interface CachedKeys {
  at: number;
  keys: Promise<KeyLookup>;
}

/** The key sets of the issuers, per app. */
export class KeySets {
  #cache = new Map<string, CachedKeys>();
  #limits: FetchLimits;
  #now: () => number;

  /** Fetches within `limits`; `now` is the cache's clock. */
  constructor(limits: FetchLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  /** The key set at `uri` (cached; `fresh`: fetched again unless just fetched). */
  keys(provider: string, uri: string, fresh = false): Promise<KeyLookup> {
    const hit = this.#cache.get(uri);
    const age = hit ? this.#now() - hit.at : Infinity;
    if (hit && age < (fresh ? JWKS_COOLDOWN_MS : JWKS_TTL_MS)) return hit.keys;
    const entry: CachedKeys = {
      at: this.#now(),
      keys: fetchKeys(provider, uri, this.#limits),
    };
    // A failure is not kept: the next sign-in tries again.
    entry.keys.catch(() => {
      if (this.#cache.get(uri) === entry) this.#cache.delete(uri);
    });
    this.#cache.set(uri, entry);
    return entry.keys;
  }
}

async function fetchKeys(
  provider: string,
  uri: string,
  limits: FetchLimits,
): Promise<KeyLookup> {
  const what = `the key set ${uri}`;
  const { status, body } = await fetchJson(uri, {}, provider, what, limits);
  if (
    status !== 200 || typeof body !== "object" || body === null ||
    !Array.isArray((body as { keys?: unknown }).keys)
  ) {
    throw providerFailed(provider, `${what} answered no keys (HTTP ${status})`);
  }
  try {
    return jose.createLocalJWKSet(body as jose.JSONWebKeySet);
  } catch {
    throw providerFailed(provider, `${what} is not a valid JWKS`);
  }
}

/** What the id token is checked against. */
export interface IdTokenCheck {
  provider: string;
  endpoints: Endpoints;
  clientId: string;
  nonce: string;
  /** Milliseconds since the epoch. */
  now: number;
}

/**
 * The verified claims of an id token, or a 401 naming what was wrong
 * (502 when the key set cannot be had).
 */
export async function verifyIdToken(
  token: string,
  check: IdTokenCheck,
  keySets: KeySets,
): Promise<jose.JWTPayload> {
  const { endpoints, provider } = check;
  if (!endpoints.jwks) throw providerFailed(provider, "it has no key set");
  const verify = async (fresh: boolean) =>
    await jose.jwtVerify(
      token,
      await keySets.keys(provider, endpoints.jwks!, fresh),
      {
        // Microsoft's tenant issuer is checked below, once `tid` is known.
        issuer: endpoints.tenantIssuer ? undefined : endpoints.issuer,
        audience: check.clientId,
        algorithms: [...(endpoints.algorithms ?? ["RS256"])],
        clockTolerance: 60,
        currentDate: new Date(check.now),
        requiredClaims: ["iss", "sub", "aud", "exp", "iat"],
      },
    );
  let payload: jose.JWTPayload;
  try {
    try {
      payload = (await verify(false)).payload;
    } catch (err) {
      // A key the cached set lacks: the issuer may have rotated its keys.
      if (!(err instanceof jose.errors.JWKSNoMatchingKey)) throw err;
      payload = (await verify(true)).payload;
    }
  } catch (err) {
    if (err instanceof jose.errors.JOSEError) {
      throw refusedLogin(provider, `the id token is invalid (${reason(err)})`);
    }
    if (err instanceof MoonbaseError) throw err; // the key set failed (502)
    // Anything else came from importing the matching key: the issuer
    // published a key WebCrypto cannot use (an RSA modulus too short, a
    // member missing or of the wrong type, a private key).
    throw providerFailed(
      provider,
      `the key set ${endpoints.jwks} holds a key that cannot be used (${
        err instanceof Error ? err.message.slice(0, 200) : String(err)
      })`,
    );
  }
  if (endpoints.tenantIssuer) {
    const tid = payload.tid;
    if (
      typeof tid !== "string" || !/^[0-9a-f-]{36}$/.test(tid) ||
      payload.iss !== endpoints.issuer.replace("{tenantid}", tid)
    ) {
      throw refusedLogin(
        provider,
        "the id token is invalid (its issuer is not the tenant's)",
      );
    }
  }
  if (
    Array.isArray(payload.aud) && payload.aud.length > 1 &&
    payload.azp !== check.clientId
  ) {
    throw refusedLogin(
      provider,
      "the id token is invalid (azp is not this client)",
    );
  }
  if (
    typeof payload.nonce !== "string" || !sameText(payload.nonce, check.nonce)
  ) {
    throw refusedLogin(
      provider,
      "the id token is invalid (its nonce is not this sign-in's)",
    );
  }
  return payload;
}

function reason(err: InstanceType<typeof jose.errors.JOSEError>): string {
  if (err instanceof jose.errors.JWTExpired) return "expired";
  if (err instanceof jose.errors.JWTClaimValidationFailed) {
    return `${err.claim}: ${
      err.reason === "check_failed" ? "mismatch" : err.reason
    }`;
  }
  if (err instanceof jose.errors.JWSSignatureVerificationFailed) {
    return "bad signature";
  }
  if (err instanceof jose.errors.JWKSNoMatchingKey) {
    return "signed by a key the issuer does not publish";
  }
  if (err instanceof jose.errors.JOSEAlgNotAllowed) {
    return "signature algorithm not allowed";
  }
  return err.code;
}
