/**
 * The shapes OAuth2 sign-in works with: a provider as an auth entity's
 * `auth.oauth2.providers` configures it, the endpoints it resolves to, and
 * the identity a provider vouches for.
 *
 * @module
 */

/** The presets (docs/guide/accounts-oauth2.md): the schema's `ProviderPreset`. */
export type { ProviderPreset as PresetName } from "../../schema/auth_types.ts";

/** One provider of an auth entity (`auth.oauth2.providers[i]`). */
export interface ProviderConfig {
  /** The `provider` of `login-oauth2`. */
  readonly name: string;
  readonly display_name: string;
  /** An OpenID Connect issuer URL ("" with a preset). */
  readonly issuer: string;
  /** A preset ("" with an issuer). */
  readonly preset: string;
  readonly client_id: string;
  readonly client_secret: string;
  /** Scopes to ask for; empty: the provider's defaults. */
  readonly scopes: readonly string[];
}

/** The `auth.oauth2` object of an auth entity. */
export interface OAuth2Options {
  readonly enabled: boolean;
  readonly providers: readonly ProviderConfig[];
  /** The entity's fields that take the provider's name and avatar URL. */
  readonly fields: {
    readonly name: string | null;
    readonly avatar: string | null;
  };
}

/**
 * How a provider tells who signed in: `oidc` (an id token, and its userinfo
 * endpoint for claims the token lacks), or the user APIs of GitHub and
 * Discord, which are OAuth2 without OpenID Connect.
 */
export type ProviderKind = "oidc" | "github" | "discord";

/** A provider resolved to its endpoints. */
export interface Endpoints {
  readonly kind: ProviderKind;
  /** The issuer as the provider names itself (for `oidc`: the discovery document's). */
  readonly issuer: string;
  readonly authorization: string;
  readonly token: string;
  /** `oidc`: where the signing keys are. */
  readonly jwks?: string;
  /** GitHub, Discord: the base URL of the user API. */
  readonly api?: string;
  /** `oidc`: the userinfo endpoint, when the provider has one. */
  readonly userinfo?: string;
  /** Signature algorithms the id token may use (`oidc`). */
  readonly algorithms?: readonly string[];
  /** The client authenticates with HTTP Basic (else in the form body). */
  readonly basicAuth: boolean;
  /**
   * Microsoft's multi-tenant issuer: `issuer` holds `{tenantid}`, which the
   * id token's `tid` fills in.
   */
  readonly tenantIssuer?: boolean;
  /** Scopes asked for when the provider's configuration names none. */
  readonly defaultScopes: readonly string[];
  /** Extra parameters of the authorization URL (Apple: `response_mode`). */
  readonly authParams?: Readonly<Record<string, string>>;
}

/** Who the provider says signed in. */
export interface Identity {
  /** The issuer the subject belongs to (links are per issuer and subject). */
  issuer: string;
  /** The provider's stable id of the user. */
  subject: string;
  /** The user's email, lowercased ("" when the provider gave none). */
  email: string;
  /** True only when the provider says it verified `email`. */
  emailVerified: boolean;
  /** A display name ("" when none). */
  name: string;
  /** An avatar image URL ("" when none). */
  avatar: string;
}
