/// <reference lib="dom" />
/**
 * The "Account" card on a user's record (auth entities): send the
 * verification mail (`request-verification`), send a password reset
 * (`request-password-reset`), impersonate (`impersonate/<id> {duration}`:
 * the token is shown once, with its expiry and a warning that it acts as
 * the user), and a link to make an API key for the user. The request
 * routes answer alike for every address, so the page can only say the
 * mail was queued; it warns when mail is not set up.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { PublicSettings } from "../../../lib/settings/types.ts";
import { claimsOf, mb, MoonbaseError, type RecordData } from "../mb.ts";
import { localTime } from "../logs/log_format.tsx";
import type { EntitySchema } from "../schemas.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox, Field } from "../ui/field.tsx";
import { ShownOnce } from "../ui/shown_once.tsx";
import { toast } from "../ui/toast.tsx";

/** Impersonation lengths offered (seconds → words). */
const DURATIONS: [number, string][] = [
  [600, "10 minutes"],
  [3600, "1 hour"],
  [8 * 3600, "8 hours"],
  [86_400, "1 day"],
];

/** Whether mail can go out (null: unknown). */
function useMailReady(): boolean | null {
  const [ready, setReady] = useState<boolean | null>(null);
  useEffect(() => {
    const ac = new AbortController();
    mb.send<PublicSettings>("GET", "/api/v1/sys/settings", {
      signal: ac.signal,
    })
      .then((s) =>
        setReady(s.mail.smtp.host !== "" && s.mail.from.address !== "")
      )
      .catch(() => {
        // Unknown: no warning is shown.
      });
    return () => ac.abort();
  }, []);
  return ready;
}

/** The account card of a user's record. */
export function AccountActions(
  props: { schema: EntitySchema; record: RecordData },
): JSX.Element {
  const s = props.schema;
  const r = props.record;
  const email = typeof r.email === "string" ? r.email : "";
  const ready = useMailReady();
  const [busy, setBusy] = useState("");
  const [error, setError] = useState("");
  const [duration, setDuration] = useState(3600);
  const [token, setToken] = useState<{ token: string; until: number } | null>(
    null,
  );

  const mail = async (what: "verification" | "password-reset") => {
    setBusy(what);
    setError("");
    try {
      const account = mb.auth(s.name);
      if (what === "verification") await account.requestVerification(email);
      else await account.requestPasswordReset(email);
      toast(
        what === "verification"
          ? `Verification mail queued for ${email}`
          : `Password reset mail queued for ${email}`,
      );
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      setError(e.message);
    } finally {
      setBusy("");
    }
  };

  const impersonate = async () => {
    const words = DURATIONS.find(([d]) => d === duration)?.[1] ?? "";
    const ok = await confirmAction(
      `Get a token that acts as ${email} for ${words}? Whatever is done with it is done as this user, and it is logged with your admin id.`,
      "Impersonate",
    );
    if (!ok) return;
    setBusy("impersonate");
    setError("");
    try {
      const got = await mb.auth(s.name).impersonate(r.id, { duration });
      const exp = claimsOf(got.token).exp ?? 0;
      setToken({
        token: got.token,
        until: exp > 0 ? exp * 1000 : Date.now() + duration * 1000,
      });
    } catch (e) {
      if (!(e instanceof MoonbaseError)) throw e;
      setError(e.message);
    } finally {
      setBusy("");
    }
  };

  if (!s.has_api) {
    return (
      <section class="card account-card" aria-labelledby="account-title">
        <h2 id="account-title">Account</h2>
        <p class="muted">
          {s.name} has its API off: account mail and impersonation need it on.
        </p>
      </section>
    );
  }
  const keyHref = `/mb/api-keys?entity=${encodeURIComponent(s.name)}&user=${
    encodeURIComponent(r.id)
  }`;
  return (
    <section class="card account-card" aria-labelledby="account-title">
      <h2 id="account-title">Account</h2>
      {ready === false && (
        <p class="notice">
          Mail is not set up: account mail waits until it is (
          <a href="/mb/settings">Settings</a>).
        </p>
      )}
      <ErrorBox error={error} />
      <div class="row wrap account-mail">
        {r.verified !== true && (
          <button
            type="button"
            class="btn"
            disabled={busy !== ""}
            aria-busy={busy === "verification" ? "true" : undefined}
            onClick={() => mail("verification")}
          >
            Send verification mail
          </button>
        )}
        <button
          type="button"
          class="btn"
          disabled={busy !== ""}
          aria-busy={busy === "password-reset" ? "true" : undefined}
          onClick={() => mail("password-reset")}
        >
          Send password reset
        </button>
        <a class="btn" href={keyHref}>Create API key</a>
      </div>
      <p class="muted small">
        At most one mail per address and kind every 2 minutes; more are dropped
        silently.
      </p>
      <h3 class="sub-title">Impersonate</h3>
      <p class="muted small">
        A token that acts as this user (their rules apply), for support. It
        cannot be refreshed; a logout or password change of the user ends it.
      </p>
      <div class="row wrap impersonate-row">
        <Field label="For" class="impersonate-for">
          <select
            name="impersonate-duration"
            value={String(duration)}
            onChange={(e) => setDuration(Number(e.currentTarget.value))}
          >
            {DURATIONS.map(([d, w]) => <option key={d} value={d}>{w}</option>)}
          </select>
        </Field>
        <button
          type="button"
          class="btn btn-danger"
          disabled={busy !== ""}
          aria-busy={busy === "impersonate" ? "true" : undefined}
          onClick={impersonate}
        >
          Impersonate
        </button>
      </div>
      {token && (
        <ShownOnce
          title={`Token acting as ${email}`}
          label="Token"
          value={token.token}
          onDone={() => setToken(null)}
        >
          <p class="notice impersonate-warning">
            Anyone holding this token acts as {email}. Send it as{" "}
            <code>Authorization: Bearer {"<token>"}</code>. It expires{" "}
            <time dateTime={new Date(token.until).toISOString()}>
              {localTime(new Date(token.until).toISOString())}
            </time>{" "}
            and cannot be refreshed.
          </p>
        </ShownOnce>
      )}
    </section>
  );
}
