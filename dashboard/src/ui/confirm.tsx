/// <reference lib="dom" />
/**
 * A confirmation dialog (`<dialog>`, modal, keyboard-friendly): `await
 * confirmAction("Delete 3 records?")` resolves true when confirmed; `details`
 * are listed under the question (what a cascade deletes with it).
 *
 * @module
 */

import { signal } from "@preact/signals";
import type { JSX } from "preact";
import { useEffect, useRef } from "preact/hooks";

interface Pending {
  text: string;
  action: string;
  details: string[];
  resolve: (ok: boolean) => void;
}

const pending = signal<Pending | null>(null);

/**
 * Asks the admin to confirm; `action` labels the confirm button, `details`
 * are listed under the question ("Also deleted:").
 */
export function confirmAction(
  text: string,
  action = "Delete",
  details: string[] = [],
): Promise<boolean> {
  return new Promise((resolve) => {
    pending.value?.resolve(false);
    pending.value = { text, action, details, resolve };
  });
}

/** The dialog (rendered once by the app). */
export function ConfirmDialog(): JSX.Element | null {
  const ref = useRef<HTMLDialogElement>(null);
  const p = pending.value;
  useEffect(() => {
    if (p && ref.current && !ref.current.open) ref.current.showModal();
  }, [p]);
  if (!p) return null;
  const done = (ok: boolean) => {
    pending.value = null;
    ref.current?.close();
    p.resolve(ok);
  };
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-text"
      aria-describedby={p.details.length > 0 ? "confirm-details" : undefined}
      onCancel={() => done(false)}
    >
      <p id="confirm-text">{p.text}</p>
      {p.details.length > 0 && (
        <div id="confirm-details" class="confirm-details">
          <p>Also deleted with it:</p>
          <ul>
            {p.details.map((d) => <li key={d}>{d}</li>)}
          </ul>
        </div>
      )}
      <div class="row end">
        <button type="button" class="btn" onClick={() => done(false)}>
          Cancel
        </button>
        <button
          type="button"
          class="btn btn-danger"
          onClick={() => done(true)}
        >
          {p.action}
        </button>
      </div>
    </dialog>
  );
}
