/// <reference lib="dom" />
/**
 * The Auth tab's mail templates (verification, password reset, email
 * change, sign-in code): subject, text body, optional HTML body and action
 * URL, with a live preview rendered here by the server's own
 * `renderTemplate` (lib/mail/template.ts: the same placeholders, values
 * escaped in HTML) from sample values and the app's saved name and URL.
 * The HTML body is shown in a sandboxed frame (`sandbox=""`, `srcdoc`):
 * no script runs and nothing reaches this page.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  type AuthTemplate,
  TEMPLATE_PURPOSES,
  type TemplatePurpose,
} from "../../../lib/schema/auth_types.ts";
import type { PublicSettings } from "../../../lib/settings/types.ts";
import { PLACEHOLDERS, renderTemplate } from "../../../lib/mail/template.ts";
import { mb } from "../mb.ts";
import { Field } from "../ui/field.tsx";
import type { AuthForm } from "./auth_form.ts";
import type { AuthErrors } from "./auth_tab.tsx";

const PURPOSE_LABEL: Record<TemplatePurpose, string> = {
  verification: "Verification",
  password_reset: "Password reset",
  email_change: "Email change",
  otp: "Sign-in code",
};

/** The app's name and URL for the preview (the defaults until loaded). */
function useApp(): { name: string; url: string } {
  const [app, setApp] = useState({
    name: "Moonbase",
    url: "http://localhost:7070",
  });
  useEffect(() => {
    const ac = new AbortController();
    mb.send<PublicSettings>("GET", "/api/v1/sys/settings", {
      signal: ac.signal,
    })
      .then((s) => setApp(s.app))
      .catch(() => {
        // The preview keeps the default name and URL.
      });
    return () => ac.abort();
  }, []);
  return app;
}

/** The templates section. */
export function AuthTemplates(props: {
  entity: string;
  form: AuthForm;
  errors: AuthErrors;
  set: (f: AuthForm, paths?: string[]) => void;
  purpose: TemplatePurpose;
  onPurpose: (p: TemplatePurpose) => void;
}): JSX.Element {
  const f = props.form;
  const purpose = props.purpose;
  const t = f.templates[purpose];
  const app = useApp();
  const at = `auth.templates.${purpose}`;
  const err = (k: keyof AuthTemplate) => props.errors[`${at}.${k}`];
  const change = (k: keyof AuthTemplate, v: string) =>
    props.set(
      { ...f, templates: { ...f.templates, [purpose]: { ...t, [k]: v } } },
      [`${at}.${k}`],
    );
  const length = Number(f.otp.length);
  const code = "1234567890".repeat(2).slice(
    0,
    Number.isInteger(length) && length >= 4 && length <= 12 ? length : 6,
  );
  const shown = renderTemplate(t, {
    APP_NAME: app.name,
    APP_URL: app.url,
    EMAIL: "ada@example.com",
    TOKEN: "sample-token",
    CODE: code,
    ENTITY: props.entity,
  });
  const withErrors = (p: TemplatePurpose) =>
    Object.keys(props.errors).some((k) => k.startsWith(`auth.templates.${p}.`));
  return (
    <section class="card" aria-labelledby="auth-templates">
      <h2 id="auth-templates">Mail templates</h2>
      <p class="muted small">
        Placeholders:{" "}
        {PLACEHOLDERS.map((p) => (
          <code key={p} class="placeholder">{`{${p}}`}</code>
        ))}
      </p>
      <div
        class="view-switch template-switch"
        role="group"
        aria-label="Template"
      >
        {TEMPLATE_PURPOSES.map((p) => (
          <button
            key={p}
            type="button"
            class={`btn btn-small ${withErrors(p) ? "has-error" : ""}`}
            aria-pressed={p === purpose}
            onClick={() => props.onPurpose(p)}
          >
            {PURPOSE_LABEL[p]}
          </button>
        ))}
      </div>
      <div class="template-grid">
        <div class="stack">
          <Field label="Subject" error={err("subject")}>
            <input
              name="template-subject"
              value={t.subject}
              aria-invalid={err("subject") ? "true" : undefined}
              onInput={(e) => change("subject", e.currentTarget.value)}
            />
          </Field>
          <Field label="Text body" error={err("body")}>
            <textarea
              name="template-body"
              rows={8}
              value={t.body}
              aria-invalid={err("body") ? "true" : undefined}
              onInput={(e) => change("body", e.currentTarget.value)}
            />
          </Field>
          <Field
            label="HTML body"
            error={err("html")}
            hint="Optional; empty sends text only. Values are HTML-escaped."
          >
            <textarea
              name="template-html"
              rows={5}
              value={t.html}
              aria-invalid={err("html") ? "true" : undefined}
              onInput={(e) => change("html", e.currentTarget.value)}
            />
          </Field>
          <Field
            label="Action URL"
            error={err("action_url")}
            hint={purpose === "otp"
              ? "Usually empty: the code is the message."
              : "The link as {ACTION_URL}; the default is a page this server serves."}
          >
            <input
              name="template-action-url"
              value={t.action_url}
              spellcheck={false}
              aria-invalid={err("action_url") ? "true" : undefined}
              onInput={(e) => change("action_url", e.currentTarget.value)}
            />
          </Field>
        </div>
        <section class="template-preview" aria-labelledby="preview-title">
          <h3 id="preview-title" class="sub-title">
            Preview <span class="muted small">(sample values)</span>
          </h3>
          <dl class="kv">
            <dt>To</dt>
            <dd>ada@example.com</dd>
            <dt>Subject</dt>
            <dd class="preview-subject">{shown.subject}</dd>
          </dl>
          <p class="preview-label" id="preview-text-label">Text body</p>
          <pre
            class="preview-text"
            aria-labelledby="preview-text-label"
          >{shown.text}</pre>
          {shown.html && (
            <p class="preview-label">
              HTML body{" "}
              <span class="muted">
                (sandboxed: no scripts, no remote images)
              </span>
            </p>
          )}
          {shown.html && (
            <iframe
              class="preview-html"
              title="HTML body preview"
              sandbox=""
              srcdoc={shown.html}
            />
          )}
        </section>
      </div>
    </section>
  );
}
