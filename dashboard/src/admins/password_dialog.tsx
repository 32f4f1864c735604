/// <reference lib="dom" />
/**
 * "Change password" for one admin, in a modal `<dialog>`
 * (`PATCH /sys/admins/:id {password}`). The API then revokes that admin's
 * other sessions; the token that made the change stays valid, so changing
 * your own password keeps you logged in here.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { PasswordField } from "../ui/credential_fields.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";

/** The admin whose password changes. */
export interface PasswordTarget {
  id: string;
  email: string;
  self: boolean;
}

/** The dialog; `onClose` runs when it closes (saved or not). */
export function PasswordDialog(props: {
  target: PasswordTarget;
  onClose: () => void;
}): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [fieldError, setFieldError] = useState("");
  const [repeatError, setRepeatError] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const t = props.target;
  useEffect(() => {
    if (ref.current && !ref.current.open) ref.current.showModal();
  }, []);
  const close = () => {
    ref.current?.close();
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    setFieldError("");
    setRepeatError("");
    if (password !== repeat) {
      setRepeatError("The two passwords differ.");
      return;
    }
    setBusy(true);
    try {
      await mb.admins.update(t.id, { password });
      toast(
        t.self
          ? "Your password was changed; your other sessions were logged out"
          : `Password of ${t.email} changed; their sessions were logged out`,
      );
      close();
    } catch (err) {
      if (!(err instanceof MoonbaseError)) throw err;
      if (err.fields.password) setFieldError(err.fields.password.message);
      else setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog
      ref={ref}
      class="confirm password-dialog"
      aria-labelledby="pw-title"
      onCancel={(e) => {
        e.preventDefault();
        close();
      }}
    >
      <form class="stack" onSubmit={submit}>
        <h2 id="pw-title">Change password of {t.email}</h2>
        <p class="muted">
          {t.self
            ? "Your other sessions (other browsers and devices) will be logged out; this one stays logged in."
            : "Every session of this admin will be logged out."}
        </p>
        <ErrorBox error={error} />
        <PasswordField
          purpose="new"
          label="New password"
          name="new-password"
          error={fieldError}
          value={password}
          onValue={setPassword}
        />
        <PasswordField
          purpose="repeat"
          label="Repeat the new password"
          name="repeat-password"
          error={repeatError}
          value={repeat}
          onValue={setRepeat}
        />
        <div class="row end">
          <button type="button" class="btn" onClick={close}>Cancel</button>
          <Submit busy={busy}>Change password</Submit>
        </div>
      </form>
    </dialog>
  );
}
