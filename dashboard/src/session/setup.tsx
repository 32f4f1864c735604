/// <reference lib="dom" />
/**
 * First run: create the first admin with the setup token the server
 * printed (`/mb/setup?token=…`), or explain how to get one.
 *
 * @module
 */

import { signal } from "@preact/signals";
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb, type MoonbaseError } from "../mb.ts";
import { navigate, query } from "../router.ts";
import { EmailField, PasswordField } from "../ui/credential_fields.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { AuthCard } from "./auth_card.tsx";

/** Whether the server still waits for its first admin (null: not known yet). */
export const setupRequired = signal<boolean | null>(null);

/** How to claim a server that has no admin yet. */
export function ClaimHelp(): JSX.Element {
  return (
    <div class="claim-help">
      <p>
        This server has no admin yet. When it started, it printed a setup link
        on its console:
      </p>
      <pre>No admin yet. Create one at http://…/mb/setup?token=…</pre>
      <p>
        Open that link to create the first admin. Or create one from the command
        line:
      </p>
      <pre>moonbase admins --add you@example.com 'a-long-password'</pre>
      <p>
        (from a checkout:{" "}
        <code>deno run -A main.ts admins --add …</code>), then reload this page.
      </p>
    </div>
  );
}

/** The setup page. */
export function SetupPage(props: { required: boolean }): JSX.Element {
  const token = query.value.get("token") ?? "";
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  if (!props.required) {
    return (
      <main class="auth-page">
        <section class="card auth-card">
          <h1>Already set up</h1>
          <p>This server already has an admin.</p>
          <a class="btn btn-primary" href="/mb/login">Go to the login form</a>
        </section>
      </main>
    );
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setFields({});
    try {
      await mb.admins.setup(token, email, password);
      setupRequired.value = false;
      navigate("/mb", true);
    } catch (err) {
      const e2 = err as MoonbaseError;
      setError(
        e2.status === 401
          ? "The setup link is missing its token or the token is wrong: open the link the server printed."
          : e2.message,
      );
      setFields(
        Object.fromEntries(
          Object.entries(e2.fields ?? {}).map(([k, v]) => [k, v.message]),
        ),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <AuthCard title="Create the first admin" onSubmit={submit}>
      {!token && <ClaimHelp />}
      <ErrorBox error={error} />
      <EmailField
        autocomplete="username"
        error={fields.email}
        value={email}
        onValue={setEmail}
      />
      <PasswordField
        purpose="new"
        minLength={8}
        error={fields.password}
        value={password}
        onValue={setPassword}
      />
      <Submit busy={busy}>Create admin</Submit>
    </AuthCard>
  );
}
