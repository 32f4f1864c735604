/// <reference lib="dom" />
/**
 * `/mb/entities/:name/auth` (auth entities): the entity's `auth` object —
 * sign-in methods (password, require verified, OTP, MFA, TOTP), OAuth2
 * providers (auth_providers.tsx, each with a discovery check through the
 * server) and the mail templates with a preview (auth_templates.tsx) —
 * saved with one schema PATCH `{auth}`. Errors by path
 * (`auth.otp.length`) go next to their inputs.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { AuthOptions } from "../../../lib/schema/auth_types.ts";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import { MoonbaseError } from "../mb.ts";
import { reloadSchemas, schemaOf, schemas, updateSchema } from "../schemas.ts";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { NotFound } from "../ui/not_found.tsx";
import { toast } from "../ui/toast.tsx";
import {
  authBody,
  authChanged,
  type AuthForm,
  authForm,
  templateOf,
} from "./auth_form.ts";
import { AuthMethods } from "./auth_methods.tsx";
import { AuthProviders } from "./auth_providers.tsx";
import { AuthTemplates } from "./auth_templates.tsx";

/** The Auth tab of an entity. */
export function AuthTabPage(props: { entity: string }): JSX.Element {
  if (!schemas.value) return <p class="muted">Loading…</p>;
  const s = schemaOf(props.entity);
  if (!s) return <NotFound what={`There is no entity "${props.entity}".`} />;
  if (s.type !== "auth" || s.is_system || !s.auth) {
    return (
      <NotFound what={`${s.name} is not an auth entity: it has no sign-in.`} />
    );
  }
  return <AuthEditor key={s.id} saved={s} auth={s.auth} />;
}

/** Errors by the server's path (`auth.otp.length`). */
export type AuthErrors = Record<string, string>;

function AuthEditor(
  props: { saved: EntitySchema; auth: AuthOptions },
): JSX.Element {
  const [base, setBase] = useState(props.saved);
  const [saved, setSaved] = useState(props.auth);
  const [form, setForm] = useState<AuthForm>(() => authForm(props.auth));
  const [errors, setErrors] = useState<AuthErrors>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const [purpose, setPurpose] = useState<
    keyof AuthOptions["templates"]
  >("verification");
  const dirty = authChanged(saved, form);
  const set = (f: AuthForm, paths: string[] = []) => {
    setForm(f);
    if (paths.some((p) => errors[p])) {
      const left = { ...errors };
      for (const p of paths) delete left[p];
      setErrors(left);
    }
  };

  useEffect(() => {
    // After a refused save, bring the first marked input into view.
    document.querySelector<HTMLElement>(
      ".auth-form [aria-invalid='true']",
    )?.focus();
  }, [errors]);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setErrors({});
    try {
      const s = await updateSchema(base.id, { auth: authBody(form) });
      setBase(s);
      if (s.auth) {
        setSaved(s.auth);
        setForm(authForm(s.auth));
      }
      await reloadSchemas();
      toast(`Auth of ${s.name} saved`);
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      const found: AuthErrors = {};
      for (const [k, v] of Object.entries(err.fields)) found[k] = v.message;
      setErrors(found);
      const t = Object.keys(found).map(templateOf).find((p) => p);
      if (t) setPurpose(t);
      if (Object.keys(found).length === 0) {
        setError(`Not saved: ${err.message}`);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="auth-tab">
      <EntityHeader schema={base} tab="auth" />
      {!base.has_api && (
        <p class="notice">
          {base.name}{" "}
          has its API off: none of these sign-in routes answer until it is on
          (Schema tab).
        </p>
      )}
      <form class="auth-form stack" onSubmit={save} noValidate>
        <AuthMethods form={form} errors={errors} set={set} />
        <AuthProviders
          schema={base}
          form={form}
          errors={errors}
          set={set}
        />
        <AuthTemplates
          entity={base.name}
          form={form}
          errors={errors}
          set={set}
          purpose={purpose}
          onPurpose={setPurpose}
        />
        <ErrorBox
          error={Object.keys(errors).length > 0
            ? `Not saved: ${
              Object.entries(errors).map(([k, v]) => `${k}: ${v}`).join("; ")
            }`
            : error}
        />
        <div class="row end form-actions">
          {dirty && <span class="muted">Unsaved changes</span>}
          <Submit busy={busy}>Save auth</Submit>
        </div>
      </form>
    </section>
  );
}
