/// <reference lib="dom" />
/**
 * An expression input for access rules and list filters: checked by the
 * server as the admin types (debounced), the error said in words below it
 * and its position highlighted in the text (a mirror layer behind a
 * transparent textarea), and completions in a listbox popup (the combobox
 * pattern on a textarea — a textbox with `aria-autocomplete="list"`,
 * `aria-controls` and `aria-activedescendant`, as `role="combobox"` is not
 * allowed on a textarea: arrows, Enter or Tab, Escape, Ctrl+Space; options
 * are clickable). Completions follow relations (`record.author.` → the
 * author's fields; back-relations as lists), from the schemas:
 * relation_completion.ts.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { MoonbaseError } from "../mb.ts";
import { schemas } from "../schemas.ts";
import { relationNames } from "./relation_completion.ts";
import {
  candidates,
  checkExpr,
  type CheckResult,
  complete,
  type ExprKind,
  type Vocabulary,
  vocabulary,
  wordBefore,
} from "./rule_vocabulary.ts";

export type { CheckResult, ExprKind } from "./rule_vocabulary.ts";

/** Props of {@link RuleInput}. */
export interface RuleInputProps {
  /** The entity whose fields the expression may use. */
  entity: string;
  /** `"rule"` (`record.*`, `auth.*`, `req.*`) or `"filter"` (bare field names, `auth.*`). */
  kind: ExprKind;
  /** The text (controlled). */
  value: string;
  /** Called with the new text on every change (typing or a completion). */
  onInput: (value: string) => void;
  /** The visible label. */
  label: string;
  /** The textarea's id (also the prefix of the ids of its parts). */
  id: string;
  /** Called with each verdict of the server (null while empty or unknown). */
  onCheck?: (result: CheckResult | null) => void;
  /** Enter (without Shift, no completion open) calls this instead of adding a line (filter boxes). */
  onEnter?: () => void;
  /** A hint under the input. */
  hint?: string;
  /** An error from elsewhere (e.g. the save), shown under the input. */
  error?: string;
  /** Rows of the textarea (default 2). */
  rows?: number;
  /** Show whether lists apply it in SQL or per row (default true; off for `add` rules). */
  compiledBadge?: boolean;
}

const DEBOUNCE_MS = 250;
/** Completions shown at most (a related entity's fields and its lists). */
const MAX_OPTIONS = 30;

/** Capitalizes the first letter. */
const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Where the text is wrong: before, the marked token, after. */
function splitAt(
  text: string,
  from: number,
  to: number,
): [string, string, string] {
  const a = Math.min(from, text.length);
  const b = Math.max(a, Math.min(to, text.length));
  return [text.slice(0, a), text.slice(a, b) || " ", text.slice(b)];
}

/** The expression input (see the module doc); export for the records filter box too. */
export function RuleInput(props: RuleInputProps): JSX.Element {
  const { entity, kind, value, id } = props;
  const [result, setResult] = useState<CheckResult | null>(null);
  const [checkError, setCheckError] = useState("");
  const [vocab, setVocab] = useState<Vocabulary | null>(null);
  const [options, setOptions] = useState<string[]>([]);
  const [active, setActive] = useState(0);
  const area = useRef<HTMLTextAreaElement>(null);
  const mirror = useRef<HTMLDivElement>(null);
  const caretAfter = useRef<number | null>(null);
  const onCheck = useRef(props.onCheck);
  onCheck.current = props.onCheck;

  useEffect(() => {
    // Without the vocabulary the input still works, with no completions.
    vocabulary(entity).then(setVocab).catch(() => setVocab(null));
  }, [entity]);

  useEffect(() => {
    if (value.trim() === "") {
      const r: CheckResult | null = kind === "filter" ? null : {
        valid: false,
        error: "Cannot parse rule: a custom rule needs an expression",
        detail: "a custom rule needs an expression",
        position: 0,
        end: 1,
      };
      setResult(r);
      setCheckError("");
      onCheck.current?.(r);
      return;
    }
    const ac = new AbortController();
    const timer = setTimeout(() => {
      checkExpr(entity, value, kind, ac.signal).then((r) => {
        setResult(r);
        setCheckError("");
        onCheck.current?.(r);
      }).catch((e) => {
        // Anything else is the abort of a check superseded by newer text.
        if (e instanceof MoonbaseError) setCheckError(e.message);
      });
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      ac.abort();
    };
  }, [entity, kind, value]);

  useLayoutEffect(() => {
    const ta = area.current;
    if (ta && caretAfter.current !== null) {
      ta.setSelectionRange(caretAfter.current, caretAfter.current);
      caretAfter.current = null;
    }
    if (ta && mirror.current) mirror.current.scrollTop = ta.scrollTop;
  }, [value]);

  // The active completion stays in view as the arrows move it.
  useEffect(() => {
    if (options.length === 0) return;
    document.getElementById(`${id}-opt-${active}`)?.scrollIntoView?.({
      block: "nearest",
    });
  }, [active, options]);

  const suggest = (text: string, caret: number) => {
    if (!vocab) return setOptions([]);
    const list = complete(
      [
        ...candidates(vocab, kind),
        ...relationNames(schemas.value ?? [], entity, kind, text, caret),
      ],
      vocab.methods,
      wordBefore(text, caret),
      MAX_OPTIONS,
    );
    setOptions(list);
    setActive(0);
  };

  const insert = (option: string) => {
    const ta = area.current;
    if (!ta) return;
    const caret = ta.selectionStart;
    const word = wordBefore(value, caret);
    const start = caret - word.length;
    const next = value.slice(0, start) + option + value.slice(caret);
    caretAfter.current = start + option.length;
    props.onInput(next);
    // A root or an object ("auth.") goes on to its members.
    if (option.endsWith(".")) suggest(next, start + option.length);
    else setOptions([]);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    const open = options.length > 0;
    if (e.key === " " && e.ctrlKey) {
      e.preventDefault();
      const ta = e.currentTarget as HTMLTextAreaElement;
      suggest(ta.value, ta.selectionStart);
    } else if (open && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      const n = options.length;
      setActive((a) => (a + step + n) % n);
    } else if (open && (e.key === "Enter" || e.key === "Tab")) {
      e.preventDefault();
      insert(options[active] ?? options[0]);
    } else if (open && e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      setOptions([]);
    } else if (e.key === "Enter" && !e.shiftKey && props.onEnter) {
      e.preventDefault();
      props.onEnter();
    }
  };

  const invalid = result !== null && !result.valid;
  const [before, marked, after] = invalid
    ? splitAt(value, result.position, result.end)
    : [value, "", ""];
  const open = options.length > 0;
  const listId = `${id}-list`;
  const errId = `${id}-error`;
  const hintId = `${id}-hint`;
  const saveErrId = `${id}-save-error`;
  const describedBy = [
    props.hint ? hintId : "",
    invalid ? errId : "",
    props.error ? saveErrId : "",
  ]
    .filter(Boolean).join(" ");

  return (
    <div class={`field rule-input ${invalid || props.error ? "invalid" : ""}`}>
      <label class="field-label" for={id}>{props.label}</label>
      <div class="rule-editor">
        <div class="rule-mirror" ref={mirror} aria-hidden="true">
          {before}
          {invalid && <mark class="rule-mark">{marked}</mark>}
          {after}
          {"\n"}
        </div>
        <textarea
          id={id}
          ref={area}
          class="rule-text"
          rows={props.rows ?? 2}
          spellcheck={false}
          autocomplete="off"
          autocapitalize="off"
          value={value}
          aria-autocomplete="list"
          aria-haspopup="listbox"
          aria-controls={listId}
          aria-activedescendant={open ? `${id}-opt-${active}` : undefined}
          aria-invalid={invalid || props.error ? "true" : undefined}
          aria-describedby={describedBy || undefined}
          onInput={(e) => {
            const ta = e.currentTarget;
            props.onInput(ta.value);
            suggest(ta.value, ta.selectionStart);
          }}
          onKeyDown={onKeyDown}
          onBlur={() =>
            setOptions([])}
          onScroll={(e) => {
            if (mirror.current) {
              mirror.current.scrollTop = e.currentTarget.scrollTop;
            }
          }}
        />
        <ul
          id={listId}
          role="listbox"
          aria-label={`Completions for ${props.label}`}
          class="rule-completions"
          hidden={!open}
        >
          {options.map((o, i) => (
            <li
              key={o}
              id={`${id}-opt-${i}`}
              role="option"
              aria-selected={i === active ? "true" : "false"}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault(); // keep the focus in the textarea
                insert(o);
              }}
            >
              <code>{o}</code>
            </li>
          ))}
        </ul>
      </div>
      <span class="sr-only" aria-live="polite">
        {open
          ? `${options.length} suggestions: arrows to choose, Enter to insert, Escape to close`
          : ""}
      </span>
      {props.hint && <small id={hintId} class="hint">{props.hint}</small>}
      <div aria-live="polite" class="rule-status">
        {invalid && (
          <div id={errId} class="error-text rule-error">
            <span>
              {cap(result.detail)} {result.position < value.length
                ? `— at character ${result.position + 1}`
                : "— at the end"}
            </span>
            <code class="rule-excerpt">
              {before.slice(-30)}
              <mark class="rule-mark">{marked}</mark>
              {after.slice(0, 30)}
            </code>
          </div>
        )}
        {props.error && <p id={saveErrId} class="error-text">{props.error}</p>}
        {result?.valid && (
          <span class="rule-ok">
            ✓ Valid {props.compiledBadge === false
              ? null
              : result.compiled === "sql"
              ? <span class="badge badge-ok">SQL</span>
              : <span class="badge badge-warn">per row</span>}
          </span>
        )}
        {checkError && <p class="error-text">{checkError}</p>}
      </div>
    </div>
  );
}
