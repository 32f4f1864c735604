/// <reference lib="dom" />
/**
 * Which columns the records table shows, chosen in a disclosure of
 * checkboxes and kept in localStorage per entity.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import type { EntitySchema, FieldDef } from "../schemas.ts";

const key = (entity: string) => `mb.columns.${entity}`;

/** Fields that can be columns (the id always is one; never the password). */
export function columnFields(schema: EntitySchema): FieldDef[] {
  return schema.fields.filter((f) => f.name !== "password" && f.name !== "id");
}

function load(schema: EntitySchema): string[] {
  const all = columnFields(schema).map((f) => f.name);
  try {
    const saved = JSON.parse(localStorage.getItem(key(schema.name)) ?? "null");
    if (Array.isArray(saved)) {
      const kept = all.filter((n) => saved.includes(n));
      if (kept.length > 0) return kept;
    }
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

/** The "Columns" disclosure. */
export function ColumnPicker(props: {
  schema: EntitySchema;
  visible: string[];
  onChange: (names: string[]) => void;
}): JSX.Element {
  const all = columnFields(props.schema);
  const toggle = (name: string, on: boolean) => {
    const next = all.map((f) => f.name).filter((n) =>
      n === name ? on : props.visible.includes(n)
    );
    if (next.length > 0) props.onChange(next);
  };
  return (
    <details class="column-picker">
      <summary class="btn">Columns</summary>
      <fieldset class="column-list">
        <legend class="sr-only">Visible columns</legend>
        {all.map((f) => (
          <label key={f.name} class="field inline">
            <input
              type="checkbox"
              checked={props.visible.includes(f.name)}
              disabled={props.visible.length === 1 &&
                props.visible.includes(f.name)}
              onChange={(e) => toggle(f.name, e.currentTarget.checked)}
            />
            <span>{f.name}</span>
          </label>
        ))}
      </fieldset>
    </details>
  );
}
