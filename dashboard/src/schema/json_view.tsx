/// <reference lib="dom" />
/**
 * The entity form's advanced view: the schema body as editable JSON. An
 * invalid text shows where it goes wrong and selects that spot.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef } from "preact/hooks";

/** The JSON editor; `error`/`offset` come from the last apply. */
export function SchemaJson(props: {
  text: string;
  onText: (text: string) => void;
  onApply: () => void;
  error: string;
  offset?: number;
}): JSX.Element {
  const ref = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (el && props.error && props.offset !== undefined) {
      el.focus();
      el.setSelectionRange(props.offset, props.offset + 1);
    }
  }, [props.error, props.offset]);
  return (
    <div class="schema-json stack">
      <label class={`field ${props.error ? "invalid" : ""}`}>
        <span class="field-label">Schema JSON</span>
        <textarea
          ref={ref}
          class="json-editor"
          rows={18}
          spellcheck={false}
          value={props.text}
          aria-describedby="schema-json-hint schema-json-error"
          onInput={(e) => props.onText(e.currentTarget.value)}
        />
      </label>
      <small class="hint" id="schema-json-hint">
        The body the schemas API takes (rules are edited in the Rules tab). A
        field with an <code>id</code>{" "}
        is a saved field: change its name to rename it; leave a field out to
        drop it. Saving from here applies the JSON first.
      </small>
      <p class="error-text" id="schema-json-error" role="alert">
        {props.error}
      </p>
      <div class="row">
        <button type="button" class="btn" onClick={props.onApply}>
          Apply to form
        </button>
      </div>
    </div>
  );
}
