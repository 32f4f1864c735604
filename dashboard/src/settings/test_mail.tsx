/// <reference lib="dom" />
/**
 * "Send test mail" (`POST /sys/settings/test-mail {to}`): one message sent
 * now through the saved settings. 204: the SMTP server accepted it; 502:
 * its refusal or why it could not be reached, shown as the server says it.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { session } from "../session/session.ts";
import { Field, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";

type Outcome = { ok: true; text: string } | { ok: false; text: string } | null;

/** The test mail card; `dirty` warns that unsaved changes are not used. */
export function TestMail(
  props: { ready: boolean; dirty: boolean },
): JSX.Element {
  const [to, setTo] = useState(session.user.value?.email ?? "");
  const [fieldError, setFieldError] = useState("");
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setOutcome(null);
    setFieldError("");
    const address = to.trim();
    try {
      await mb.settings.testMail({ to: address });
      const text =
        `Sent: the SMTP server accepted the test mail to ${address}.`;
      setOutcome({ ok: true, text });
      toast("Test mail sent");
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      if (err.fields.to) setFieldError(err.fields.to.message);
      else setOutcome({ ok: false, text: err.message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="card test-mail"
      onSubmit={send}
      aria-labelledby="test-mail-title"
      noValidate
    >
      <h2 id="test-mail-title">Send test mail</h2>
      <p class="muted">
        Sends one message now through the saved settings and waits for the SMTP
        server's answer (at most 30 s).
      </p>
      {props.dirty && (
        <p class="notice">Save first: the test mail uses the saved settings.</p>
      )}
      <div class="row wrap test-mail-row">
        <Field label="To" error={fieldError} class="test-mail-to">
          <input
            name="test-to"
            type="email"
            autocomplete="off"
            value={to}
            required
            aria-invalid={fieldError ? "true" : undefined}
            onInput={(e) => setTo(e.currentTarget.value)}
          />
        </Field>
        <Submit busy={busy}>Send test mail</Submit>
      </div>
      {!props.ready && (
        <p class="muted">
          Set an SMTP host and a sender address (and save) to send mail.
        </p>
      )}
      <div role="status" aria-live="polite">
        {outcome?.ok && <p class="ok-box">{outcome.text}</p>}
      </div>
      {outcome && !outcome.ok && (
        <p class="error-box" role="alert">{outcome.text}</p>
      )}
    </form>
  );
}
