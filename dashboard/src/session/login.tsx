/// <reference lib="dom" />
/**
 * The admin login form; after login it returns to `?next=` (the page the
 * admin was on when the session ended). The email input takes the focus
 * when the form appears.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { mb, type MoonbaseError } from "../mb.ts";
import { navigate, query } from "../router.ts";
import { session } from "./session.ts";
import { EmailField, PasswordField } from "../ui/credential_fields.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { AuthCard } from "./auth_card.tsx";

/** Where to go after login: only same-app paths are followed. */
export function nextTarget(next: string | null): string {
  return next && next.startsWith("/mb") && !next.startsWith("/mb/login")
    ? next
    : "/mb";
}

/** The login page. */
export function LoginPage(): JSX.Element {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const emailInput = useRef<HTMLInputElement>(null);
  useEffect(() => emailInput.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await mb.admins.login(email, password);
      navigate(nextTarget(query.value.get("next")), true);
    } catch (err) {
      const e2 = err as MoonbaseError;
      setError(
        e2.status === 401 ? "Wrong email or password." : e2.message,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <AuthCard title="Admin login" onSubmit={submit}>
      {session.endedReason.value && (
        <p class="notice">{session.endedReason.value}</p>
      )}
      <ErrorBox error={error} />
      <EmailField
        inputRef={emailInput}
        autocomplete="username"
        value={email}
        onValue={setEmail}
      />
      <PasswordField purpose="current" value={password} onValue={setPassword} />
      <Submit busy={busy}>Log in</Submit>
    </AuthCard>
  );
}
