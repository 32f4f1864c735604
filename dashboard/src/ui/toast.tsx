/// <reference lib="dom" />
/**
 * Short confirmations and errors in a live region ("Record saved"). In the
 * logged-in frame they show in the top bar, in the room between the brand
 * and the admin's controls (a flex item, not an overlay), so a toast never
 * covers a button; the newest one is shown, clamped to two lines, its whole
 * text in its tooltip and read out by screen readers. Elsewhere (login,
 * setup) they sit in the page's flow.
 *
 * @module
 */

import { signal } from "@preact/signals";
import type { JSX } from "preact";

interface Toast {
  id: number;
  text: string;
  kind: "ok" | "error";
}

const toasts = signal<Toast[]>([]);
let next = 1;

/** Shows a message for a few seconds. */
export function toast(text: string, kind: "ok" | "error" = "ok"): void {
  const id = next++;
  toasts.value = [...toasts.value, { id, text, kind }];
  setTimeout(() => {
    toasts.value = toasts.value.filter((t) => t.id !== id);
  }, kind === "error" ? 8000 : 4000);
}

/** The toast area: `bar` in the top bar, else in the page's flow. */
export function Toasts(props: { bar?: boolean }): JSX.Element {
  const last = toasts.value[toasts.value.length - 1];
  return (
    <div
      class={props.bar ? "toasts toasts-bar" : "toasts"}
      role="status"
      aria-live="polite"
    >
      {last && (
        <div key={last.id} class={`toast toast-${last.kind}`} title={last.text}>
          {last.text}
        </div>
      )}
    </div>
  );
}
