/**
 * The settings page's state: the form from `GET /sys/settings`, and the
 * PATCH body from the form. The SMTP password is write-only: the form
 * starts empty, an empty input keeps the saved one (left out of the
 * body), "remove" sends `null`.
 *
 * @module
 */

import type {
  PublicSettings,
  SmtpSecurity,
} from "../../../lib/settings/types.ts";

/** What the inputs hold (numbers as typed). */
export interface SettingsForm {
  appName: string;
  appUrl: string;
  fromName: string;
  fromAddress: string;
  host: string;
  port: string;
  security: SmtpSecurity;
  username: string;
  /** A new password ("" keeps the saved one). */
  password: string;
  /** Remove the saved password. */
  clearPassword: boolean;
}

/** The form of saved settings. */
export function settingsForm(s: PublicSettings): SettingsForm {
  return {
    appName: s.app.name,
    appUrl: s.app.url,
    fromName: s.mail.from.name,
    fromAddress: s.mail.from.address,
    host: s.mail.smtp.host,
    port: String(s.mail.smtp.port),
    security: s.mail.smtp.security,
    username: s.mail.smtp.username,
    password: "",
    clearPassword: false,
  };
}

/**
 * The PATCH body of a form: every key (the server checks them), the
 * password only when typed (or `null` to remove it). A port that is not a
 * whole number goes as typed, so the server names it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { settingsPatch } from "./settings_form.ts";
 * const b = settingsPatch({
 *   appName: "Notes", appUrl: "https://n.example", fromName: "Notes",
 *   fromAddress: "no@n.example", host: "smtp.n.example", port: "587",
 *   security: "starttls", username: "", password: "", clearPassword: false,
 * });
 * assert.deepEqual(b.mail.smtp, {
 *   host: "smtp.n.example", port: 587, security: "starttls", username: "",
 * });
 * ```
 */
export function settingsPatch(f: SettingsForm): {
  app: { name: string; url: string };
  mail: {
    from: { name: string; address: string };
    smtp: Record<string, unknown>;
  };
} {
  const port = f.port.trim();
  const smtp: Record<string, unknown> = {
    host: f.host.trim(),
    port: /^\d{1,5}$/.test(port) ? Number(port) : port,
    security: f.security,
    username: f.username,
  };
  if (f.clearPassword) smtp.password = null;
  else if (f.password !== "") smtp.password = f.password;
  return {
    app: { name: f.appName.trim(), url: f.appUrl.trim() },
    mail: {
      from: { name: f.fromName.trim(), address: f.fromAddress.trim() },
      smtp,
    },
  };
}

/** True when the form would change the saved settings. */
export function settingsChanged(
  saved: PublicSettings,
  f: SettingsForm,
): boolean {
  return JSON.stringify(settingsForm(saved)) !== JSON.stringify(f);
}

/** The form's inputs by the server's field path (`mail.smtp.port`). */
export const SETTINGS_PATHS: Record<string, keyof SettingsForm> = {
  "app.name": "appName",
  "app.url": "appUrl",
  "mail.from.name": "fromName",
  "mail.from.address": "fromAddress",
  "mail.smtp.host": "host",
  "mail.smtp.port": "port",
  "mail.smtp.security": "security",
  "mail.smtp.username": "username",
  "mail.smtp.password": "password",
};

/**
 * The server's field errors as the form's (by input), and the messages of
 * paths no input shows (`rest`).
 */
export function settingsErrors(
  fields: Record<string, { message: string }>,
): { byInput: Partial<Record<keyof SettingsForm, string>>; rest: string[] } {
  const byInput: Partial<Record<keyof SettingsForm, string>> = {};
  const rest: string[] = [];
  for (const [path, e] of Object.entries(fields)) {
    const key = SETTINGS_PATHS[path];
    if (key) byInput[key] = e.message;
    else rest.push(`${path}: ${e.message}`);
  }
  return { byInput, rest };
}
