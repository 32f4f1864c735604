/// <reference lib="dom" />
/**
 * The "New API key" form (`POST /sys/api-keys {name, entity, user_id,
 * expires}`): the user is found by email or id; the expiry is a day (empty
 * for never; 90 days ahead to start with). `?entity=&user=` in the URL
 * fills it in (the "Create API key" link of a user's record).
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { query } from "../router.ts";
import { schemas } from "../schemas.ts";
import { ErrorBox, Field, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";
import { ADMINS, findUser } from "./key_users.ts";

/** A key as the API lists it. */
export interface ApiKey {
  id: string;
  name: string;
  entity: string;
  user_id: string;
  created: string;
  expires: string | null;
  last_used: string | null;
}

/** A key just made, with whom it acts for as the admin typed it. */
export interface CreatedKey extends ApiKey {
  key: string;
  who: string;
}

const two = (n: number) => String(n).padStart(2, "0");

/** A local day `days` from now, as a date input's value. */
function dayFromNow(days: number): string {
  const d = new Date(Date.now() + days * 86_400_000);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
}

/** The end of a local day (a date input's value) as ISO; null for "". */
export function endOfDay(day: string): string | null {
  if (day === "") return null;
  const d = new Date(`${day}T23:59:59`);
  return Number.isNaN(d.getTime()) ? day : d.toISOString();
}

/** The form; `onCreated` gets the key (shown once by the page). */
export function KeyCreateForm(
  props: { onCreated: (k: CreatedKey) => void },
): JSX.Element {
  const entities = (schemas.value ?? [])
    .filter((s) => s.type === "auth" && !s.is_system && s.has_api)
    .map((s) => s.name);
  const q = query.value;
  const [name, setName] = useState("");
  const [entity, setEntity] = useState(
    q.get("entity") ?? entities[0] ?? ADMINS,
  );
  const [who, setWho] = useState(q.get("user") ?? "");
  const [expires, setExpires] = useState(dayFromNow(90));
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setFields({});
    try {
      const user = await findUser(entity, who);
      if ("error" in user) {
        setFields({ user_id: user.error });
        return;
      }
      const made = await mb.send<Omit<CreatedKey, "who">>(
        "POST",
        "/api/v1/sys/api-keys",
        {
          body: {
            name: name.trim(),
            entity,
            user_id: user.id,
            expires: endOfDay(expires),
          },
        },
      );
      toast(`API key ${made.name} created`);
      setName("");
      props.onCreated({ ...made, who: who.trim() });
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      const f: Record<string, string> = {};
      for (const [k, v] of Object.entries(err.fields)) f[k] = v.message;
      setFields(f);
      if (Object.keys(f).length === 0) setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="card"
      onSubmit={submit}
      aria-labelledby="new-key-title"
      noValidate
    >
      <h2 id="new-key-title">New API key</h2>
      <ErrorBox error={error} />
      <div class="form-grid">
        <Field
          label="Name"
          error={fields.name}
          hint="What it is for (“nightly export”)."
        >
          <input
            name="key-name"
            value={name}
            required
            maxLength={100}
            aria-invalid={fields.name ? "true" : undefined}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field label="Entity" error={fields.entity}>
          <select
            name="key-entity"
            value={entity}
            onChange={(e) => setEntity(e.currentTarget.value)}
          >
            {entities.map((n) => <option key={n} value={n}>{n}</option>)}
            {entity !== ADMINS && !entities.includes(entity) && (
              <option value={entity}>{entity}</option>
            )}
            <option value={ADMINS}>mb_admins (an admin)</option>
          </select>
        </Field>
        <Field
          label="User"
          error={fields.user_id}
          hint="The email or id of the user the key acts as."
        >
          <input
            name="key-user"
            value={who}
            required
            autocomplete="off"
            spellcheck={false}
            aria-invalid={fields.user_id ? "true" : undefined}
            onInput={(e) => setWho(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Expires"
          error={fields.expires}
          hint="At the end of that day. Empty: never."
        >
          <input
            name="key-expires"
            type="date"
            value={expires}
            aria-invalid={fields.expires ? "true" : undefined}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </Field>
      </div>
      {entity === ADMINS && (
        <p class="notice key-admin-note">
          An admin key can do everything an admin can, including making more
          keys. Prefer a user's key with rules that fit the job.
        </p>
      )}
      <div class="row end key-create-actions">
        <Submit busy={busy}>Create key</Submit>
      </div>
    </form>
  );
}
