/**
 * The dashboard's "Check issuer" of an OAuth2 provider
 * (`POST /api/v1/sys/oauth2/discovery {issuer}`): the server resolves the
 * issuer as a sign-in would (discovery.ts: the bounded fetch of
 * `<issuer>/.well-known/openid-configuration`, the issuer named in it,
 * https endpoints), anew rather than from the cache, because a browser
 * cannot fetch it (CORS).
 *
 * @module
 */

import { issuerUrl } from "../../schema/auth_options.ts";
import { MoonbaseError } from "../../errors.ts";
import type { ProviderResolver } from "./discovery.ts";
import { failureReason } from "./fetch.ts";

/** What the check reports of an issuer. */
export interface IssuerSummary {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

/** The provider name the resolver's errors carry for a check. */
const CHECKED = "the issuer";

/**
 * Resolves `body.issuer` afresh: its endpoints; 400 for an issuer that is
 * not an https URL (http only for localhost), fetched not at all; 502
 * `Cannot check the issuer: <what failed>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkIssuer } from "moonbase/lib/auth/oauth2/issuer_check.ts";
 * import { ProviderResolver } from "moonbase/lib/auth/oauth2/discovery.ts";
 * const resolver = new ProviderResolver({ timeoutMs: 1000, maxBytes: 10_000 });
 * await assert.rejects(checkIssuer(resolver, { issuer: "http://idp.example.com" }), /https URL/);
 * ```
 */
export async function checkIssuer(
  resolver: ProviderResolver,
  body: Record<string, unknown>,
): Promise<IssuerSummary> {
  const checked = body.issuer === "" ? undefined : issuerUrl(body.issuer);
  if (!checked?.ok) {
    const message =
      "Must be an https URL without query or fragment (http only for localhost)";
    throw new MoonbaseError(
      "invalid",
      "Cannot check the issuer: `issuer` must be an https URL without query or fragment (http only for localhost)",
      { fields: { issuer: { code: "invalid_url", message } } },
    );
  }
  const issuer = String(checked.value);
  resolver.forget(issuer);
  try {
    const e = await resolver.resolve({
      name: CHECKED,
      display_name: "",
      issuer,
      preset: "",
      client_id: "",
      client_secret: "",
      scopes: [],
    });
    return {
      issuer: e.issuer,
      authorization_endpoint: e.authorization,
      token_endpoint: e.token,
      jwks_uri: e.jwks ?? "",
    };
  } catch (err) {
    const reason = failureReason(err, CHECKED);
    if (reason === undefined) throw err;
    throw new MoonbaseError(
      "bad_gateway",
      `Cannot check the issuer: ${reason}`,
    );
  }
}
