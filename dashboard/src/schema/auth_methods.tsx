/// <reference lib="dom" />
/**
 * The Auth tab's sign-in methods: password, "require verified", sign-in
 * by mailed code (OTP: duration, length), MFA (duration of an `mfa_id`)
 * and TOTP.
 *
 * @module
 */

import type { JSX } from "preact";
import { Field } from "../ui/field.tsx";
import { type AuthForm, enabledMethods } from "./auth_form.ts";
import type { AuthErrors } from "./auth_tab.tsx";

/** A checkbox with its label and a hint under it. */
export function Check(props: {
  label: string;
  checked: boolean;
  onChange: (on: boolean) => void;
  hint?: string;
  name: string;
}): JSX.Element {
  const hintId = props.hint ? `${props.name}-hint` : undefined;
  return (
    <div class="auth-check">
      <label class="check">
        <input
          type="checkbox"
          name={props.name}
          checked={props.checked}
          aria-describedby={hintId}
          onChange={(e) => props.onChange(e.currentTarget.checked)}
        />
        <span>{props.label}</span>
      </label>
      {props.hint && <small id={hintId} class="hint block">{props.hint}</small>}
    </div>
  );
}

/** A whole-number input bound to an error path. */
function NumberInput(props: {
  label: string;
  name: string;
  value: string;
  path: string;
  errors: AuthErrors;
  hint: string;
  disabled: boolean;
  onValue: (v: string) => void;
}): JSX.Element {
  const error = props.errors[props.path];
  return (
    <Field label={props.label} error={error} hint={props.hint}>
      <input
        name={props.name}
        inputMode="numeric"
        value={props.value}
        disabled={props.disabled}
        aria-invalid={error ? "true" : undefined}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    </Field>
  );
}

/** The methods section. */
export function AuthMethods(props: {
  form: AuthForm;
  errors: AuthErrors;
  set: (f: AuthForm, paths?: string[]) => void;
}): JSX.Element {
  const f = props.form;
  const on = enabledMethods(f);
  return (
    <section class="card" aria-labelledby="auth-methods">
      <h2 id="auth-methods">Sign-in methods</h2>
      <div class="auth-checks">
        <Check
          name="auth-password"
          label="Password"
          checked={f.password}
          hint="Log in with email (or id) and password."
          onChange={(v) => props.set({ ...f, password: v })}
        />
        <Check
          name="auth-require-verified"
          label="Require a verified email"
          checked={f.require_verified}
          hint="Unverified users cannot log in (403) until they follow the verification mail."
          onChange={(v) => props.set({ ...f, require_verified: v })}
        />
      </div>
      <h3 class="sub-title">Sign-in by mailed code (OTP)</h3>
      <Check
        name="auth-otp"
        label="Allow sign-in by a code sent by mail"
        checked={f.otp.enabled}
        onChange={(v) => props.set({ ...f, otp: { ...f.otp, enabled: v } })}
      />
      <div class="form-grid">
        <NumberInput
          label="Code lifetime (seconds)"
          name="otp-duration"
          value={f.otp.duration}
          path="auth.otp.duration"
          errors={props.errors}
          hint="30 to 86 400."
          disabled={!f.otp.enabled}
          onValue={(v) =>
            props.set({ ...f, otp: { ...f.otp, duration: v } }, [
              "auth.otp.duration",
            ])}
        />
        <NumberInput
          label="Code length (digits)"
          name="otp-length"
          value={f.otp.length}
          path="auth.otp.length"
          errors={props.errors}
          hint="4 to 12."
          disabled={!f.otp.enabled}
          onValue={(v) =>
            props.set({ ...f, otp: { ...f.otp, length: v } }, [
              "auth.otp.length",
            ])}
        />
      </div>
      <h3 class="sub-title">Second factor</h3>
      <Check
        name="auth-totp"
        label="Allow authenticator apps (TOTP)"
        checked={f.totp}
        hint="Users enrol an app; once enrolled, they always need a code from it after their first login."
        onChange={(v) => props.set({ ...f, totp: v })}
      />
      <Check
        name="auth-mfa"
        label="Require two methods for everyone (MFA)"
        checked={f.mfa.enabled}
        hint={`A first login answers 401 with an mfa_id; a second login by another method completes it. On now: ${
          on.join(", ") || "none"
        }.`}
        onChange={(v) => props.set({ ...f, mfa: { ...f.mfa, enabled: v } })}
      />
      {f.mfa.enabled && on.length < 2 && (
        <p class="notice">
          MFA needs a second method: turn on OTP, TOTP or OAuth2 as well, or
          nobody can finish logging in.
        </p>
      )}
      <div class="form-grid">
        <NumberInput
          label="Time for the second login (seconds)"
          name="mfa-duration"
          value={f.mfa.duration}
          path="auth.mfa.duration"
          errors={props.errors}
          hint="30 to 86 400."
          disabled={!f.mfa.enabled}
          onValue={(v) =>
            props.set({ ...f, mfa: { ...f.mfa, duration: v } }, [
              "auth.mfa.duration",
            ])}
        />
      </div>
    </section>
  );
}
