/**
 * Provider resolution: a configured provider (an OpenID Connect issuer or a
 * preset) becomes its endpoints. Issuers are read from their discovery
 * document (`<issuer>/.well-known/openid-configuration`), fetched within
 * the outbound bounds (lib/auth/oauth2/fetch.ts) and cached: a document for
 * an hour, a failure for 30 seconds (a down issuer costs one timeout per
 * half minute, not one per request). Concurrent misses share one fetch.
 *
 * The document must name the issuer it was fetched for (OpenID Connect
 * Discovery 1.0, section 4.3) and https endpoints (http only on loopback),
 * on this machine only when the issuer is (`isProviderUrl`).
 *
 * @module
 */

import { fetchJson, type FetchLimits, providerFailed } from "./fetch.ts";
import { isPreset, type OidcPreset, PRESETS } from "./presets.ts";
import type { Endpoints, PresetName, ProviderConfig } from "./types.ts";

/** How long a document and a failure are kept (milliseconds). */
export const DISCOVERY_TTL_MS = 3_600_000, FAILURE_TTL_MS = 30_000;

/** Signature algorithms accepted when a document lists none (RS256 is OIDC's default). */
const ASYMMETRIC = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];

interface Cached {
  at: number;
  result: Promise<Endpoints>;
  failed: boolean;
}

/** Resolves providers to endpoints, with a cache per app. */
export class ProviderResolver {
  #cache = new Map<string, Cached>();
  #limits: FetchLimits;
  #presets: Readonly<Record<PresetName, OidcPreset | Endpoints>>;
  #now: () => number;

  /**
   * `presets` replaces fixed endpoints (tests point GitHub and Discord at a
   * local server); `now` is the clock of the cache.
   */
  constructor(
    limits: FetchLimits,
    presets: Partial<Record<PresetName, OidcPreset | Endpoints>> = {},
    now: () => number = Date.now,
  ) {
    this.#limits = limits;
    this.#presets = { ...PRESETS, ...presets };
    this.#now = now;
  }

  /** The endpoints of a configured provider (502 when its issuer fails). */
  resolve(config: ProviderConfig): Promise<Endpoints> {
    if (config.preset !== "") {
      if (!isPreset(config.preset)) {
        throw providerFailed(
          config.name,
          `the preset "${config.preset}" is unknown`,
        );
      }
      const p = this.#presets[config.preset];
      // Fixed endpoints (GitHub, Discord), or an issuer to discover.
      if ("token" in p) return Promise.resolve(p);
      return this.#discover(config.name, p.issuer, p);
    }
    return this.#discover(config.name, config.issuer.replace(/\/+$/, ""));
  }

  /** Forgets cached documents (an administrator's "check" fetches anew). */
  forget(issuer?: string): void {
    if (issuer === undefined) this.#cache.clear();
    else this.#cache.delete(issuer.replace(/\/+$/, ""));
  }

  #discover(
    name: string,
    issuer: string,
    preset?: OidcPreset,
  ): Promise<Endpoints> {
    const now = this.#now();
    const hit = this.#cache.get(issuer);
    if (
      hit && now - hit.at < (hit.failed ? FAILURE_TTL_MS : DISCOVERY_TTL_MS)
    ) {
      return hit.result;
    }
    const result = fetchDiscovery(name, issuer, this.#limits, preset);
    const entry: Cached = { at: now, failed: false, result };
    result.catch(() => {
      entry.failed = true;
      entry.at = this.#now();
    });
    this.#cache.set(issuer, entry);
    return entry.result;
  }
}

/**
 * True for a host name of this machine, as the URL parser spells it
 * (`localhost` and its subdomains, 127.0.0.0/8, `::1`, the unspecified
 * addresses, IPv4-mapped loopback).
 */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/\.$/, "").toLowerCase();
  return /(^|\.)localhost$/.test(h) || /^127\.\d+\.\d+\.\d+$/.test(h) ||
    h === "0.0.0.0" || h === "[::1]" || h === "[::]" ||
    /^\[::ffff:(7f[0-9a-f]{2}:[0-9a-f]{1,4}|127\.[\d.]+)\]$/.test(h);
}

/**
 * True for an endpoint a provider may name: https, or plain http on this
 * machine (a local test issuer). Only an issuer on this machine may name
 * endpoints on it: a remote issuer's document must not send the server's
 * requests (with the client secret and the code) to its own local
 * services. (Private network addresses and DNS that resolves to them are
 * not refused: an issuer is an administrator's choice.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isProviderUrl } from "moonbase/lib/auth/oauth2/discovery.ts";
 * assert.ok(isProviderUrl("https://idp.example/token", "https://idp.example"));
 * assert.ok(isProviderUrl("http://127.0.0.1:9000/token", "http://127.0.0.1:9000"));
 * assert.ok(!isProviderUrl("http://idp.example/token", "https://idp.example"));
 * assert.ok(!isProviderUrl("https://localhost/token", "https://idp.example"));
 * assert.ok(!isProviderUrl("http://127.0.0.1:6379/", "https://idp.example"));
 * ```
 */
export function isProviderUrl(v: unknown, issuer: string): v is string {
  if (typeof v !== "string" || v.length > 2000) return false;
  let u: URL, local: boolean;
  try {
    u = new URL(v);
    local = isLoopbackHost(new URL(issuer).hostname);
  } catch {
    return false;
  }
  if (isLoopbackHost(u.hostname)) {
    return local && (u.protocol === "https:" || u.protocol === "http:");
  }
  return u.protocol === "https:";
}

async function fetchDiscovery(
  name: string,
  issuer: string,
  limits: FetchLimits,
  preset?: OidcPreset,
): Promise<Endpoints> {
  const url = `${issuer}/.well-known/openid-configuration`;
  const what = `the discovery document ${url}`;
  const { status, body } = await fetchJson(url, {}, name, what, limits);
  if (status !== 200 || typeof body !== "object" || body === null) {
    throw providerFailed(name, `${what} answered HTTP ${status}`);
  }
  const doc = body as Record<string, unknown>;
  const named = typeof doc.issuer === "string"
    ? doc.issuer.replace(/\/+$/, "")
    : "";
  const tenant = preset?.tenantIssuer === true;
  // Microsoft's multi-tenant document names a template: `…/{tenantid}/v2.0`.
  const matches = tenant
    ? named.replace("{tenantid}", "common") === issuer
    : named === issuer;
  if (!matches) {
    throw providerFailed(
      name,
      `${what} names the issuer ${
        JSON.stringify(String(doc.issuer).slice(0, 200))
      }, not ${issuer}`,
    );
  }
  for (const key of ["authorization_endpoint", "token_endpoint", "jwks_uri"]) {
    if (!isProviderUrl(doc[key], issuer)) {
      throw providerFailed(name, `${what} has no valid ${key} (an https URL)`);
    }
  }
  if (
    doc.userinfo_endpoint !== undefined &&
    !isProviderUrl(doc.userinfo_endpoint, issuer)
  ) {
    throw providerFailed(name, `${what} has an invalid userinfo_endpoint`);
  }
  const methods = Array.isArray(doc.token_endpoint_auth_methods_supported)
    ? doc.token_endpoint_auth_methods_supported
    : ["client_secret_basic"];
  const algs = Array.isArray(doc.id_token_signing_alg_values_supported)
    ? doc.id_token_signing_alg_values_supported.filter((a): a is string =>
      typeof a === "string" && ASYMMETRIC.includes(a)
    )
    : ["RS256"];
  return {
    kind: "oidc",
    issuer: String(doc.issuer),
    authorization: doc.authorization_endpoint as string,
    token: doc.token_endpoint as string,
    jwks: doc.jwks_uri as string,
    userinfo: doc.userinfo_endpoint as string | undefined,
    algorithms: algs.length > 0 ? algs : ["RS256"],
    // client_secret_basic is the default of RFC 6749 and OpenID Connect;
    // the form body only when the provider lists it and not Basic.
    basicAuth: methods.includes("client_secret_basic") ||
      !methods.includes("client_secret_post"),
    tenantIssuer: tenant,
    defaultScopes: preset?.defaultScopes ?? ["openid", "email", "profile"],
    authParams: preset?.authParams,
  };
}
