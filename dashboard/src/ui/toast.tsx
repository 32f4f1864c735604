/// <reference lib="dom" />
/**
 * Short confirmations and errors in a live region ("Record saved").
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

/** The toast area (rendered once by the app). */
export function Toasts(): JSX.Element {
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.value.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>{t.text}</div>
      ))}
    </div>
  );
}
