/**
 * The presets: providers an administrator names instead of giving an
 * issuer. Four are OpenID Connect issuers (resolved by discovery like any
 * other); GitHub and Discord are OAuth2 only, so their endpoints are fixed
 * here and the user comes from their user APIs.
 *
 * What each preset counts as a verified email (only a verified email links
 * a sign-in to an existing user):
 *
 * - google: the id token's `email_verified: true`.
 * - gitlab: the id token's (or userinfo's) `email_verified: true`.
 * - apple: `email_verified` true (Apple sends it as `true` or `"true"`);
 *   relay addresses (`privaterelay.appleid.com`) are verified by Apple too.
 * - microsoft: Microsoft does not verify the `email` claim of work
 *   accounts; it counts as verified only with `email_verified: true` or
 *   `xms_edov: true` (the optional "email domain owner verified" claim,
 *   added in the app registration's token configuration). Otherwise the
 *   email is unverified: it never links to an existing user.
 * - github: the primary address of `GET /user/emails` with `verified:
 *   true` (scope `user:email`); without one, the primary address
 *   unverified.
 * - discord: `GET /users/@me`'s `email` with `verified: true` (scope
 *   `email`).
 *
 * @module
 */

import type { Endpoints, PresetName } from "./types.ts";

/** An OpenID Connect preset: an issuer resolved by discovery. */
export interface OidcPreset {
  readonly kind: "oidc";
  readonly issuer: string;
  readonly defaultScopes: readonly string[];
  readonly tenantIssuer?: boolean;
  readonly authParams?: Readonly<Record<string, string>>;
}

/** The presets and how each is resolved. */
export const PRESETS: Readonly<Record<PresetName, OidcPreset | Endpoints>> = {
  google: {
    kind: "oidc",
    issuer: "https://accounts.google.com",
    defaultScopes: ["openid", "email", "profile"],
  },
  microsoft: {
    kind: "oidc",
    // Any tenant and personal accounts: the id token's `iss` names its
    // tenant (`https://login.microsoftonline.com/<tid>/v2.0`).
    issuer: "https://login.microsoftonline.com/common/v2.0",
    defaultScopes: ["openid", "email", "profile"],
    tenantIssuer: true,
  },
  gitlab: {
    kind: "oidc",
    issuer: "https://gitlab.com",
    defaultScopes: ["openid", "email", "profile"],
  },
  apple: {
    kind: "oidc",
    issuer: "https://appleid.apple.com",
    defaultScopes: ["openid", "email", "name"],
    // Apple posts the answer to the redirect URL when it is asked for the
    // email or name (the page there reads `code` and `state` from the form).
    authParams: { response_mode: "form_post" },
  },
  github: {
    kind: "github",
    issuer: "https://github.com",
    authorization: "https://github.com/login/oauth/authorize",
    token: "https://github.com/login/oauth/access_token",
    api: "https://api.github.com",
    basicAuth: false,
    defaultScopes: ["read:user", "user:email"],
  },
  discord: {
    kind: "discord",
    issuer: "https://discord.com",
    authorization: "https://discord.com/oauth2/authorize",
    token: "https://discord.com/api/oauth2/token",
    api: "https://discord.com/api",
    basicAuth: false,
    defaultScopes: ["identify", "email"],
  },
};

/** True for a known preset name. */
export function isPreset(name: string): name is PresetName {
  return Object.hasOwn(PRESETS, name);
}
