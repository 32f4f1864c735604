/// <reference lib="dom" />
/**
 * Which columns the records table shows, chosen in a disclosure and kept
 * in localStorage per entity: the entity's own fields, related fields
 * reached through relations (`author.name`, `author.team.name`: a nested
 * disclosure per relation, up to 6 deep) and back-relation counts
 * ("comments (count)"). See related_columns.ts for what they ask the API.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { type EntitySchema, type FieldDef, schemas } from "../schemas.ts";
import {
  backRelations,
  canExpand,
  countKey,
  countLabel,
  extraColumn,
  followable,
  MAX_DEPTH,
  shownFields,
} from "./related_columns.ts";

const key = (entity: string) => `mb.columns.${entity}`;

/** Fields that can be columns (the id always is one; never the password). */
export function columnFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) => f.name !== "password" && f.name !== "id");
}

/**
 * The saved choice, cleaned: own fields in the schema's order, then the
 * related and count columns still valid, in the order they were added.
 */
export function keptColumns(
  all: readonly EntitySchema[],
  schema: EntitySchema,
  saved: unknown,
): string[] | null {
  if (!Array.isArray(saved)) return null;
  const own = columnFields(schema).map((f) => f.name)
    .filter((n) => saved.includes(n));
  const extra = saved.filter((k): k is string =>
    typeof k === "string" && !own.includes(k) &&
    extraColumn(all, schema, k) !== null
  );
  const kept = [...own, ...new Set(extra)];
  return kept.length > 0 ? kept : null;
}

function load(schema: EntitySchema): string[] {
  const all = columnFields(schema).map((f) => f.name);
  try {
    const saved = JSON.parse(localStorage.getItem(key(schema.name)) ?? "null");
    const kept = keptColumns(schemas.value ?? [], schema, saved);
    if (kept) return kept;
  } catch {
    // a broken entry: fall back to every column
  }
  return all;
}

/** The visible columns of an entity and a setter that persists them. */
export function useColumns(
  schema: EntitySchema,
): [string[], (names: string[]) => void] {
  const [cols, setCols] = useState(() => load(schema));
  const set = (names: string[]) => {
    setCols(names);
    try {
      localStorage.setItem(key(schema.name), JSON.stringify(names));
    } catch {
      // storage full or disabled: the choice lasts for this page only
    }
  };
  return [cols, set];
}

function Check(props: {
  name: string;
  label?: string;
  title?: string;
  visible: string[];
  onToggle: (name: string, on: boolean) => void;
}): JSX.Element {
  const on = props.visible.includes(props.name);
  return (
    <label class="field inline" title={props.title}>
      <input
        type="checkbox"
        checked={on}
        disabled={on && props.visible.length === 1}
        onChange={(e) => props.onToggle(props.name, e.currentTarget.checked)}
      />
      <span>{props.label ?? props.name}</span>
    </label>
  );
}

/** The fields reachable through one relation, opened on demand. */
function RelatedGroup(props: {
  all: readonly EntitySchema[];
  /** The relation path so far (`["author"]`, `["author", "team"]`). */
  path: string[];
  relation: FieldDef;
  visible: string[];
  onToggle: (name: string, on: boolean) => void;
}): JSX.Element {
  const target = props.all.find((s) =>
    s.name === props.relation.foreign_key?.entity
  )!;
  const prefix = props.path.join(".");
  const chosen = props.visible.some((k) => k.startsWith(prefix + "."));
  const [open, setOpen] = useState(chosen);
  return (
    <details
      class="related-group"
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>
        {prefix}{" "}
        <span class="muted">
          → {target.name}
          {props.relation.multiple ? " (list)" : ""}
        </span>
      </summary>
      {open && (
        <div class="related-fields">
          {shownFields(target).map((f) => (
            <Check
              key={f.name}
              name={`${prefix}.${f.name}`}
              visible={props.visible}
              onToggle={props.onToggle}
            />
          ))}
          {props.path.length < MAX_DEPTH &&
            followable(props.all, target).map((r) => (
              <RelatedGroup
                key={r.name}
                all={props.all}
                path={[...props.path, r.name]}
                relation={r}
                visible={props.visible}
                onToggle={props.onToggle}
              />
            ))}
        </div>
      )}
    </details>
  );
}

/** The "Columns" disclosure. */
export function ColumnPicker(props: {
  schema: EntitySchema;
  visible: string[];
  onChange: (names: string[]) => void;
}): JSX.Element {
  const all = schemas.value ?? [];
  const own = columnFields(props.schema);
  const expandable = canExpand(props.schema);
  const related = expandable ? followable(all, props.schema) : [];
  const backs = expandable ? backRelations(all, props.schema.name) : [];
  const toggle = (name: string, on: boolean) => {
    const ownNames = own.map((f) => f.name);
    const extras = props.visible.filter((n) => !ownNames.includes(n));
    const next = ownNames.filter((n) =>
      n === name ? on : props.visible.includes(n)
    );
    if (ownNames.includes(name)) next.push(...extras);
    else next.push(...extras.filter((n) => n !== name), ...(on ? [name] : []));
    if (next.length > 0) props.onChange(next);
  };
  return (
    <details class="column-picker">
      <summary class="btn">Columns</summary>
      <div class="column-list">
        <fieldset class="column-set">
          <legend class="sr-only">Visible columns</legend>
          {own.map((f) => (
            <Check
              key={f.name}
              name={f.name}
              visible={props.visible}
              onToggle={toggle}
            />
          ))}
        </fieldset>
        {related.length > 0 && (
          <fieldset class="column-set">
            <legend>Related fields</legend>
            {related.map((r) => (
              <RelatedGroup
                key={r.name}
                all={all}
                path={[r.name]}
                relation={r}
                visible={props.visible}
                onToggle={toggle}
              />
            ))}
          </fieldset>
        )}
        {backs.length > 0 && (
          <fieldset class="column-set">
            <legend>Counts</legend>
            {backs.map((b) => (
              <Check
                key={b.name}
                name={countKey(b)}
                label={countLabel(b, backs)}
                title={`${b.entity} records whose ${b.field} ${
                  b.multiple ? "holds" : "is"
                } this record (${b.name})`}
                visible={props.visible}
                onToggle={toggle}
              />
            ))}
          </fieldset>
        )}
      </div>
    </details>
  );
}
