/// <reference lib="dom" />
/**
 * The options of one field that apply to its type (docs/guide/entities.md "Fields"):
 * min/max (length, value or file count), pattern, select values, relation
 * target, on_delete and "several records" (`multiple`, with its `max`),
 * MIME types, and a default typed for the field.
 *
 * @module
 */

import type { JSX } from "preact";
import type { OnDelete } from "../../../lib/schema/types.ts";
import { type FieldState, optionsOf } from "./schema_form.ts";
import { ChipList } from "./chip_list.tsx";
import { Field } from "../ui/field.tsx";

const MIME_SUGGESTIONS = [
  "image/*",
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/gif",
  "application/pdf",
  "text/plain",
  "text/csv",
  "application/zip",
  "audio/*",
  "video/*",
];

const RANGE_LABEL = {
  length: ["Min length", "Max length", "characters"],
  value: ["Min value", "Max value", ""],
  count: ["Min files", "Max files", "files"],
} as const;

/** ISO → the value of a `datetime-local` input (local time, seconds). */
function isoToLocal(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString()
    .slice(0, 19);
}

function localToIso(v: string): string {
  const d = new Date(v);
  return v && !Number.isNaN(d.getTime()) ? d.toISOString() : "";
}

/** The default's input, typed for the field. */
function DefaultInput(props: {
  f: FieldState;
  set: (p: Partial<FieldState>) => void;
  error?: string;
}): JSX.Element {
  const { f, set } = props;
  const onText = (e: { currentTarget: { value: string } }) =>
    set({ default: e.currentTarget.value });
  let control: JSX.Element;
  let hint = "Existing records get it when the field is added.";
  switch (f.type) {
    case "bool":
    case "select":
      control = (
        <select value={f.default} onChange={onText}>
          <option value="">No default</option>
          {(f.type === "bool" ? ["true", "false"] : f.values).map((v) => (
            <option key={v} value={v}>{v}</option>
          ))}
        </select>
      );
      break;
    case "int":
    case "double":
      control = (
        <input
          type="number"
          step={f.type === "int" ? "1" : "any"}
          value={f.default}
          onInput={onText}
        />
      );
      break;
    case "date":
      control = (
        <input
          type="datetime-local"
          step="1"
          value={isoToLocal(f.default)}
          onInput={(e) => set({ default: localToIso(e.currentTarget.value) })}
        />
      );
      hint = f.default
        ? `Your local time; stored as ${f.default}.`
        : "Your local time; stored in UTC.";
      break;
    case "json":
      control = (
        <textarea
          class="json-default"
          rows={2}
          value={f.default}
          spellcheck={false}
          onInput={onText}
        />
      );
      hint = 'Any JSON value, e.g. {"tags": []}. Empty = no default.';
      break;
    case "email":
      control = <input type="email" value={f.default} onInput={onText} />;
      break;
    case "url":
      control = <input type="url" value={f.default} onInput={onText} />;
      break;
    default:
      control = <input type="text" value={f.default} onInput={onText} />;
  }
  return (
    <Field label="Default" error={props.error} hint={hint}>
      {control}
    </Field>
  );
}

/** The per-type options of a field. */
export function FieldOptions(props: {
  f: FieldState;
  set: (p: Partial<FieldState>) => void;
  errors: Record<string, string>;
  /** Entities a relation may point at. */
  targets: string[];
  /** The field is saved: its relation target cannot change. */
  saved: boolean;
}): JSX.Element {
  const { f, set, errors } = props;
  const o = optionsOf(f.type);
  const range = o.range ? RANGE_LABEL[o.range] : null;
  return (
    <div class="form-grid field-options">
      {range && (
        <>
          <Field label={range[0]} error={errors.min}>
            <input
              type="number"
              step={o.range === "value" && f.type === "double" ? "any" : "1"}
              min={o.range === "value" ? undefined : "0"}
              value={f.min}
              onInput={(e) => set({ min: e.currentTarget.value })}
            />
          </Field>
          <Field label={range[1]} error={errors.max}>
            <input
              type="number"
              step={o.range === "value" && f.type === "double" ? "any" : "1"}
              min={o.range === "value" ? undefined : "0"}
              value={f.max}
              onInput={(e) => set({ max: e.currentTarget.value })}
            />
          </Field>
        </>
      )}
      {o.pattern && (
        <Field
          label="Pattern"
          error={errors.pattern}
          hint="A regular expression the whole value must match, e.g. ^[a-z]+$"
        >
          <input
            type="text"
            class="mono"
            value={f.pattern}
            spellcheck={false}
            onInput={(e) => set({ pattern: e.currentTarget.value })}
          />
        </Field>
      )}
      {o.relation && (
        <>
          <Field
            label="Target entity"
            error={errors.entity}
            hint={props.saved
              ? "The target of a saved relation cannot change: add a new field instead."
              : undefined}
          >
            <select
              value={f.entity}
              disabled={props.saved}
              onChange={(e) => set({ entity: e.currentTarget.value })}
            >
              <option value="">Choose an entity…</option>
              {props.targets.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
          </Field>
          <Field
            label="When the target is deleted"
            error={errors.on_delete}
            class="span-2"
          >
            <select
              value={f.on_delete}
              onChange={(e) =>
                set({ on_delete: e.currentTarget.value as OnDelete })}
            >
              <option value="set null">Set this field to null</option>
              <option value="cascade">Delete this record too (cascade)</option>
              <option value="restrict">Refuse the delete (restrict)</option>
            </select>
          </Field>
          <div class="field span-2">
            <label class="check">
              <input
                type="checkbox"
                checked={f.multiple}
                disabled={props.saved}
                aria-describedby={`${f.key}-multiple-hint`}
                onChange={(e) =>
                  set({
                    multiple: e.currentTarget.checked,
                    unique: false,
                  })}
              />
              <span>Several records (a list of ids)</span>
            </label>
            <small id={`${f.key}-multiple-hint`} class="hint">
              {props.saved
                ? "Fixed once saved: add a new field to change it."
                : "Holds a list of record ids in order, e.g. a post's tags."}
            </small>
            {errors.multiple && (
              <small class="error-text" role="alert">{errors.multiple}</small>
            )}
          </div>
          {f.multiple && (
            <Field
              label="At most (records)"
              error={errors.max}
              hint="1 to 1000; empty = 1000"
            >
              <input
                type="number"
                min="1"
                max="1000"
                step="1"
                value={f.max}
                onInput={(e) => set({ max: e.currentTarget.value })}
              />
            </Field>
          )}
        </>
      )}
      {o.values && (
        <ChipList
          id={`${f.key}-values`}
          label="Values"
          item="value"
          items={f.values}
          error={errors.values}
          hint="The choices a record may take (at least one)."
          onChange={(values) =>
            set({
              values,
              default: values.includes(f.default) ? f.default : "",
            })}
        />
      )}
      {o.mime && (
        <ChipList
          id={`${f.key}-mime`}
          label="Allowed MIME types"
          item="MIME type"
          items={f.mime_types}
          error={errors.mime_types}
          suggest={MIME_SUGGESTIONS}
          hint="Checked on the file's content. None = any type; image/* = any image except SVG."
          onChange={(mime_types) => set({ mime_types })}
        />
      )}
      {o.mime && (
        <ChipList
          id={`${f.key}-thumbs`}
          label="Thumbnail sizes"
          item="size"
          items={f.thumbs}
          error={errors.thumbs}
          suggest={["100x100", "300x300f", "640x0"]}
          hint="Sizes anyone who may read the file gets with ?thumb= (WxH, t/b crop from the top/bottom, f fits, 0 keeps the ratio). Other sizes: admins only."
          onChange={(thumbs) => set({ thumbs })}
        />
      )}
      {o.default && <DefaultInput f={f} set={set} error={errors.default} />}
    </div>
  );
}
