/// <reference lib="dom" />
/**
 * A secret the server shows once (a new API key, an impersonation token):
 * in a read-only input, with a Copy button and what to know about it. The
 * page drops it when the admin is done; nothing keeps it.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { toast } from "./toast.tsx";

/** Copies `text`: the clipboard API, else the selection of `input`. */
async function copy(text: string, input: HTMLInputElement | null) {
  try {
    await navigator.clipboard.writeText(text);
    toast("Copied to the clipboard");
    return;
  } catch {
    // No clipboard API here (or no permission): copy the selection.
  }
  input?.select();
  const ok = input !== null && document.execCommand("copy");
  toast(
    ok
      ? "Copied to the clipboard"
      : "Cannot copy here: the text is selected, copy it with your keyboard",
    ok ? "ok" : "error",
  );
}

/** The secret, its Copy button, `children` (what it does), and Done. */
export function ShownOnce(props: {
  /** The card's heading ("New API key"). */
  title: string;
  /** The input's label ("API key"). */
  label: string;
  value: string;
  children?: ComponentChildren;
  onDone: () => void;
}): JSX.Element {
  const input = useRef<HTMLInputElement>(null);
  const card = useRef<HTMLElement>(null);
  useEffect(() => {
    // Bring it into view and focus: it is the one thing to do now.
    card.current?.scrollIntoView({ block: "nearest" });
    input.current?.focus();
    input.current?.select();
  }, [props.value]);
  return (
    <section
      ref={card}
      class="card shown-once"
      aria-labelledby="shown-once-title"
    >
      <h2 id="shown-once-title">{props.title}</h2>
      <p class="notice" role="note">
        Copy it now: it is shown this once and never again.
      </p>
      <div class="field">
        <label class="field-label" for="shown-once-value">{props.label}</label>
        <div class="row shown-once-value">
          <input
            id="shown-once-value"
            ref={input}
            class="mono"
            readOnly
            value={props.value}
            spellcheck={false}
            autocomplete="off"
            onFocus={(e) => e.currentTarget.select()}
          />
          <button
            type="button"
            class="btn btn-primary"
            onClick={() => copy(props.value, input.current)}
          >
            Copy
          </button>
        </div>
      </div>
      {props.children}
      <div class="row end">
        <button type="button" class="btn" onClick={props.onDone}>
          Done, hide it
        </button>
      </div>
    </section>
  );
}
