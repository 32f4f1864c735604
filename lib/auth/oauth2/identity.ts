/**
 * Who signed in, as the provider vouches for it, after the token exchange:
 *
 * - OpenID Connect: the verified id token's claims (lib/auth/oauth2/
 *   id_token.ts); when it carries no email, the userinfo endpoint's (whose
 *   `sub` must be the id token's) fill the claims it lacks.
 * - GitHub: `GET /user`, and `GET /user/emails` for the primary address and
 *   whether GitHub verified it.
 * - Discord: `GET /users/@me` (`email`, `verified`).
 *
 * Which claims count as a verified email per preset: lib/auth/oauth2/
 * presets.ts.
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import type { JWTPayload } from "npm:jose@6.2.17";
import { fetchJson, type FetchLimits, providerFailed } from "./fetch.ts";
import type { TokenAnswer } from "./exchange.ts";
import { type KeySets, verifyIdToken } from "./id_token.ts";
import type { Endpoints, Identity, ProviderConfig } from "./types.ts";

/** What finding the identity needs besides the tokens. */
export interface IdentityContext {
  config: ProviderConfig;
  endpoints: Endpoints;
  nonce: string;
  now: number;
  keySets: KeySets;
  limits: FetchLimits;
}

/** The identity behind a token answer. */
export async function identityOf(
  tokens: TokenAnswer,
  cx: IdentityContext,
): Promise<Identity> {
  switch (cx.endpoints.kind) {
    case "github":
      return await githubIdentity(tokens.accessToken, cx);
    case "discord":
      return await discordIdentity(tokens.accessToken, cx);
    default:
      return await oidcIdentity(tokens, cx);
  }
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/**
 * A provider's email as users' emails are stored (lower case), and whether
 * it can be trusted as the address the provider verified: not when lower
 * casing folds a character outside ASCII into ASCII (the Kelvin sign
 * U+212A becomes `k`, `İ` becomes `i` and a dot), for then the provider
 * verified another address than the one it would match here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerEmail } from "moonbase/lib/auth/oauth2/identity.ts";
 * assert.deepEqual(providerEmail("Ada@Example.com"), { address: "ada@example.com", trusted: true });
 * assert.deepEqual(providerEmail("\u212Aate@example.com"), { address: "kate@example.com", trusted: false });
 * assert.deepEqual(providerEmail(5), { address: "", trusted: false });
 * ```
 */
export function providerEmail(
  v: unknown,
): { address: string; trusted: boolean } {
  const raw = str(v);
  const trusted = raw !== "" &&
    ![...raw].some((c) =>
      c.charCodeAt(0) > 0x7f &&
      [...c.toLowerCase()].some((l) => l.charCodeAt(0) <= 0x7f)
    );
  return { address: raw.toLowerCase(), trusted };
}

function isTrue(v: unknown): boolean {
  return v === true || v === "true";
}

function imageUrl(v: unknown): string {
  const s = str(v);
  return /^https?:\/\/\S{1,2000}$/.test(s) ? s : "";
}

async function getJson(
  url: string,
  accessToken: string,
  cx: IdentityContext,
  what: string,
): Promise<{ status: number; body: unknown }> {
  return await fetchJson(
    url,
    {
      headers: {
        authorization: `Bearer ${accessToken}`,
        // GitHub's API refuses requests without one.
        "user-agent": "Moonbase",
      },
    },
    cx.config.name,
    what,
    cx.limits,
  );
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? v as Record<string, unknown>
    : undefined;
}

async function oidcIdentity(
  tokens: TokenAnswer,
  cx: IdentityContext,
): Promise<Identity> {
  if (tokens.idToken === "") {
    throw providerFailed(
      cx.config.name,
      'the token endpoint answered without an id_token (the scopes must include "openid")',
    );
  }
  const claims: JWTPayload = await verifyIdToken(tokens.idToken, {
    provider: cx.config.name,
    endpoints: cx.endpoints,
    clientId: cx.config.client_id,
    nonce: cx.nonce,
    now: cx.now,
  }, cx.keySets);
  let all: Record<string, unknown> = { ...claims };
  // The email and whether it is verified come from one answer: an id token's
  // `email_verified` says nothing of the email userinfo gives.
  let mail: Record<string, unknown> = claims;
  if (str(claims.email) === "" && cx.endpoints.userinfo) {
    const { status, body } = await getJson(
      cx.endpoints.userinfo,
      tokens.accessToken,
      cx,
      "the userinfo endpoint",
    );
    const info = asObject(body);
    if (status !== 200 || !info) {
      throw providerFailed(
        cx.config.name,
        `the userinfo endpoint answered HTTP ${status}`,
      );
    }
    // OpenID Connect Core 5.3.2: a userinfo of another subject is not used.
    if (info.sub === claims.sub) {
      all = { ...info, ...claims };
      mail = info;
    }
  }
  const email = providerEmail(mail.email);
  const verified = isTrue(mail.email_verified) ||
    (cx.endpoints.tenantIssuer === true && isTrue(mail.xms_edov));
  const name = str(all.name) ||
    [str(all.given_name), str(all.family_name)].filter(Boolean).join(" ") ||
    str(all.preferred_username);
  return {
    issuer: String(claims.iss),
    subject: String(claims.sub),
    email: email.address,
    emailVerified: verified && email.address !== "" && email.trusted,
    name,
    avatar: imageUrl(all.picture),
  };
}

async function githubIdentity(
  accessToken: string,
  cx: IdentityContext,
): Promise<Identity> {
  const api = cx.endpoints.api ?? "https://api.github.com";
  const user = await getJson(
    `${api}/user`,
    accessToken,
    cx,
    "GitHub's user API",
  );
  const u = asObject(user.body);
  if (user.status !== 200 || !u || u.id === undefined) {
    throw providerFailed(
      cx.config.name,
      `GitHub's user API answered HTTP ${user.status}`,
    );
  }
  let email = str(u.email), verified = false;
  const emails = await getJson(
    `${api}/user/emails`,
    accessToken,
    cx,
    "GitHub's emails API",
  );
  // Without the user:email scope the list is refused: the public email
  // then stands, unverified.
  if (emails.status === 200 && Array.isArray(emails.body)) {
    const primary = emails.body.map(asObject).find((e) => e?.primary === true);
    if (primary && str(primary.email) !== "") {
      email = str(primary.email);
      verified = primary.verified === true;
    }
  }
  const address = providerEmail(email);
  return {
    issuer: cx.endpoints.issuer,
    subject: String(u.id),
    email: address.address,
    emailVerified: verified && address.trusted,
    name: str(u.name) || str(u.login),
    avatar: imageUrl(u.avatar_url),
  };
}

async function discordIdentity(
  accessToken: string,
  cx: IdentityContext,
): Promise<Identity> {
  const api = cx.endpoints.api ?? "https://discord.com/api";
  const me = await getJson(
    `${api}/users/@me`,
    accessToken,
    cx,
    "Discord's user API",
  );
  const u = asObject(me.body);
  if (me.status !== 200 || !u || str(u.id) === "") {
    throw providerFailed(
      cx.config.name,
      `Discord's user API answered HTTP ${me.status}`,
    );
  }
  const id = str(u.id), avatar = str(u.avatar);
  const email = providerEmail(u.email);
  return {
    issuer: cx.endpoints.issuer,
    subject: id,
    email: email.address,
    emailVerified: u.verified === true && email.address !== "" &&
      email.trusted,
    name: str(u.global_name) || str(u.username),
    avatar: /^[a-z0-9_]{1,64}$/i.test(avatar) && /^\d{1,30}$/.test(id)
      ? `https://cdn.discordapp.com/avatars/${id}/${avatar}.png`
      : "",
  };
}
