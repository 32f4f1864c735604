/// <reference lib="dom" />
/**
 * The "New admin" form (`POST /sys/admins`): email and password, with the
 * API's per-field errors next to each field.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { EmailField, PasswordField } from "../ui/credential_fields.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";

/** The form; `onCreated` runs after a successful create. */
export function AdminCreateForm(props: { onCreated: () => void }): JSX.Element {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setFields({});
    try {
      await mb.admins.create({ email: email.trim(), password });
      toast(`Admin ${email.trim()} created`);
      setEmail("");
      setPassword("");
      props.onCreated();
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      const f: Record<string, string> = {};
      for (const [k, v] of Object.entries(err.fields)) f[k] = v.message;
      setFields(f);
      // Field errors say it where it happened; anything else goes on top.
      if (!f.email && !f.password) {
        setError(
          err.status === 409
            ? "An admin with this email already exists."
            : err.message,
        );
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-admin-title">
      <h2 id="new-admin-title">New admin</h2>
      <ErrorBox error={error} />
      <div class="form-grid">
        <EmailField
          autocomplete="off"
          error={fields.email}
          value={email}
          onValue={setEmail}
        />
        <PasswordField
          purpose="new"
          error={fields.password}
          value={password}
          onValue={setPassword}
        />
      </div>
      <div class="row end admin-create-actions">
        <Submit busy={busy}>Create admin</Submit>
      </div>
    </form>
  );
}
