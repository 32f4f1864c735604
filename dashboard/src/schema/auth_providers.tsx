/// <reference lib="dom" />
/**
 * The Auth tab's OAuth2 section: on/off, the providers (an OpenID Connect
 * issuer or a preset; the client secret write-only: "set" once saved, an
 * empty input keeps it), a "Check" that has the server fetch the issuer's
 * discovery document (`POST /sys/oauth2/discovery`: a browser cannot, for
 * CORS), and the entity's fields that take the provider's name and avatar.
 *
 * Over 350 lines, one idea: the OAuth2 section of the Auth tab; kept whole
 * because the provider list and each provider's panel share the form's state
 * and discovery check.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import {
  PROVIDER_PRESETS,
  type ProviderPreset,
} from "../../../lib/schema/auth_types.ts";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import { mb, MoonbaseError } from "../mb.ts";
import { Field } from "../ui/field.tsx";
import { type AuthForm, newProvider, type ProviderForm } from "./auth_form.ts";
import { Check } from "./auth_methods.tsx";
import type { AuthErrors } from "./auth_tab.tsx";

const PRESET_LABEL: Record<ProviderPreset, string> = {
  google: "Google",
  github: "GitHub",
  microsoft: "Microsoft",
  gitlab: "GitLab",
  discord: "Discord",
  apple: "Apple",
};

/** What the discovery check found. */
interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

type CheckState =
  | { state: "busy" }
  | { state: "ok"; doc: Discovery }
  | { state: "failed"; message: string };

/** The OAuth2 section. */
export function AuthProviders(props: {
  schema: EntitySchema;
  form: AuthForm;
  errors: AuthErrors;
  set: (f: AuthForm, paths?: string[]) => void;
}): JSX.Element {
  const f = props.form;
  const o = f.oauth2;
  const setO = (oauth2: AuthForm["oauth2"], paths: string[] = []) =>
    props.set({ ...f, oauth2 }, paths);
  const fields = props.schema.fields.filter((x) => !x.system);
  const nameFields = fields.filter((x) =>
    x.type === "string" || x.type === "text"
  );
  const avatarFields = fields.filter((x) =>
    x.type === "string" || x.type === "url" || x.type === "file"
  );
  const at = "auth.oauth2";
  return (
    <section class="card" aria-labelledby="auth-oauth2">
      <h2 id="auth-oauth2">OAuth2 and OpenID Connect</h2>
      <Check
        name="auth-oauth2"
        label="Allow sign-in with the providers below"
        checked={o.enabled}
        onChange={(v) => setO({ ...o, enabled: v })}
      />
      {props.errors[`${at}.providers`] && (
        <p class="error-text" role="alert">
          {props.errors[`${at}.providers`]}
        </p>
      )}
      <div class="stack">
        {o.providers.map((p, i) => (
          <ProviderPanel
            key={p.key}
            index={i}
            provider={p}
            errors={props.errors}
            onChange={(np, paths) =>
              setO({
                ...o,
                providers: o.providers.map((x, j) => j === i ? np : x),
              }, paths)}
            onRemove={() =>
              setO({ ...o, providers: o.providers.filter((_, j) => j !== i) })}
          />
        ))}
        {o.providers.length === 0 && <p class="muted">No providers yet.</p>}
      </div>
      <div class="row">
        <button
          type="button"
          class="btn"
          onClick={() =>
            setO({ ...o, providers: [...o.providers, newProvider()] })}
        >
          + Add provider
        </button>
      </div>
      <h3 class="sub-title">Profile fields</h3>
      <div class="form-grid">
        <Field
          label="Name goes to"
          error={props.errors[`${at}.fields.name`]}
          hint="A string or text field that takes the provider's name."
        >
          <select
            name="oauth2-name-field"
            value={o.nameField}
            aria-invalid={props.errors[`${at}.fields.name`]
              ? "true"
              : undefined}
            onChange={(e) => setO({ ...o, nameField: e.currentTarget.value }, [
              `${at}.fields.name`,
            ])}
          >
            <option value="">(none)</option>
            {nameFields.map((x) => (
              <option key={x.name} value={x.name}>{x.name}</option>
            ))}
          </select>
        </Field>
        <Field
          label="Avatar goes to"
          error={props.errors[`${at}.fields.avatar`]}
          hint="A string or url field that takes the picture's URL (a file field stays empty)."
        >
          <select
            name="oauth2-avatar-field"
            value={o.avatarField}
            aria-invalid={props.errors[`${at}.fields.avatar`]
              ? "true"
              : undefined}
            onChange={(e) =>
              setO({ ...o, avatarField: e.currentTarget.value }, [
                `${at}.fields.avatar`,
              ])}
          >
            <option value="">(none)</option>
            {avatarFields.map((x) => (
              <option key={x.name} value={x.name}>{x.name}</option>
            ))}
          </select>
        </Field>
      </div>
    </section>
  );
}

function ProviderPanel(props: {
  index: number;
  provider: ProviderForm;
  errors: AuthErrors;
  onChange: (p: ProviderForm, paths: string[]) => void;
  onRemove: () => void;
}): JSX.Element {
  const p = props.provider;
  const at = `auth.oauth2.providers.${props.index}`;
  const err = (k: string) => props.errors[`${at}.${k}`];
  const [check, setCheck] = useState<CheckState | null>(null);
  const change = (c: Partial<ProviderForm>, ...keys: string[]) => {
    if (c.issuer !== undefined || c.kind !== undefined) setCheck(null);
    props.onChange({ ...p, ...c }, keys.map((k) => `${at}.${k}`));
  };
  const id = `provider-${p.key}`;
  const title = p.display_name || p.name || `Provider ${props.index + 1}`;

  const runCheck = async () => {
    setCheck({ state: "busy" });
    try {
      const doc = await mb.send<Discovery>(
        "POST",
        "/api/v1/sys/oauth2/discovery",
        {
          body: {
            issuer: p.issuer.trim(),
          },
        },
      );
      setCheck({ state: "ok", doc });
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      setCheck({ state: "failed", message: e.message });
    }
  };

  return (
    <fieldset class="field-panel provider-panel" id={id}>
      <legend>{title}</legend>
      <div class="form-grid">
        <Field
          label="Name"
          error={err("name")}
          hint="a-z, 0-9, _ and -: the provider of login-oauth2."
        >
          <input
            name="provider-name"
            value={p.name}
            spellcheck={false}
            autocomplete="off"
            aria-invalid={err("name") ? "true" : undefined}
            onInput={(e) => change({ name: e.currentTarget.value }, "name")}
          />
        </Field>
        <Field
          label="Display name"
          error={err("display_name")}
          hint="Empty: the name."
        >
          <input
            name="provider-display-name"
            value={p.display_name}
            aria-invalid={err("display_name") ? "true" : undefined}
            onInput={(e) =>
              change({ display_name: e.currentTarget.value }, "display_name")}
          />
        </Field>
        <Field label="Kind">
          <select
            name="provider-kind"
            value={p.kind}
            onChange={(e) =>
              change(
                { kind: e.currentTarget.value as ProviderForm["kind"] },
                "issuer",
                "preset",
              )}
          >
            <option value="issuer">OpenID Connect issuer</option>
            <option value="preset">Preset</option>
          </select>
        </Field>
        {p.kind === "issuer"
          ? (
            <Field
              label="Issuer URL"
              error={err("issuer")}
              hint="https (http only for localhost); its discovery document is read."
            >
              <input
                name="provider-issuer"
                type="url"
                value={p.issuer}
                spellcheck={false}
                autocomplete="off"
                aria-invalid={err("issuer") ? "true" : undefined}
                onInput={(e) =>
                  change({ issuer: e.currentTarget.value }, "issuer")}
              />
            </Field>
          )
          : (
            <Field label="Preset" error={err("preset") ?? err("issuer")}>
              <select
                name="provider-preset"
                value={p.preset}
                onChange={(e) =>
                  change(
                    { preset: e.currentTarget.value as ProviderPreset },
                    "preset",
                    "issuer",
                  )}
              >
                {PROVIDER_PRESETS.map((x) => (
                  <option key={x} value={x}>{PRESET_LABEL[x]}</option>
                ))}
              </select>
            </Field>
          )}
        <Field label="Client id" error={err("client_id")}>
          <input
            name="provider-client-id"
            value={p.client_id}
            spellcheck={false}
            autocomplete="off"
            aria-invalid={err("client_id") ? "true" : undefined}
            onInput={(e) =>
              change({ client_id: e.currentTarget.value }, "client_id")}
          />
        </Field>
        <Field
          label="Client secret"
          error={err("client_secret")}
          hint={p.secret_set
            ? "Set (never shown). Leave empty to keep it."
            : "Not set."}
        >
          <input
            name="provider-client-secret"
            type="password"
            autocomplete="new-password"
            value={p.client_secret}
            disabled={p.clear_secret}
            placeholder={p.secret_set ? "•••••••• (set)" : ""}
            aria-invalid={err("client_secret") ? "true" : undefined}
            onInput={(e) =>
              change({ client_secret: e.currentTarget.value }, "client_secret")}
          />
        </Field>
        <Field
          label="Scopes"
          error={err("scopes")}
          hint="Separated by spaces. Empty: the provider's usual ones."
        >
          <input
            name="provider-scopes"
            value={p.scopes}
            spellcheck={false}
            autocomplete="off"
            aria-invalid={err("scopes") ? "true" : undefined}
            onInput={(e) => change({ scopes: e.currentTarget.value }, "scopes")}
          />
        </Field>
      </div>
      <div class="row wrap">
        {p.secret_set && (
          <span class="badge badge-ok secret-badge">secret set</span>
        )}
        {p.secret_set && (
          <label class="check">
            <input
              type="checkbox"
              checked={p.clear_secret}
              onChange={(e) =>
                change(
                  { clear_secret: e.currentTarget.checked },
                  "client_secret",
                )}
            />
            <span>Remove the saved secret</span>
          </label>
        )}
        <span class="spacer" />
        {p.kind === "issuer" && (
          <button
            type="button"
            class="btn btn-small"
            disabled={p.issuer.trim() === "" || check?.state === "busy"}
            aria-busy={check?.state === "busy" ? "true" : undefined}
            onClick={runCheck}
          >
            {check?.state === "busy" ? "Checking…" : "Check issuer"}
          </button>
        )}
        <button
          type="button"
          class="btn btn-small btn-danger"
          aria-label={`Remove provider ${title}`}
          onClick={props.onRemove}
        >
          Remove
        </button>
      </div>
      <div role="status" aria-live="polite">
        {check?.state === "ok" && (
          <div class="ok-box discovery-ok">
            <p>
              Discovery works: the issuer{" "}
              <span class="mono wrap-any">{check.doc.issuer}</span>{" "}
              publishes its endpoints.
            </p>
            <dl class="kv">
              <dt>Authorization</dt>
              <dd class="mono wrap-any">{check.doc.authorization_endpoint}</dd>
              <dt>Token</dt>
              <dd class="mono wrap-any">{check.doc.token_endpoint}</dd>
              <dt>Keys</dt>
              <dd class="mono wrap-any">{check.doc.jwks_uri}</dd>
            </dl>
          </div>
        )}
      </div>
      {check?.state === "failed" && (
        <p class="error-box" role="alert">{check.message}</p>
      )}
      {p.kind === "preset" && (
        <p class="muted small">
          {PRESET_LABEL[p.preset]}'s endpoints are built in. Register the app
          with {PRESET_LABEL[p.preset]} to get a client id and secret.
        </p>
      )}
    </fieldset>
  );
}
