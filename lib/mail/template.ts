/**
 * Mail templates: a subject, a text body, an optional HTML body and the
 * action URL, with placeholders `{APP_NAME}`, `{APP_URL}`, `{EMAIL}`,
 * `{TOKEN}`, `{CODE}`, `{ACTION_URL}` (and `{ENTITY}`, the auth entity's
 * name, which the default action URLs use). Unknown placeholders stay as
 * written.
 *
 * @module
 */

/** A template as an auth entity's `auth.templates.<purpose>` holds it. */
export interface MailTemplate {
  subject: string;
  /** The text body. */
  body: string;
  /** The HTML body; "" or absent for text only. */
  html?: string;
  /** The link the mail carries as `{ACTION_URL}` (itself a template). */
  action_url: string;
}

/** The values a template may use; absent ones render as "". */
export interface MailVars {
  APP_NAME?: string;
  APP_URL?: string;
  EMAIL?: string;
  TOKEN?: string;
  CODE?: string;
  /** Set by `renderTemplate` from the template's `action_url` unless given. */
  ACTION_URL?: string;
  ENTITY?: string;
}

/** A message ready to send. */
export interface RenderedMail {
  subject: string;
  text: string;
  /** "" for text only. */
  html: string;
}

/** The placeholders, in the order they are documented. */
export const PLACEHOLDERS: readonly (keyof MailVars)[] = [
  "APP_NAME",
  "APP_URL",
  "EMAIL",
  "TOKEN",
  "CODE",
  "ACTION_URL",
  "ENTITY",
];

const PLACEHOLDER =
  /\{(APP_NAME|APP_URL|EMAIL|TOKEN|CODE|ACTION_URL|ENTITY)\}/g;

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

function fill(
  text: string,
  vars: MailVars,
  encode: (value: string, key: keyof MailVars) => string,
): string {
  return text.replace(
    PLACEHOLDER,
    (_, key: keyof MailVars) => encode(vars[key] ?? "", key),
  );
}

/**
 * Renders a template: `{ACTION_URL}` is the template's `action_url` with
 * the other values filled in (URL-encoded, but for `{APP_URL}`), values in
 * the HTML body are escaped, and the subject is one line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renderTemplate } from "moonbase/lib/mail/template.ts";
 * const m = renderTemplate({
 *   subject: "Verify {EMAIL}",
 *   body: "Open {ACTION_URL}",
 *   html: "<p>Hello {EMAIL}</p>",
 *   action_url: "{APP_URL}/verify?token={TOKEN}",
 * }, { APP_URL: "https://x.test", EMAIL: "a<b@x.test", TOKEN: "t k" });
 * assert.equal(m.subject, "Verify a<b@x.test");
 * assert.equal(m.text, "Open https://x.test/verify?token=t%20k");
 * assert.equal(m.html, "<p>Hello a&lt;b@x.test</p>");
 * ```
 */
export function renderTemplate(
  template: MailTemplate,
  vars: MailVars,
): RenderedMail {
  const all: MailVars = {
    ...vars,
    ACTION_URL: vars.ACTION_URL ??
      fill(
        template.action_url,
        vars,
        (v, key) => key === "APP_URL" ? v : encodeURIComponent(v),
      ),
  };
  return {
    // A header: one line, whatever the values hold.
    subject: fill(template.subject, all, (v) => v).replace(/[\r\n]+/g, " ")
      .trim(),
    text: fill(template.body, all, (v) => v),
    html: template.html ? fill(template.html, all, escapeHtml) : "",
  };
}
