/**
 * What a new auth entity's `auth` object says (lib/schema/auth_options.ts):
 * password sign-in on, the other methods off, and the mail templates of
 * each purpose.
 *
 * @module
 */

import type {
  AuthOptions,
  AuthTemplate,
  TemplatePurpose,
} from "./auth_types.ts";

const SIGNATURE = "\n\n— {APP_NAME}\n";

/** The templates of a new auth entity. */
export function defaultTemplates(): Record<TemplatePurpose, AuthTemplate> {
  return {
    verification: {
      subject: "Verify your {APP_NAME} email",
      body:
        "Hello,\n\nto confirm that {EMAIL} is your address, open this link:\n\n{ACTION_URL}\n\nIf you did not sign up for {APP_NAME}, ignore this mail." +
        SIGNATURE,
      html: "",
      action_url:
        "{APP_URL}/mb/auth/{ENTITY}/confirm-verification?token={TOKEN}",
    },
    password_reset: {
      subject: "Reset your {APP_NAME} password",
      body:
        "Hello,\n\nto choose a new password for {EMAIL}, open this link:\n\n{ACTION_URL}\n\nIf you did not ask for it, ignore this mail: your password stays." +
        SIGNATURE,
      html: "",
      action_url: "{APP_URL}/mb/auth/{ENTITY}/reset-password?token={TOKEN}",
    },
    email_change: {
      subject: "Confirm your new {APP_NAME} email",
      body:
        "Hello,\n\nto make {EMAIL} the address of your account, open this link:\n\n{ACTION_URL}\n\nIf you did not ask for it, ignore this mail." +
        SIGNATURE,
      html: "",
      action_url:
        "{APP_URL}/mb/auth/{ENTITY}/confirm-email-change?token={TOKEN}",
    },
    otp: {
      subject: "Your {APP_NAME} sign-in code",
      body:
        "Hello,\n\nyour code to sign in to {APP_NAME} is:\n\n{CODE}\n\nIf you did not ask for it, ignore this mail." +
        SIGNATURE,
      html: "",
      action_url: "",
    },
  };
}

/**
 * The `auth` object of a new auth entity.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultAuthOptions } from "moonbase/lib/schema/auth_defaults.ts";
 * const a = defaultAuthOptions();
 * assert.deepEqual([a.password.enabled, a.otp.duration, a.otp.length, a.mfa.duration], [true, 180, 6, 300]);
 * ```
 */
export function defaultAuthOptions(): AuthOptions {
  return {
    password: { enabled: true },
    require_verified: false,
    otp: { enabled: false, duration: 180, length: 6 },
    mfa: { enabled: false, duration: 300 },
    totp: { enabled: false },
    oauth2: {
      enabled: false,
      providers: [],
      fields: { name: null, avatar: null },
    },
    templates: defaultTemplates(),
  };
}
