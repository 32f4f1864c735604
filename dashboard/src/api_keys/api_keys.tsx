/// <reference lib="dom" />
/**
 * `/mb/api-keys`: every API key (name, whom it acts for, created, expires,
 * last used; never the key), a form for a new one (the key is shown once,
 * with a Copy button), and delete with confirmation: a deleted key fails at
 * once everywhere.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError, seg } from "../mb.ts";
import { localTime } from "../logs/log_format.tsx";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { ShownOnce } from "../ui/shown_once.tsx";
import { toast } from "../ui/toast.tsx";
import { type ApiKey, type CreatedKey, KeyCreateForm } from "./key_create.tsx";
import { ADMINS, userEmails, userHref } from "./key_users.ts";

/** The API keys page. */
export function ApiKeysPage(_props: Record<string, never>): JSX.Element {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [emails, setEmails] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const [made, setMade] = useState<CreatedKey | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    mb.send<ApiKey[]>("GET", "/api/v1/sys/api-keys", { signal: ac.signal })
      .then(async (k) => {
        setKeys(k);
        setEmails(await userEmails(k, ac.signal));
      })
      .catch((e) => {
        // Anything else is the abort of a page left meanwhile.
        if (e instanceof MoonbaseError) setError(e.message);
      });
    return () => ac.abort();
  }, [tick]);
  const reload = () => setTick((n) => n + 1);

  const remove = async (k: ApiKey) => {
    const ok = await confirmAction(
      `Delete the API key "${k.name}"? Every program using it is refused at once.`,
      "Delete key",
    );
    if (!ok) return;
    setError("");
    try {
      await mb.send("DELETE", `/api/v1/sys/api-keys/${seg(k.id)}`);
      toast(`API key ${k.name} deleted`);
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      setError(e.message);
    }
    reload();
  };

  const now = Date.now();
  return (
    <section class="api-keys-page">
      <div class="page-head">
        <h1>API keys</h1>
        <p class="muted">
          A key lets a server-side program act as one user (their rules apply)
          or as an admin, without a password. It is shown once when made;
          Moonbase keeps only its hash.
        </p>
      </div>
      {made && (
        <ShownOnce
          title={`New API key "${made.name}"`}
          label="API key"
          value={made.key}
          onDone={() => setMade(null)}
        >
          <p class="muted">
            Send it as <code>Authorization: Bearer {"<key>"}</code>.{" "}
            {made.entity === ADMINS
              ? "It acts as an admin: it can do everything an admin can."
              : `It acts as ${made.who} of ${made.entity}.`} {made.expires
              ? `It expires ${localTime(made.expires)}.`
              : "It never expires: delete it when it is no longer needed."}
          </p>
        </ShownOnce>
      )}
      <ErrorBox error={error} />
      {!keys && !error && <p class="muted">Loading…</p>}
      {keys && keys.length === 0 && (
        <p class="muted empty-note">No API keys yet.</p>
      )}
      {keys && keys.length > 0 && (
        <div class="table-wrap keys-table">
          <table class="data">
            <caption class="sr-only">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Acts as</th>
                <th scope="col" class="wide-only">Created</th>
                <th scope="col" class="wide-only">Expires</th>
                <th scope="col" class="wide-only">Last used</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => {
                const who = emails[`${k.entity}/${k.user_id}`];
                const expired = k.expires !== null &&
                  Date.parse(k.expires) <= now;
                return (
                  <tr key={k.id}>
                    <td class="key-name">
                      {k.name}
                      {expired && (
                        <>
                          {" "}
                          <span class="badge badge-error">expired</span>
                        </>
                      )}
                      <small class="narrow-only muted">
                        {k.expires
                          ? `expires ${localTime(k.expires)}`
                          : "never expires"}
                      </small>
                    </td>
                    <td class="key-user">
                      <a href={userHref(k.entity, k.user_id)} title={k.user_id}>
                        {who ?? k.user_id}
                      </a>{" "}
                      <span class="badge">
                        {k.entity === ADMINS ? "admin" : k.entity}
                      </span>
                    </td>
                    <td class="wide-only">
                      <time dateTime={k.created}>{localTime(k.created)}</time>
                    </td>
                    <td class="wide-only">
                      {k.expires
                        ? (
                          <time dateTime={k.expires}>
                            {localTime(k.expires)}
                          </time>
                        )
                        : <span class="muted">never</span>}
                    </td>
                    <td class="wide-only">
                      {k.last_used
                        ? (
                          <time dateTime={k.last_used}>
                            {localTime(k.last_used)}
                          </time>
                        )
                        : <span class="muted">never</span>}
                    </td>
                    <td class="actions">
                      <button
                        type="button"
                        class="btn btn-small btn-danger"
                        aria-label={`Delete API key ${k.name}`}
                        onClick={() => remove(k)}
                      >
                        Delete
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <KeyCreateForm
        onCreated={(k) => {
          setMade(k);
          reload();
        }}
      />
    </section>
  );
}
