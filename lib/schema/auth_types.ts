/**
 * The types of an auth entity's `auth` object (checked and read in
 * auth_options.ts).
 *
 * @module
 */

/** A mail template (placeholders: lib/mail/template.ts). */
export interface AuthTemplate {
  subject: string;
  /** The text body. */
  body: string;
  /** The HTML body; "" for text only. */
  html: string;
  /** The link the mail carries as `{ACTION_URL}`; "" for none. */
  action_url: string;
}

/** The mails an auth entity sends. */
export type TemplatePurpose =
  | "verification"
  | "password_reset"
  | "email_change"
  | "otp";

/** The template purposes. */
export const TEMPLATE_PURPOSES: readonly TemplatePurpose[] = [
  "verification",
  "password_reset",
  "email_change",
  "otp",
];

/** The providers Moonbase knows without an issuer. */
export type ProviderPreset =
  | "google"
  | "github"
  | "microsoft"
  | "gitlab"
  | "discord"
  | "apple";

/** The presets. */
export const PROVIDER_PRESETS: readonly ProviderPreset[] = [
  "google",
  "github",
  "microsoft",
  "gitlab",
  "discord",
  "apple",
];

/** An OAuth2 / OpenID Connect provider: an `issuer` (discovery) or a `preset`. */
export interface OAuth2Provider {
  /** Unique in the entity: `[a-z0-9_-]{1,64}` (the `provider` of `login-oauth2`). */
  name: string;
  display_name: string;
  /** The OpenID Connect issuer URL ("" with a preset). */
  issuer: string;
  /** A preset ("" with an issuer). */
  preset: ProviderPreset | "";
  client_id: string;
  /** Write-only. */
  client_secret: string;
  /** Scopes to ask for; [] for the provider's defaults. */
  scopes: string[];
}

/** The `auth` object of an auth entity. */
export interface AuthOptions {
  password: { enabled: boolean };
  /** Unverified users cannot log in (403). */
  require_verified: boolean;
  /** Sign-in by a mailed code; `duration` in seconds, `length` digits. */
  otp: { enabled: boolean; duration: number; length: number };
  /** A second login by another method; `duration`: seconds an `mfa_id` lives. */
  mfa: { enabled: boolean; duration: number };
  totp: { enabled: boolean };
  oauth2: {
    enabled: boolean;
    providers: OAuth2Provider[];
    /** The entity's fields that take the provider's name and avatar (null: none). */
    fields: { name: string | null; avatar: string | null };
  };
  templates: Record<TemplatePurpose, AuthTemplate>;
}
