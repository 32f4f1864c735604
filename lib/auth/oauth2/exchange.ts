/**
 * The token exchange (RFC 6749 section 4.1.3 with PKCE, RFC 7636 section
 * 4.5): the code, the redirect URL it was issued for and the code verifier
 * go to the provider's token endpoint with the client's credentials; the
 * answer carries an access token and, from an OpenID Connect provider, an
 * id token. The provider checks that the verifier hashes to the challenge
 * the code was issued for and that the code is used once.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";
import { fetchJson, type FetchLimits, providerFailed } from "./fetch.ts";
import type { Endpoints, ProviderConfig } from "./types.ts";

/** What the token endpoint answered. */
export interface TokenAnswer {
  accessToken: string;
  /** The id token (OpenID Connect); "" when none came. */
  idToken: string;
}

/** The parameters of one exchange. */
export interface CodeGrant {
  code: string;
  redirectUrl: string;
  codeVerifier: string;
}

/** The 401 for a sign-in the provider or its answer refused. */
export function refusedLogin(provider: string, reason: string): MoonbaseError {
  return new MoonbaseError(
    "unauthenticated",
    `Cannot log in with ${provider}: ${reason}; start the sign-in again`,
  );
}

function basic(id: string, secret: string): string {
  // RFC 6749 2.3.1: both form-encoded before Base64.
  const enc = (s: string) => new URLSearchParams({ s }).toString().slice(2);
  return `Basic ${btoa(`${enc(id)}:${enc(secret)}`)}`;
}

/**
 * Exchanges a code for tokens. A refused code (used, expired, issued to
 * another client, redirect URL or challenge) is a 401; a provider that
 * refuses the client's own credentials, fails or does not answer is a 502.
 */
export async function exchangeCode(
  endpoints: Endpoints,
  config: ProviderConfig,
  grant: CodeGrant,
  limits: FetchLimits,
): Promise<TokenAnswer> {
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: grant.code,
    redirect_uri: grant.redirectUrl,
    code_verifier: grant.codeVerifier,
  });
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
  };
  if (endpoints.basicAuth && config.client_secret !== "") {
    headers.authorization = basic(config.client_id, config.client_secret);
  } else {
    form.set("client_id", config.client_id);
    if (config.client_secret !== "") {
      form.set("client_secret", config.client_secret);
    }
  }
  const { status, body } = await fetchJson(
    endpoints.token,
    { method: "POST", headers, body: form.toString() },
    config.name,
    "the token endpoint",
    limits,
  );
  const answer = typeof body === "object" && body !== null
    ? body as Record<string, unknown>
    : {};
  // GitHub answers a refused code with 200 and an `error`.
  if (status !== 200 || typeof answer.error === "string") {
    const code = typeof answer.error === "string"
      ? answer.error.slice(0, 64)
      : `HTTP ${status}`;
    const about = typeof answer.error_description === "string"
      ? `: ${answer.error_description.slice(0, 200)}`
      : "";
    if (code === "invalid_client" || code === "unauthorized_client") {
      throw providerFailed(
        config.name,
        `the provider refused the client credentials (${code}${about}); check client_id and client_secret`,
      );
    }
    if (status >= 500) {
      throw providerFailed(config.name, `the token endpoint answered ${code}`);
    }
    throw refusedLogin(
      config.name,
      `the provider refused the code (${code}${about})`,
    );
  }
  if (typeof answer.access_token !== "string" || answer.access_token === "") {
    throw providerFailed(
      config.name,
      "the token endpoint answered without an access_token",
    );
  }
  return {
    accessToken: answer.access_token,
    idToken: typeof answer.id_token === "string" ? answer.id_token : "",
  };
}
