/// <reference lib="dom" />
/**
 * The records table: a link per row in the first cell (the record's id),
 * sortable headers (asc → desc → off, `aria-sort`), a checkbox per row
 * and "select all" for bulk actions, cells rendered by type. Clicking a
 * row opens the record too. Live changes mark rows for a while: new and
 * changed ones are highlighted, deleted ones fade out (unselectable).
 *
 * @module
 */

import { useRelationLabels } from "./relation_labels.ts";
import type { JSX } from "preact";
import type { RecordData } from "../api.ts";
import type { Mark } from "./live/live_apply.ts";
import { navigate } from "../router.ts";
import { sortable } from "./records_query.ts";
import type { EntitySchema, FieldDef } from "../schemas.ts";
import { Cell } from "./cell.tsx";

/** The editor page of a record. */
export function recordHref(entity: string, id: string): string {
  return `/mb/entities/${encodeURIComponent(entity)}/records/${
    encodeURIComponent(id)
  }`;
}

/** A row's id as its link shows it: the last 8 characters of a long one. */
function shownId(id: string): string {
  return id.length > 12 ? "…" + id.slice(-8) : id;
}

/**
 * The accessible name of a row's id link: the text it shows first, so a
 * speech user can say what they see (WCAG 2.5.3, label in name), then
 * "Open <the full id>".
 */
export function idLinkName(id: string): string {
  const shown = shownId(id);
  return shown === id ? `Open ${id}` : `${shown}: Open ${id}`;
}

function SortHeader(props: {
  field: FieldDef;
  sort: string;
  onSort: (name: string) => void;
}): JSX.Element {
  const name = props.field.name;
  const dir = props.sort === name
    ? "ascending"
    : props.sort === "-" + name
    ? "descending"
    : undefined;
  if (!sortable(props.field)) return <th scope="col">{name}</th>;
  return (
    <th scope="col" aria-sort={dir}>
      <button
        type="button"
        class="sort-btn"
        onClick={() => props.onSort(name)}
        title={`Sort by ${name}`}
      >
        {name}
        <span aria-hidden="true" class="sort-mark">
          {dir === "ascending" ? " ▲" : dir === "descending" ? " ▼" : " ↕"}
        </span>
      </button>
    </th>
  );
}

const INTERACTIVE = "a, button, input, label, summary, select, textarea";

/** The table of one page of records. */
export function RecordTable(props: {
  schema: EntitySchema;
  columns: string[];
  items: RecordData[];
  sort: string;
  onSort: (name: string) => void;
  selected: Set<string>;
  onSelect: (ids: string[], on: boolean) => void;
  token: string;
  /** Rows shown differently after a live change. */
  marks?: ReadonlyMap<string, Mark>;
}): JSX.Element {
  const s = props.schema;
  const selectable = s.type !== "view";
  // The record's own fields first, created/updated last.
  const shown = s.fields.filter((f) =>
    f.name !== "id" && props.columns.includes(f.name)
  );
  const late = (f: FieldDef) =>
    f.system && (f.name === "created" || f.name === "updated");
  const fields = [...shown.filter((f) => !late(f)), ...shown.filter(late)];
  const idField = s.fields.find((f) => f.name === "id");
  const ids = props.items.map((r) => r.id);
  const labels = useRelationLabels(s, props.items, props.columns);
  const all = ids.length > 0 && ids.every((id) => props.selected.has(id));
  return (
    <div
      class="table-wrap records-table"
      tabIndex={0}
      aria-label={`${s.name} records`}
      role="region"
    >
      <table class="data">
        <thead>
          <tr>
            {selectable && (
              <th scope="col" class="check-col">
                <input
                  type="checkbox"
                  aria-label="Select all on this page"
                  checked={all}
                  disabled={ids.length === 0}
                  onChange={(e) => props.onSelect(ids, e.currentTarget.checked)}
                />
              </th>
            )}
            {idField
              ? (
                <SortHeader
                  field={idField}
                  sort={props.sort}
                  onSort={props.onSort}
                />
              )
              : <th scope="col">id</th>}
            {fields.map((f) => (
              <SortHeader
                key={f.name}
                field={f}
                sort={props.sort}
                onSort={props.onSort}
              />
            ))}
          </tr>
        </thead>
        <tbody>
          {props.items.map((r) => {
            const mark = props.marks?.get(r.id);
            const gone = mark === "gone";
            return (
              <tr
                key={r.id}
                class={`clickable ${
                  props.selected.has(r.id) ? "selected" : ""
                }${mark ? ` live-${mark}` : ""}`}
                onClick={(e) => {
                  if ((e.target as Element).closest(INTERACTIVE)) return;
                  navigate(recordHref(s.name, r.id));
                }}
              >
                {selectable && (
                  <td class="check-col">
                    <input
                      type="checkbox"
                      aria-label={`Select ${r.id}`}
                      checked={props.selected.has(r.id)}
                      disabled={gone}
                      onChange={(e) =>
                        props.onSelect([r.id], e.currentTarget.checked)}
                    />
                  </td>
                )}
                <td>
                  <a
                    class="mono"
                    href={recordHref(s.name, r.id)}
                    title={r.id}
                    aria-label={idLinkName(r.id)}
                  >
                    {shownId(r.id)}
                  </a>
                  {gone && <span class="sr-only">(deleted)</span>}
                </td>
                {fields.map((f) => (
                  <td key={f.name}>
                    <Cell
                      field={f}
                      value={r[f.name]}
                      entity={s.name}
                      token={props.token}
                      label={f.type === "relation"
                        ? labels.get(f.name)?.get(String(r[f.name]))
                        : undefined}
                    />
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
