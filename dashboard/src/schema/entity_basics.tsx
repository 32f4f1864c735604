/// <reference lib="dom" />
/**
 * The entity form's first cards: name, type and API switch (with where
 * the access rules are), and a view's SQL with its columns.
 *
 * @module
 */

import type { JSX } from "preact";
import type { EntitySchema, EntityType } from "../../../lib/schema/types.ts";
import { entityHref } from "../router.ts";
import type { FormErrors, FormState } from "./schema_form.ts";
import { Field } from "../ui/field.tsx";
import { ViewColumns } from "./system_fields.tsx";

const TYPE_HINT: Record<EntityType, string> = {
  base: "A table of records.",
  auth: "Users who can sign up and log in (adds email, password, verified).",
  view: "A read-only SQL query over other entities.",
};

interface CardProps {
  form: FormState;
  /** The saved schema when editing. */
  saved?: EntitySchema;
  errors: FormErrors;
  set: (p: Partial<FormState>) => void;
}

/** Name, type, API switch. */
export function EntityBasics(props: CardProps): JSX.Element {
  const { form, errors, set } = props;
  const editing = props.saved !== undefined;
  const base = props.saved;
  return (
    <section class="card stack" aria-labelledby="entity-h">
      <h2 id="entity-h">Entity</h2>
      <div class="form-grid">
        <Field
          label="Entity name"
          error={errors.name}
          hint="1–64 of a-z, A-Z, 0-9, _ (the API path and table name)"
        >
          <input
            type="text"
            value={form.name}
            autocomplete="off"
            spellcheck={false}
            required
            onInput={(e) => set({ name: e.currentTarget.value })}
          />
        </Field>
        <Field
          label="Entity type"
          hint={editing
            ? `${TYPE_HINT[form.type]} The type cannot change.`
            : TYPE_HINT[form.type]}
        >
          <select
            value={form.type}
            disabled={editing}
            onChange={(e) => set({ type: e.currentTarget.value as EntityType })}
          >
            <option value="base">base</option>
            <option value="auth">auth</option>
            <option value="view">view</option>
          </select>
        </Field>
        <label class="check api-check">
          <input
            type="checkbox"
            checked={form.has_api}
            onChange={(e) => set({ has_api: e.currentTarget.checked })}
          />
          <span>
            REST API on
            <small class="hint block">
              Off: the record routes answer 404.
            </small>
          </span>
        </label>
      </div>
      {editing
        ? (
          <p class="muted">
            Access rules are edited in the{" "}
            <a href={entityHref(base!.name, "rules")}>Rules tab</a>.
          </p>
        )
        : (
          <p class="notice">
            Access rules: admins only until you change them in the Rules tab.
          </p>
        )}
    </section>
  );
}

/** A view's SQL editor and (saved) columns. */
export function ViewQuery(props: CardProps): JSX.Element {
  const { form, errors, set } = props;
  const base = props.saved;
  return (
    <section class="card stack" aria-labelledby="sql-h">
      <h2 id="sql-h">Query</h2>
      <Field
        label="View SQL"
        error={errors.view_query}
        hint="One SELECT (or WITH … SELECT) returning an id column; name every column with a-z, 0-9, _ (use AS). It may read base entities and other views. Checked by the server when you save."
      >
        <textarea
          class="sql-editor"
          rows={8}
          spellcheck={false}
          value={form.view_query}
          onInput={(e) => set({ view_query: e.currentTarget.value })}
        />
      </Field>
      {base && base.fields.length > 0 && (
        <>
          <h3>Columns</h3>
          <ViewColumns fields={base.fields} />
        </>
      )}
    </section>
  );
}
