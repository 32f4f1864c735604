/// <reference lib="dom" />
/**
 * `/mb/entities/:name/records/:id` (`new` to create): a form with an input
 * per field type, password and verified for auth entities, per-field API
 * errors next to the fields, and Delete. Views are shown read-only. A
 * user's record (auth entities) also has the Account card
 * (account_actions.tsx: account mail, impersonation, an API key).
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError, type RecordData } from "../mb.ts";
import { AccountActions } from "./account_actions.tsx";
import { cascadeLines } from "./cascade.ts";
import { useFileToken } from "../files/file_token.ts";
import {
  buildWrite,
  editableFields,
  formOf,
  type FormValues,
} from "./record_form.ts";
import { entityHref, navigate } from "../router.ts";
import {
  type EntitySchema,
  reloadCounts,
  schemaOf,
  schemas,
} from "../schemas.ts";
import { localDate } from "./cell.tsx";
import { confirmAction } from "../ui/confirm.tsx";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox, Submit } from "../ui/field.tsx";
import { describedBy, FieldBox } from "./inputs/field_box.tsx";
import { FieldInput } from "./inputs/field_input.tsx";
import { recordHref } from "./record_table.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "../ui/not_found.tsx";

/** Record editor. */
export function RecordEditorPage(
  props: { entity: string; id: string },
): JSX.Element {
  const schema = schemaOf(props.entity);
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema || schema.is_system) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  if (props.id === "new" && schema.type === "view") {
    return <NotFound what="Views are read-only: records cannot be added." />;
  }
  return <Editor schema={schema} id={props.id} />;
}

function Editor(props: { schema: EntitySchema; id: string }): JSX.Element {
  const schema = props.schema;
  const isNew = props.id === "new";
  const readOnly = schema.type === "view";
  const records = mb.entity(schema.name);
  const [record, setRecord] = useState<RecordData | null>(null);
  const [missing, setMissing] = useState(false);
  const [initial, setInitial] = useState<FormValues | null>(null);
  const [values, setValues] = useState<FormValues>(() => formOf(schema, null));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState("");
  const [busy, setBusy] = useState(false);
  const [password, setPassword] = useState({ value: "", confirm: "" });
  const file = useFileToken(schema, record?.updated);
  const show = (r: RecordData) => {
    const form = formOf(schema, r);
    setRecord(r);
    setInitial(form);
    setValues(form);
  };
  useEffect(() => {
    if (isNew) return;
    records.get(props.id).then(show).catch((e) => {
      if (e instanceof MoonbaseError && e.status === 404) setMissing(true);
      else setFormError((e as Error).message);
    });
  }, [props.id]);
  if (missing) {
    return <NotFound what={`${schema.name} has no record ${props.id}.`} />;
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    const w = buildWrite(schema, values, isNew ? null : initial, password);
    if (!w.ok) {
      setErrors(w.errors);
      setFormError("Fix the fields marked below.");
      return;
    }
    if (!isNew && w.empty) {
      toast("Nothing changed");
      return;
    }
    setBusy(true);
    setErrors({});
    setFormError("");
    try {
      if (isNew) {
        const r = await records.create(w.body);
        toast("Record created");
        void reloadCounts();
        navigate(recordHref(schema.name, r.id), true);
      } else {
        const r = await records.update(props.id, w.body);
        show(r);
        setPassword({ value: "", confirm: "" });
        toast("Record saved");
      }
    } catch (err) {
      const ae = err as MoonbaseError;
      const fe: Record<string, string> = {};
      for (const [k, v] of Object.entries(ae.fields ?? {})) fe[k] = v.message;
      setErrors(fe);
      setFormError(ae.message);
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    const also = await cascadeLines(schemas.value ?? [], schema.name, [
      props.id,
    ]);
    if (
      !await confirmAction(
        `Delete this ${schema.name} record? This cannot be undone.`,
        "Delete",
        also,
      )
    ) {
      return;
    }
    try {
      await records.delete(props.id);
      toast("Record deleted");
      void reloadCounts();
      navigate(entityHref(schema.name));
    } catch (err) {
      setFormError((err as Error).message);
    }
  };
  const loaded = isNew || record !== null;
  return (
    <section>
      <EntityHeader schema={schema} tab="records" />
      <form class="card record-form" onSubmit={submit} noValidate>
        <div class="row wrap">
          <h2>
            {isNew
              ? `New ${schema.name} record`
              : readOnly
              ? "Record"
              : "Edit record"}
          </h2>
          <span class="spacer" />
          <a class="btn btn-ghost" href={entityHref(schema.name)}>
            Back to {schema.name}
          </a>
        </div>
        {record && (
          <dl class="record-meta">
            <dt>id</dt>
            <dd class="mono">{record.id}</dd>
            {record.created && (
              <>
                <dt>created</dt>
                <dd title={record.created}>{localDate(record.created)}</dd>
              </>
            )}
            {record.updated && (
              <>
                <dt>updated</dt>
                <dd title={record.updated}>{localDate(record.updated)}</dd>
              </>
            )}
          </dl>
        )}
        <ErrorBox error={formError} />
        {!loaded && !formError && <p class="muted">Loading…</p>}
        {loaded && file.ready && (
          <div class="form-grid record-fields">
            {editableFields(schema).map((f) => (
              <FieldInput
                key={f.name}
                field={f}
                entity={schema.name}
                token={file.token}
                value={values[f.name]}
                onChange={(v) => setValues({ ...values, [f.name]: v })}
                error={errors[f.name]}
                disabled={readOnly}
              />
            ))}
            {schema.type === "auth" && (
              <>
                <PasswordInput
                  id="field-password"
                  label={isNew ? "password" : "new password"}
                  required={isNew}
                  value={password.value}
                  error={errors.password}
                  onChange={(value) => setPassword({ ...password, value })}
                />
                <PasswordInput
                  id="field-password-confirm"
                  label="confirm password"
                  required={isNew}
                  value={password.confirm}
                  error={errors["password-confirm"]}
                  onChange={(confirm) => setPassword({ ...password, confirm })}
                />
              </>
            )}
          </div>
        )}
        {loaded && !readOnly && (
          <div class="row wrap form-actions">
            <Submit busy={busy}>{isNew ? "Create" : "Save"}</Submit>
            <span class="spacer" />
            {!isNew && (
              <button type="button" class="btn btn-danger" onClick={remove}>
                Delete record
              </button>
            )}
          </div>
        )}
      </form>
      {schema.type === "auth" && record && (
        <AccountActions schema={schema} record={record} />
      )}
    </section>
  );
}

function PasswordInput(props: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  required: boolean;
  error?: string;
}): JSX.Element {
  return (
    <FieldBox
      id={props.id}
      label={props.label}
      required={props.required}
      error={props.error}
      hint={props.required ? "" : "Leave empty to keep the password"}
    >
      <input
        id={props.id}
        type="password"
        autocomplete="new-password"
        value={props.value}
        required={props.required}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(props.id, !props.required, props.error)}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
    </FieldBox>
  );
}
