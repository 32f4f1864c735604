/// <reference lib="dom" />
/**
 * The "New admin" form (`POST /sys/admins`): email and password, with the
 * API's per-field errors next to each field.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { api, ApiError } from "../api.ts";
import { ErrorBox, Field, Submit } from "../ui/field.tsx";
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
      await api.post("/sys/admins", { email: email.trim(), password });
      toast(`Admin ${email.trim()} created`);
      setEmail("");
      setPassword("");
      props.onCreated();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
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
        <Field label="Email" error={fields.email}>
          <input
            type="email"
            name="email"
            autocomplete="off"
            required
            value={email}
            aria-invalid={fields.email ? "true" : undefined}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Password"
          error={fields.password}
          hint="At least 8 characters."
        >
          <input
            type="password"
            name="password"
            autocomplete="new-password"
            required
            value={password}
            aria-invalid={fields.password ? "true" : undefined}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
      </div>
      <div class="row end admin-create-actions">
        <Submit busy={busy}>Create admin</Submit>
      </div>
    </form>
  );
}
