/**
 * A rule helper: `emailDomain(email)` → the lower-cased domain of an email
 * address ("" for anything else), so a rule can say
 * `emailDomain(auth.user.email) == "example.com"` (only colleagues may
 * post). Helpers are synchronous: rules do not wait for promises (a helper
 * that returns one makes the rule false and logs a warning).
 *
 * Expects nothing; the rule above needs an auth entity whose users log in.
 *
 * @module
 */

import type { ScriptApp } from "../../mod.ts";

/** The domain of an email address, lower-cased; "" when it is not one. */
export function emailDomain(email: unknown): string {
  if (typeof email !== "string") return "";
  const at = email.lastIndexOf("@");
  return at > 0 && at < email.length - 1
    ? email.slice(at + 1).toLowerCase()
    : "";
}

export default function (app: ScriptApp): void {
  app.helper("emailDomain", emailDomain);
}
