/// <reference lib="dom" />
/**
 * The records table: a link per row in the first cell (the record's id),
 * sortable headers (asc → desc → off, `aria-sort`), a checkbox per row
 * and "select all" for bulk actions, cells rendered by type. Clicking a
 * row opens the record too. Live changes mark rows for a while: new and
 * changed ones are highlighted, deleted ones fade out (unselectable).
 * Relation cells show their targets' labels from the page's `expand`;
 * related columns (`author.name`) their values as text, count columns
 * their counts (see related_columns.ts).
 *
 * @module
 */

import type { JSX } from "preact";
import type { RecordData } from "../mb.ts";
import type { Mark } from "./live/live_apply.ts";
import { navigate } from "../router.ts";
import { displayField, sortable } from "./records_query.ts";
import { type EntitySchema, type FieldDef, schemaOf } from "../schemas.ts";
import type { BackCounts } from "./back_counts.ts";
import { Cell, Empty } from "./cell.tsx";
import {
  backRelations,
  countLabel,
  expandLabels,
  type ExtraColumn,
  extraColumn,
  relatedValues,
  valueText,
} from "./related_columns.ts";

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

function ExtraHeader(props: {
  column: ExtraColumn;
  schema: EntitySchema;
  all: readonly EntitySchema[];
}): JSX.Element {
  const c = props.column;
  if (c.kind === "related") {
    return (
      <th scope="col" title={`${c.field.name} of ${c.entity}`}>{c.key}</th>
    );
  }
  return (
    <th scope="col" class="num" title={c.back.name}>
      {countLabel(c.back, backRelations(props.all, props.schema.name))}
    </th>
  );
}

/** A related column's values, as text (several through a list). */
function RelatedCell(props: { values: unknown[] }): JSX.Element {
  if (props.values.length === 0) return <Empty />;
  const text = props.values.map(valueText).join(", ");
  return (
    <span class="trunc" title={text}>
      {text.length > 80 ? text.slice(0, 80) + "…" : text}
    </span>
  );
}

function CountCell(
  props: { counts: BackCounts | undefined; column: string; id: string },
): JSX.Element {
  const c = props.counts?.get(props.column);
  if (!c) return <span class="muted">…</span>;
  if (!(c instanceof Map)) {
    return (
      <span class="muted" title={c.error}>
        ?<span class="sr-only">not counted: {c.error}</span>
      </span>
    );
  }
  return <>{c.get(props.id) ?? 0}</>;
}

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
  /** The count columns' counts. */
  counts?: BackCounts;
  /** Every schema (related columns and labels read their targets'). */
  all: readonly EntitySchema[];
}): JSX.Element {
  const s = props.schema;
  const selectable = s.type !== "view";
  // The record's own fields first, then related and count columns,
  // created/updated last.
  const shown = s.fields.filter((f) =>
    f.name !== "id" && props.columns.includes(f.name)
  );
  const late = (f: FieldDef) =>
    f.system && (f.name === "created" || f.name === "updated");
  const extras = props.columns.flatMap((k) => {
    if (shown.some((f) => f.name === k)) return [];
    const c = extraColumn(props.all, s, k);
    return c ? [c] : [];
  });
  const own = shown.filter((f) => !late(f));
  const lateFields = shown.filter(late);
  const idField = s.fields.find((f) => f.name === "id");
  const ids = props.items.map((r) => r.id);
  const displays = new Map(
    shown.filter((f) => f.type === "relation").map((f) => [
      f.name,
      displayField(schemaOf(f.foreign_key?.entity ?? "")),
    ]),
  );
  const all = ids.length > 0 && ids.every((id) => props.selected.has(id));
  const cell = (f: FieldDef, r: RecordData) => (
    <td key={f.name}>
      <Cell
        field={f}
        value={r[f.name]}
        entity={s.name}
        token={props.token}
        labels={displays.has(f.name)
          ? expandLabels(r, f.name, displays.get(f.name)!)
          : undefined}
      />
    </td>
  );
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
            {own.map((f) => (
              <SortHeader
                key={f.name}
                field={f}
                sort={props.sort}
                onSort={props.onSort}
              />
            ))}
            {extras.map((c) => (
              <ExtraHeader key={c.key} column={c} schema={s} all={props.all} />
            ))}
            {lateFields.map((f) => (
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
                {own.map((f) => cell(f, r))}
                {extras.map((c) => (
                  <td key={c.key} class={c.kind === "count" ? "num" : ""}>
                    {c.kind === "related"
                      ? <RelatedCell values={relatedValues(r, c)} />
                      : (
                        <CountCell
                          counts={props.counts}
                          column={c.key}
                          id={r.id}
                        />
                      )}
                  </td>
                ))}
                {lateFields.map((f) => cell(f, r))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
