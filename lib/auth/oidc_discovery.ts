/**
 * The dashboard's "Check" of an OAuth2 provider: the server fetches an
 * OpenID Connect issuer's discovery document
 * (`<issuer>/.well-known/openid-configuration`) for the admin, because a
 * browser cannot (CORS). The fetch is bounded in time and size, follows no
 * redirect, and goes to https issuers only (plain http only on this
 * machine). The document must name the issuer it was fetched for (OpenID
 * Connect Discovery 1.0, section 4.3) and https endpoints.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** The bounds of one discovery fetch. */
export interface DiscoveryLimits {
  /** Milliseconds the whole fetch (connect, headers, body) may take. */
  timeoutMs: number;
  /** Most bytes of the document read. */
  maxBytes: number;
}

/** Default bounds: 5 s and 256 KiB (a discovery document is a few KiB). */
export const DISCOVERY_LIMITS: DiscoveryLimits = {
  timeoutMs: 5_000,
  maxBytes: 262_144,
};

/** What the check reports of a document. */
export interface DiscoverySummary {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

function allowedUrl(v: unknown, query = true): v is string {
  if (typeof v !== "string" || v.length > 2000) return false;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return false;
  }
  if (!query && (u.search || u.hash)) return false;
  return u.protocol === "https:" ||
    (u.protocol === "http:" && LOOPBACK.test(u.hostname));
}

function failed(reason: string): MoonbaseError {
  return new MoonbaseError(
    "bad_gateway",
    `Cannot check the issuer: ${reason}`,
  );
}

/**
 * Fetches and checks the discovery document of `body.issuer`: its
 * endpoints, or 400 for an issuer that is not an https URL (http only for
 * localhost), or 502 naming what failed (unreachable, too slow, too
 * large, not JSON, another issuer, an endpoint missing).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkDiscovery } from "moonbase/lib/auth/oidc_discovery.ts";
 * await assert.rejects(checkDiscovery({ issuer: "http://idp.example.com" }), /https/);
 * ```
 */
export async function checkDiscovery(
  body: Record<string, unknown>,
  limits: DiscoveryLimits = DISCOVERY_LIMITS,
): Promise<DiscoverySummary> {
  const given = body.issuer;
  if (!allowedUrl(given, false)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot check the issuer: `issuer` must be an https URL without query or fragment (http only for localhost)",
      {
        fields: {
          issuer: {
            code: "invalid_url",
            message:
              "Must be an https URL without query or fragment (http only for localhost)",
          },
        },
      },
    );
  }
  const issuer = given.replace(/\/+$/, "");
  const url = `${issuer}/.well-known/openid-configuration`;
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const late = () =>
    failed(`${url} did not answer within ${limits.timeoutMs / 1000} s`);
  let res: Response;
  try {
    res = await fetch(url, {
      signal,
      redirect: "error",
      headers: { accept: "application/json" },
    });
  } catch (err) {
    if (signal.aborted) throw late();
    throw failed(`${url} could not be reached (${oneLine(err)})`);
  }
  let text: string;
  try {
    text = await readBounded(res, limits.maxBytes);
  } catch (err) {
    if (err instanceof MoonbaseError) throw err;
    if (signal.aborted) throw late();
    throw failed(`${url} broke off its answer (${oneLine(err)})`);
  }
  if (res.status !== 200) throw failed(`${url} answered HTTP ${res.status}`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw failed(`${url} answered something that is not JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw failed(`${url} answered JSON that is not an object`);
  }
  const d = doc as Record<string, unknown>;
  const named = typeof d.issuer === "string" ? d.issuer : "";
  if (named.replace(/\/+$/, "") !== issuer) {
    throw failed(
      `the document names the issuer ${
        JSON.stringify(named.slice(0, 200))
      }, not ${issuer}`,
    );
  }
  for (const key of ["authorization_endpoint", "token_endpoint", "jwks_uri"]) {
    if (!allowedUrl(d[key])) {
      throw failed(`the document has no valid ${key} (an https URL)`);
    }
  }
  return {
    issuer: named,
    authorization_endpoint: d.authorization_endpoint as string,
    token_endpoint: d.token_endpoint as string,
    jwks_uri: d.jwks_uri as string,
  };
}

async function readBounded(res: Response, max: number): Promise<string> {
  const tooLarge = () => failed(`the document is larger than ${max} bytes`);
  if (Number(res.headers.get("content-length") ?? "0") > max) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split("\n")[0].slice(0, 200);
}
