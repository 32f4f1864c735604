/// <reference lib="dom" />
/**
 * `/mb/entities/:name/rules`: who may list, read, add, update and delete
 * records. Per operation a mode (public / any user / admins only / custom)
 * and, for custom, an expression checked as it is typed; "Save rules"
 * sends `PATCH /schemas/:name {rules}`; "Test as" tries the rules as edited.
 * Unsaved edits are kept in this browser (drafts.ts) and restored, with a
 * note, when the page opens again (after a session ended, say).
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb } from "../mb.ts";
import { dropDraft, readDraft, writeDraft } from "../drafts/drafts.ts";
import { reloadSchemas, schemaOf, schemas } from "../schemas.ts";
import type { EntitySchema } from "../schemas.ts";
import type { Operation, Rule, RuleMode } from "../../../lib/schema/types.ts";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { DraftNote } from "../drafts/draft_note.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { RuleInput } from "./rule_input.tsx";
import { forgetVocabulary } from "./rule_vocabulary.ts";
import { TestAs } from "./test_as.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "../ui/not_found.tsx";

type Rules = Record<Operation, Rule>;

const OPS: Operation[] = ["list", "get", "add", "update", "delete"];

/** Per operation: title, the mode selector's label, the verb of the expression's label. */
const OP_TITLES: Record<Operation, [string, string, string]> = {
  list: ["List records", "Who may list records", "listing"],
  get: ["Read a record", "Who may read a record", "reading"],
  add: ["Add records", "Who may add records", "adding"],
  update: ["Update records", "Who may update records", "updating"],
  delete: ["Delete records", "Who may delete records", "deleting"],
};

const MODES: [RuleMode, string][] = [
  ["public", "Public — anyone, no login needed"],
  ["auth", "Any logged-in user"],
  ["", "Admins only"],
  ["custom", "Custom expression"],
];

const MODE_HINTS: Record<string, string> = {
  public: "Guests and users pass; admins always pass.",
  auth: "Users of any auth entity pass; guests get 401.",
  "": "Only admins; guests get 401 and users 403.",
};

function copyRules(r: Rules): Rules {
  const out = {} as Rules;
  for (const op of OPS) out[op] = { mode: r[op].mode, expr: r[op].expr };
  return out;
}

/** What the server stores for a draft: no expression unless custom. */
function toSave(r: Rules): Rules {
  const out = {} as Rules;
  for (const op of OPS) {
    out[op] = r[op].mode === "custom"
      ? { mode: "custom", expr: r[op].expr }
      : { mode: r[op].mode, expr: "" };
  }
  return out;
}

const same = (a: Rules, b: Rules) =>
  JSON.stringify(toSave(a)) === JSON.stringify(toSave(b));

/** Access rules of one entity. */
export function RulesPage(props: { entity: string }): JSX.Element {
  const schema = schemaOf(props.entity);
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  return <RulesEditor key={schema.updated} schema={schema} />;
}

function RulesEditor(props: { schema: EntitySchema }): JSX.Element {
  const s = props.schema;
  const [saved, setSaved] = useState<Rules>(() => copyRules(s.rules));
  // Edits kept from an earlier visit (a session that ended, a reload).
  const [restored, setRestored] = useState(() => {
    const d = readDraft<Rules>("rules", s.id);
    return d && OPS.every((op) => d.value[op]) && !same(d.value, s.rules)
      ? d
      : null;
  });
  const [draft, setDraft] = useState<Rules>(() =>
    copyRules(restored?.value ?? s.rules)
  );
  const [errors, setErrors] = useState<Partial<Record<Operation, string>>>({});
  const [formError, setFormError] = useState("");
  const [busy, setBusy] = useState(false);
  const dirty = !same(draft, saved);
  const ops = s.type === "view"
    ? OPS.filter((o) => o === "list" || o === "get")
    : OPS;

  useEffect(() => {
    if (dirty) writeDraft("rules", s.id, toSave(draft), s.updated);
    else dropDraft("rules", s.id);
  }, [JSON.stringify(toSave(draft)), dirty]);

  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    addEventListener("beforeunload", warn);
    return () => removeEventListener("beforeunload", warn);
  }, [dirty]);

  const set = (op: Operation, rule: Partial<Rule>) => {
    setDraft((d) => ({ ...d, [op]: { ...d[op], ...rule } }));
    setErrors((e) => ({ ...e, [op]: undefined }));
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErrors({});
    setFormError("");
    try {
      const rules = toSave(draft);
      await mb.schemas.update(s.name, { rules });
      dropDraft("rules", s.id);
      setRestored(null);
      setSaved(copyRules(rules));
      toast(`Rules of ${s.name} saved`);
      forgetVocabulary();
      void reloadSchemas();
    } catch (err) {
      const msg = (err as Error).message;
      const op = /rules\.(list|get|add|update|delete)\b/.exec(msg)?.[1] as
        | Operation
        | undefined;
      if (op) setErrors({ [op]: msg });
      else setFormError(msg);
      toast("The rules were not saved", "error");
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="rules-page">
      <EntityHeader
        schema={s}
        tab="rules"
        actions={dirty && <span class="badge badge-warn">Unsaved changes</span>}
      />
      {s.is_system && (
        <p class="notice">
          {s.name}{" "}
          is a system entity: only admins reach it, whatever its rules say.
        </p>
      )}
      {s.type === "view" && (
        <p class="notice">
          Views are read-only: only the list and read rules apply.
        </p>
      )}
      {restored && (
        <DraftNote
          at={restored.at}
          stale={restored.base !== s.updated}
          onDiscard={() => {
            setDraft(copyRules(saved));
            setErrors({});
            setRestored(null);
            dropDraft("rules", s.id);
          }}
        />
      )}
      <form onSubmit={save} class="stack">
        <ErrorBox error={formError} />
        {ops.map((op) => (
          <OpRule
            key={op}
            entity={s.name}
            op={op}
            rule={draft[op]}
            changed={JSON.stringify(toSave(draft)[op]) !==
              JSON.stringify(toSave(saved)[op])}
            error={errors[op]}
            onChange={(r) => set(op, r)}
          />
        ))}
        <div class="row wrap rules-actions">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {busy ? "Saving…" : "Save rules"}
          </button>
          <button
            type="button"
            class="btn"
            disabled={!dirty || busy}
            onClick={() => {
              setDraft(copyRules(saved));
              setErrors({});
              setRestored(null);
              dropDraft("rules", s.id);
            }}
          >
            Discard changes
          </button>
          {dirty && <span class="muted">You have unsaved changes.</span>}
        </div>
      </form>
      <TestAs entity={s.name} ops={ops} rules={draft} />
    </section>
  );
}

function OpRule(props: {
  entity: string;
  op: Operation;
  rule: Rule;
  changed: boolean;
  error?: string;
  onChange: (r: Partial<Rule>) => void;
}): JSX.Element {
  const { op, rule } = props;
  const [title, who, verb] = OP_TITLES[op];
  const selectId = `rule-${op}-mode`;
  return (
    <fieldset class={`card rule-op ${props.error ? "invalid" : ""}`}>
      <legend class="rule-legend">
        {title}
        {props.changed && <span class="badge badge-warn">changed</span>}
      </legend>
      <div class="rule-row">
        <div class="field rule-mode">
          <label class="field-label" for={selectId}>{who}</label>
          <select
            id={selectId}
            value={rule.mode}
            onChange={(e) =>
              props.onChange({ mode: e.currentTarget.value as RuleMode })}
          >
            {MODES.map(([v, label]) => (
              <option key={v} value={v}>{label}</option>
            ))}
          </select>
        </div>
        {rule.mode === "custom"
          ? (
            <RuleInput
              entity={props.entity}
              kind="rule"
              id={`rule-${op}-expr`}
              label={`Rule for ${verb}`}
              value={rule.expr}
              onInput={(expr) => props.onChange({ expr })}
              hint={op === "add"
                ? "record is the record being created; Ctrl+Space lists names."
                : "Type record., auth. or req. for names (Ctrl+Space lists them)."}
              error={props.error}
              compiledBadge={op !== "add"}
            />
          )
          : (
            <p class="muted rule-mode-hint">
              {MODE_HINTS[rule.mode]}
              {props.error && <span class="error-text">{props.error}</span>}
            </p>
          )}
      </div>
    </fieldset>
  );
}
