/// <reference lib="dom" />
/**
 * The entity form: create (`/mb/entities/new`) or edit
 * (`/mb/entities/:name/schema`) a base, auth or view entity — name, type,
 * API switch, fields with every option and indexes (or the view's SQL),
 * an advanced JSON view, and deleting the entity (delete_entity.tsx). What
 * it sends is computed by `schema_diff.ts`: a POST body, or a PATCH with
 * only the changes.
 * Unsaved edits are kept in this browser (drafts.ts) and restored, with a
 * note, when the form opens again (after a session ended, say). An error
 * shown on an input goes as soon as that input changes (form_errors.ts).
 *
 * Over 350 lines, one idea: the entity form; kept whole because its fields,
 * indexes, JSON view and draft share one form state.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import { MoonbaseError } from "../mb.ts";
import { dropDraft, readDraft, writeDraft } from "../drafts/drafts.ts";
import { shownErrors } from "./form_errors.ts";
import { entityHref, navigate } from "../router.ts";
import { patchBody, schemaBody } from "./schema_diff.ts";
import {
  type FormErrors,
  type FormState,
  formState,
  newForm,
  reserveKeys,
} from "./schema_form.ts";
import {
  errorKey,
  fieldErrorKeys,
  formFromJson,
  formJson,
} from "./schema_json.ts";
import {
  createSchema,
  reloadSchemas,
  schemaOf,
  schemas,
  updateSchema,
} from "../schemas.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { DraftNote } from "../drafts/draft_note.tsx";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { DeleteEntity } from "./delete_entity.tsx";
import { EntityBasics, ViewQuery } from "./entity_basics.tsx";
import { FieldsSection } from "./fields_section.tsx";
import { IndexesSection } from "./indexes_section.tsx";
import { SchemaJson } from "./json_view.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "../ui/not_found.tsx";

/** Create (no entity) or edit an entity's schema. */
export function EntityFormPage(props: { entity?: string }): JSX.Element {
  if (!props.entity) return <EntityForm />;
  if (!schemas.value) return <p class="muted">Loading…</p>;
  const s = schemaOf(props.entity);
  if (!s) return <NotFound what={`There is no entity "${props.entity}".`} />;
  return <EntityForm key={s.id} saved={s} />;
}

/** The form's error when the server's refusal is marked on inputs. */
const PLACED = "Not saved: see the marked input above.";

/** What a schema draft keeps: the form, and the JSON text when shown. */
interface SchemaDraft {
  form: FormState;
  json?: string;
}

/** True when `f` would change `base` (or, new, differs from an empty form). */
function changed(base: EntitySchema | undefined, f: FormState): boolean {
  if (base) return !patchBody(base, f).empty;
  return JSON.stringify(f) !== JSON.stringify(newForm());
}

function EntityForm(props: { saved?: EntitySchema }): JSX.Element {
  const [base, setBase] = useState(props.saved);
  const draftId = props.saved?.id ?? "new";
  // Edits kept from an earlier visit (a session that ended, a reload).
  const [restored, setRestored] = useState(() => {
    const d = readDraft<SchemaDraft>("schema", draftId);
    if (!d?.value?.form || !Array.isArray(d.value.form.fields)) return null;
    reserveKeys(d.value.form);
    return changed(props.saved, d.value.form) || d.value.json !== undefined
      ? d
      : null;
  });
  const [form, setForm] = useState<FormState>(() =>
    restored?.value.form ??
      (props.saved ? formState(props.saved) : newForm())
  );
  const [mode, setMode] = useState<"form" | "json">(
    restored?.value.json !== undefined ? "json" : "form",
  );
  const [json, setJson] = useState({
    text: restored?.value.json ?? "",
    error: "",
    offset: -1,
  });
  // Errors as shown after a refused save, with the form they were about:
  // an input's error goes once that input changes.
  const [refusal, setRefusal] = useState<
    { errors: FormErrors; form: FormState }
  >({ errors: {}, form });
  const errors = shownErrors(refusal.errors, refusal.form, form);
  const setErrors = (e: FormErrors, f: FormState = form) =>
    setRefusal({ errors: e, form: f });
  const [apiError, setApiError] = useState("");
  const [busy, setBusy] = useState(false);
  const editing = base !== undefined;
  const locked = base?.is_system === true;

  useEffect(() => {
    // Bring the first marked input into view after a refused save.
    const el = document.querySelector<HTMLElement>(
      ".schema-form .field.invalid input, .schema-form .field.invalid select, .schema-form .field.invalid textarea",
    );
    el?.focus();
  }, [refusal]);

  const dirty = changed(base, form) ||
    (mode === "json" && json.text !== formJson(form));
  useEffect(() => {
    if (!dirty) return dropDraft("schema", draftId);
    const value: SchemaDraft = mode === "json"
      ? { form, json: json.text }
      : { form };
    writeDraft("schema", draftId, value, base?.updated ?? "");
  }, [JSON.stringify(form), mode, json.text, dirty]);

  const discard = () => {
    const f = base ? formState(base) : newForm();
    setForm(f);
    setMode("form");
    setJson({ text: "", error: "", offset: -1 });
    setErrors({}, f);
    setApiError("");
    setRestored(null);
    dropDraft("schema", draftId);
  };

  const targets = (schemas.value ?? [])
    .filter((s) => !s.is_system && s.type !== "view")
    .map((s) => s.name);
  if (!editing && /^\w+$/.test(form.name) && !targets.includes(form.name)) {
    targets.push(form.name);
  }

  /** The form state to save (the JSON view's text applied first). */
  const current = (): FormState | null => {
    if (mode === "form") return form;
    const r = formFromJson(json.text, base);
    if (!r.ok) {
      setJson({ ...json, error: r.message, offset: r.offset ?? -1 });
      return null;
    }
    setJson({ ...json, error: "", offset: -1 });
    setForm(r.form);
    return r.form;
  };

  const showJson = () => {
    const { errors: e } = schemaBody(form);
    if (Object.keys(e).length > 0) {
      setErrors(e, form);
      return;
    }
    setJson({ text: formJson(form), error: "", offset: -1 });
    setMode("json");
  };
  const showForm = () => {
    if (current()) setMode("form");
  };

  const refused = (err: unknown, f: FormState) => {
    const message = err instanceof Error ? err.message : String(err);
    const placed = err instanceof MoonbaseError && mode === "form"
      ? fieldErrorKeys(err.fields, f)
      : {};
    const key = err instanceof MoonbaseError && mode === "form"
      ? errorKey(message, f)
      : "";
    if (key) placed[key] = message;
    if (Object.keys(placed).length > 0) {
      setErrors(placed, f);
      setApiError(PLACED);
    } else setApiError(`Not saved: ${message}`);
  };

  const save = async (e: Event) => {
    e.preventDefault();
    const f = current();
    if (!f) return;
    setErrors({}, f);
    setApiError("");
    if (!base) {
      const { body, errors: bad } = schemaBody(f);
      if (Object.keys(bad).length > 0) return setErrors(bad, f);
      setBusy(true);
      try {
        const s = await createSchema(body);
        dropDraft("schema", draftId);
        await reloadSchemas();
        toast(`Entity ${s.name} created`);
        navigate(entityHref(s.name));
      } catch (err) {
        refused(err, f);
      } finally {
        setBusy(false);
      }
      return;
    }
    const p = patchBody(base, f);
    if (Object.keys(p.errors).length > 0) return setErrors(p.errors, f);
    if (p.empty) return toast("Nothing to save: no changes");
    if (p.dropped.length > 0) {
      const list = p.dropped.map((n) => `"${n}"`).join(", ");
      const ok = await confirmAction(
        `Drop ${
          p.dropped.length === 1 ? "field" : "fields"
        } ${list} and all the data in ${
          p.dropped.length === 1 ? "it" : "them"
        }? This cannot be undone.`,
        "Drop and save",
      );
      if (!ok) return;
    }
    setBusy(true);
    try {
      const s = await updateSchema(base.id, p.body);
      dropDraft("schema", draftId);
      setRestored(null);
      setBase(s);
      setForm(formState(s));
      if (mode === "json") {
        setJson({ text: formJson(formState(s)), error: "", offset: -1 });
      }
      await reloadSchemas();
      toast(`Schema of ${s.name} saved`);
      if (s.name !== base.name) navigate(entityHref(s.name, "schema"), true);
    } catch (err) {
      refused(err, f);
    } finally {
      setBusy(false);
    }
  };

  const set = (p: Partial<FormState>) => setForm({ ...form, ...p });

  return (
    <section class="entity-form">
      {base
        ? <EntityHeader schema={base} tab="schema" />
        : (
          <div class="page-head">
            <h1>New entity</h1>
          </div>
        )}
      {restored && (
        <DraftNote
          at={restored.at}
          stale={!!base && restored.base !== base.updated}
          onDiscard={discard}
        />
      )}
      {locked && (
        <p class="notice">
          {base!.name} is a system entity: its schema cannot be changed.
        </p>
      )}
      <form class="schema-form stack" onSubmit={save} noValidate>
        <fieldset class="plain stack" disabled={locked}>
          <div class="row wrap">
            <div class="view-switch" role="group" aria-label="Editor">
              <button
                type="button"
                class="btn btn-small"
                aria-pressed={mode === "form"}
                onClick={showForm}
              >
                Form
              </button>
              <button
                type="button"
                class="btn btn-small"
                aria-pressed={mode === "json"}
                onClick={showJson}
              >
                JSON
              </button>
            </div>
          </div>
          {mode === "json"
            ? (
              <section class="card">
                <SchemaJson
                  text={json.text}
                  error={json.error}
                  offset={json.offset < 0 ? undefined : json.offset}
                  onText={(text) => setJson({ ...json, text })}
                  onApply={showForm}
                />
              </section>
            )
            : (
              <>
                <EntityBasics
                  form={form}
                  saved={base}
                  errors={errors}
                  set={set}
                />
                {form.type === "view"
                  ? (
                    <ViewQuery
                      form={form}
                      saved={base}
                      errors={errors}
                      set={set}
                    />
                  )
                  : (
                    <>
                      <FieldsSection
                        form={form}
                        saved={base}
                        errors={errors}
                        targets={targets}
                        onFields={(fields) => set({ fields })}
                      />
                      <IndexesSection
                        form={form}
                        errors={errors}
                        onIndexes={(indexes) => set({ indexes })}
                      />
                    </>
                  )}
              </>
            )}
        </fieldset>
        <ErrorBox
          error={apiError === PLACED && Object.keys(errors).length === 0
            ? ""
            : apiError}
        />
        <div class="row end form-actions">
          {!editing && <a class="btn" href="/mb">Cancel</a>}
          {!locked && (
            <Submit busy={busy}>
              {editing ? "Save changes" : "Create entity"}
            </Submit>
          )}
        </div>
      </form>
      {base && !locked && <DeleteEntity schema={base} />}
    </section>
  );
}
