/// <reference lib="dom" />
/**
 * `/mb/settings`: the app's settings (`GET|PATCH /sys/settings`): its name
 * and public address, the mail sender and the SMTP server (the password is
 * write-only: "set" when saved, an empty input keeps it), and "Send test
 * mail", which sends one message now through the saved settings and says
 * whether the SMTP server took it (or its refusal, from the 502).
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  type PublicSettings,
  SMTP_SECURITY,
  type SmtpSecurity,
} from "../../../lib/settings/types.ts";
import { mb, MoonbaseError } from "../mb.ts";
import { ErrorBox, Field, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";
import {
  settingsChanged,
  settingsErrors,
  type SettingsForm,
  settingsForm,
  settingsPatch,
} from "./settings_form.ts";
import { TestMail } from "./test_mail.tsx";

const SECURITY_LABEL: Record<SmtpSecurity, string> = {
  starttls: "STARTTLS (port 587)",
  tls: "TLS (port 465)",
  none: "None (local servers only)",
};

type Errors = Partial<Record<keyof SettingsForm, string>>;

/** The form's error while the server's refusal is marked on inputs. */
const PLACED = "Not saved: see the marked inputs.";

/** The settings page. */
export function SettingsPage(_props: Record<string, never>): JSX.Element {
  const [saved, setSaved] = useState<PublicSettings | null>(null);
  const [loadError, setLoadError] = useState("");
  useEffect(() => {
    const ac = new AbortController();
    mb.send<PublicSettings>("GET", "/api/v1/sys/settings", {
      signal: ac.signal,
    })
      .then(setSaved)
      .catch((e) => {
        // Anything else is the abort of a page left meanwhile.
        if (e instanceof MoonbaseError) setLoadError(e.message);
      });
    return () => ac.abort();
  }, []);
  return (
    <section class="settings-page">
      <div class="page-head">
        <h1>Settings</h1>
        <p class="muted">
          Shared by every instance on this database. Mail (verification,
          password reset, sign-in codes) goes out through the SMTP server set
          here.
        </p>
      </div>
      <ErrorBox error={loadError} />
      {!saved && !loadError && <p class="muted">Loading…</p>}
      {saved && <Editor saved={saved} onSaved={setSaved} />}
    </section>
  );
}

function Editor(
  props: { saved: PublicSettings; onSaved: (s: PublicSettings) => void },
): JSX.Element {
  const saved = props.saved;
  const [form, setForm] = useState<SettingsForm>(() => settingsForm(saved));
  const [errors, setErrors] = useState<Errors>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const dirty = settingsChanged(saved, form);
  const set = <K extends keyof SettingsForm>(k: K, v: SettingsForm[K]) => {
    setForm({ ...form, [k]: v });
    if (errors[k]) setErrors({ ...errors, [k]: undefined });
  };
  const text =
    (k: keyof SettingsForm) => (e: { currentTarget: { value: string } }) =>
      set(k, e.currentTarget.value);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setErrors({});
    try {
      const s = await mb.send<PublicSettings>("PATCH", "/api/v1/sys/settings", {
        body: settingsPatch(form),
      });
      props.onSaved(s);
      setForm(settingsForm(s));
      toast("Settings saved");
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      const { byInput, rest } = settingsErrors(err.fields);
      setErrors(byInput);
      setError(
        rest.length > 0
          ? `Not saved: ${rest.join("; ")}`
          : Object.keys(byInput).length > 0
          ? PLACED
          : `Not saved: ${err.message}`,
      );
    } finally {
      setBusy(false);
    }
  };

  const ready = saved.mail.smtp.host !== "" && saved.mail.from.address !== "";
  const pwSet = saved.mail.smtp.password_set;
  return (
    <>
      <form class="stack settings-form" onSubmit={save} noValidate>
        <section class="card" aria-labelledby="set-app">
          <h2 id="set-app">Application</h2>
          <div class="form-grid">
            <Field
              label="Name"
              error={errors.appName}
              hint="{APP_NAME} in mails."
            >
              <input
                name="app-name"
                value={form.appName}
                required
                maxLength={100}
                aria-invalid={errors.appName ? "true" : undefined}
                onInput={text("appName")}
              />
            </Field>
            <Field
              label="Public URL"
              error={errors.appUrl}
              hint="Where users reach the app; {APP_URL} in mails and links."
            >
              <input
                name="app-url"
                type="url"
                value={form.appUrl}
                required
                aria-invalid={errors.appUrl ? "true" : undefined}
                onInput={text("appUrl")}
              />
            </Field>
          </div>
        </section>
        <section class="card" aria-labelledby="set-mail">
          <h2 id="set-mail">Mail</h2>
          {!ready && (
            <p class="notice">
              Mail is not set up: messages wait until an SMTP host and a sender
              address are saved.
            </p>
          )}
          <h3 class="sub-title">Sender</h3>
          <div class="form-grid">
            <Field label="Sender name" error={errors.fromName}>
              <input
                name="from-name"
                value={form.fromName}
                maxLength={100}
                aria-invalid={errors.fromName ? "true" : undefined}
                onInput={text("fromName")}
              />
            </Field>
            <Field label="Sender address" error={errors.fromAddress}>
              <input
                name="from-address"
                type="email"
                autocomplete="off"
                value={form.fromAddress}
                aria-invalid={errors.fromAddress ? "true" : undefined}
                onInput={text("fromAddress")}
              />
            </Field>
          </div>
          <h3 class="sub-title">SMTP server</h3>
          <div class="form-grid">
            <Field label="Host" error={errors.host}>
              <input
                name="smtp-host"
                value={form.host}
                autocomplete="off"
                spellcheck={false}
                aria-invalid={errors.host ? "true" : undefined}
                onInput={text("host")}
              />
            </Field>
            <Field label="Port" error={errors.port}>
              <input
                name="smtp-port"
                inputMode="numeric"
                value={form.port}
                aria-invalid={errors.port ? "true" : undefined}
                onInput={text("port")}
              />
            </Field>
            <Field label="Security" error={errors.security}>
              <select
                name="smtp-security"
                value={form.security}
                onChange={(e) =>
                  set("security", e.currentTarget.value as SmtpSecurity)}
              >
                {SMTP_SECURITY.map((s) => (
                  <option key={s} value={s}>{SECURITY_LABEL[s]}</option>
                ))}
              </select>
            </Field>
            <Field
              label="Username"
              error={errors.username}
              hint="Empty for a server without login."
            >
              <input
                name="smtp-username"
                value={form.username}
                autocomplete="off"
                spellcheck={false}
                aria-invalid={errors.username ? "true" : undefined}
                onInput={text("username")}
              />
            </Field>
            <Field
              label="Password"
              error={errors.password}
              hint={pwSet
                ? "A password is saved (never shown). Leave empty to keep it."
                : "No password saved."}
            >
              <input
                name="smtp-password"
                type="password"
                autocomplete="new-password"
                value={form.password}
                disabled={form.clearPassword}
                placeholder={pwSet ? "•••••••• (set)" : ""}
                aria-invalid={errors.password ? "true" : undefined}
                onInput={text("password")}
              />
            </Field>
            {pwSet && (
              <label class="field inline remove-secret">
                <input
                  type="checkbox"
                  checked={form.clearPassword}
                  onChange={(e) =>
                    set("clearPassword", e.currentTarget.checked)}
                />
                <span>Remove the saved password</span>
              </label>
            )}
          </div>
        </section>
        <ErrorBox
          error={error === PLACED && !Object.values(errors).some(Boolean)
            ? ""
            : error}
        />
        <div class="row end form-actions">
          {dirty && <span class="muted">Unsaved changes</span>}
          <Submit busy={busy}>Save settings</Submit>
        </div>
      </form>
      <TestMail ready={ready} dirty={dirty} />
    </>
  );
}
