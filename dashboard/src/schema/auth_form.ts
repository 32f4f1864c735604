/**
 * The Auth tab's state: an auth entity's `auth` object as inputs hold it
 * (numbers and scopes as typed), and back to the object a schema PATCH
 * takes. A provider's `client_secret` is write-only: the input starts
 * empty, an empty input keeps the saved secret (left out; the server keeps
 * it by the provider's name), "remove" sends `null`.
 *
 * @module
 */

import {
  type AuthOptions,
  type AuthTemplate,
  type OAuth2Provider,
  type ProviderPreset,
  TEMPLATE_PURPOSES,
  type TemplatePurpose,
} from "../../../lib/schema/auth_types.ts";

/** One provider's inputs. */
export interface ProviderForm {
  /** A stable key for the list (not sent). */
  key: number;
  name: string;
  display_name: string;
  kind: "issuer" | "preset";
  issuer: string;
  preset: ProviderPreset;
  client_id: string;
  /** A new secret ("" keeps the saved one). */
  client_secret: string;
  /** The saved provider had a secret (`client_secret_set`). */
  secret_set: boolean;
  /** Remove the saved secret. */
  clear_secret: boolean;
  /** Space-separated. */
  scopes: string;
}

/** The tab's inputs. */
export interface AuthForm {
  password: boolean;
  require_verified: boolean;
  otp: { enabled: boolean; duration: string; length: string };
  mfa: { enabled: boolean; duration: string };
  totp: boolean;
  oauth2: {
    enabled: boolean;
    providers: ProviderForm[];
    /** "" for none. */
    nameField: string;
    avatarField: string;
  };
  templates: Record<TemplatePurpose, AuthTemplate>;
}

/** A provider as the schemas API shows it. */
type ShownProvider = OAuth2Provider & { client_secret_set?: boolean };

let nextKey = 1;

/** An empty provider's inputs (an issuer, the usual scopes). */
export function newProvider(): ProviderForm {
  return {
    key: nextKey++,
    name: "",
    display_name: "",
    kind: "issuer",
    issuer: "",
    preset: "google",
    client_id: "",
    client_secret: "",
    secret_set: false,
    clear_secret: false,
    scopes: "",
  };
}

/** The inputs of a saved `auth` object. */
export function authForm(a: AuthOptions): AuthForm {
  return {
    password: a.password.enabled,
    require_verified: a.require_verified,
    otp: {
      enabled: a.otp.enabled,
      duration: String(a.otp.duration),
      length: String(a.otp.length),
    },
    mfa: { enabled: a.mfa.enabled, duration: String(a.mfa.duration) },
    totp: a.totp.enabled,
    oauth2: {
      enabled: a.oauth2.enabled,
      providers: a.oauth2.providers.map((p: ShownProvider) => ({
        ...newProvider(),
        name: p.name,
        display_name: p.display_name === p.name ? "" : p.display_name,
        kind: p.preset ? "preset" : "issuer",
        issuer: p.issuer,
        preset: p.preset || "google",
        client_id: p.client_id,
        secret_set: p.client_secret_set === true,
        scopes: p.scopes.join(" "),
      })),
      nameField: a.oauth2.fields.name ?? "",
      avatarField: a.oauth2.fields.avatar ?? "",
    },
    templates: Object.fromEntries(
      TEMPLATE_PURPOSES.map((p) => [p, { ...a.templates[p] }]),
    ) as Record<TemplatePurpose, AuthTemplate>,
  };
}

/** A whole number as typed, else the text (the server names it). */
function num(v: string): number | string {
  const t = v.trim();
  return /^\d{1,9}$/.test(t) ? Number(t) : t;
}

/** A provider as a PATCH sends it. */
function providerBody(p: ProviderForm): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: p.name.trim(),
    display_name: p.display_name.trim(),
    issuer: p.kind === "issuer" ? p.issuer.trim() : "",
    preset: p.kind === "preset" ? p.preset : "",
    client_id: p.client_id.trim(),
    scopes: p.scopes.split(/[\s,]+/).filter((s) => s !== ""),
  };
  if (p.clear_secret) out.client_secret = null;
  else if (p.client_secret !== "") out.client_secret = p.client_secret;
  return out;
}

/**
 * The `auth` object a schema PATCH sends for the inputs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { authBody, authForm, newProvider } from "./auth_form.ts";
 * import { defaultAuthOptions } from "../../../lib/schema/auth_options.ts";
 * const f = authForm(defaultAuthOptions());
 * f.otp.length = "8";
 * f.oauth2.providers = [{ ...newProvider(), name: "corp", issuer: "https://id.corp.example", client_id: "moon" }];
 * const b = authBody(f);
 * assert.equal(b.otp.length, 8);
 * assert.deepEqual(b.oauth2.providers, [{ name: "corp", display_name: "", issuer: "https://id.corp.example", preset: "", client_id: "moon", scopes: [] }]);
 * ```
 */
export function authBody(f: AuthForm): {
  password: { enabled: boolean };
  require_verified: boolean;
  otp: { enabled: boolean; duration: number | string; length: number | string };
  mfa: { enabled: boolean; duration: number | string };
  totp: { enabled: boolean };
  oauth2: {
    enabled: boolean;
    providers: Record<string, unknown>[];
    fields: { name: string | null; avatar: string | null };
  };
  templates: Record<TemplatePurpose, AuthTemplate>;
} {
  return {
    password: { enabled: f.password },
    require_verified: f.require_verified,
    otp: {
      enabled: f.otp.enabled,
      duration: num(f.otp.duration),
      length: num(f.otp.length),
    },
    mfa: { enabled: f.mfa.enabled, duration: num(f.mfa.duration) },
    totp: { enabled: f.totp },
    oauth2: {
      enabled: f.oauth2.enabled,
      providers: f.oauth2.providers.map(providerBody),
      fields: {
        name: f.oauth2.nameField || null,
        avatar: f.oauth2.avatarField || null,
      },
    },
    templates: f.templates,
  };
}

/** True when the inputs would change the saved object. */
export function authChanged(saved: AuthOptions, f: AuthForm): boolean {
  return JSON.stringify(authBody(authForm(saved))) !==
    JSON.stringify(authBody(f));
}

/** The sign-in methods the inputs turn on (for the MFA hint). */
export function enabledMethods(f: AuthForm): string[] {
  const on: string[] = [];
  if (f.password) on.push("password");
  if (f.otp.enabled) on.push("OTP");
  if (f.oauth2.enabled && f.oauth2.providers.length > 0) on.push("OAuth2");
  if (f.totp) on.push("TOTP");
  return on;
}

/** The template the server's error path names, if any. */
export function templateOf(path: string): TemplatePurpose | undefined {
  const m = /^auth\.templates\.(\w+)\./.exec(path);
  return m && (TEMPLATE_PURPOSES as readonly string[]).includes(m[1])
    ? m[1] as TemplatePurpose
    : undefined;
}
