/// <reference lib="dom" />
/**
 * The email and password inputs of the dashboard's four credential forms
 * (login, first-admin setup, new admin, change password): one place for
 * their type, name, `autocomplete` and the length hint of a new password,
 * each a labelled `Field` with its error (marked `aria-invalid`).
 *
 * @module
 */

import type { JSX, RefObject } from "preact";
import { Field } from "./field.tsx";

/** The hint under an input that sets a password (the server's minimum). */
export const NEW_PASSWORD_HINT = "At least 8 characters.";

/** Props both inputs take. */
interface CredentialProps {
  value: string;
  onValue: (value: string) => void;
  error?: string;
}

/**
 * The "Email" input: `username` for the browser's password manager where an
 * admin signs in as it, `off` where it names someone else (a new admin).
 */
export function EmailField(
  props: CredentialProps & {
    autocomplete: "username" | "off";
    inputRef?: RefObject<HTMLInputElement | null>;
  },
): JSX.Element {
  return (
    <Field label="Email" error={props.error}>
      <input
        ref={props.inputRef}
        name="email"
        type="email"
        autocomplete={props.autocomplete}
        required
        value={props.value}
        aria-invalid={props.error ? "true" : undefined}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    </Field>
  );
}

/**
 * A password input. `purpose`: `current` signs in; `new` sets a password
 * (with the length hint); `repeat` confirms a new one.
 */
export function PasswordField(
  props: CredentialProps & {
    purpose: "current" | "new" | "repeat";
    /** Default "Password". */
    label?: string;
    /** Default "password". */
    name?: string;
    minLength?: number;
  },
): JSX.Element {
  return (
    <Field
      label={props.label ?? "Password"}
      error={props.error}
      hint={props.purpose === "new" ? NEW_PASSWORD_HINT : undefined}
    >
      <input
        name={props.name ?? "password"}
        type="password"
        autocomplete={props.purpose === "current"
          ? "current-password"
          : "new-password"}
        required
        minLength={props.minLength}
        value={props.value}
        aria-invalid={props.error ? "true" : undefined}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    </Field>
  );
}
