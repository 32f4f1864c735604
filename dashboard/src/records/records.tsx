/// <reference lib="dom" />
/**
 * `/mb/entities/:name`: an entity's records in a keyset-paged table with
 * sort, filter, quick search, column picker (related fields through
 * `expand` in the list request, back-relation counts by one aggregate
 * request per page), bulk delete and a group-by
 * summary (group_summary.tsx). Filter,
 * search, sort and page size live in the URL. The table follows the
 * entity's changes live (live_records.ts) under a "Live" indicator.
 *
 * @module
 */

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { mb } from "../mb.ts";
import { cascadeLines } from "./cascade.ts";
import { useFileToken } from "../files/file_token.ts";
import {
  defaultSort,
  filterExample,
  hasSearchable,
  nextSort,
  readState,
  shownSort,
  stateToQuery,
  type TableState,
  textFields,
} from "./records_query.ts";
import { entityHref, query, setQuery } from "../router.ts";
import { reloadCounts, schemaOf, schemas } from "../schemas.ts";
import { useLiveRecords } from "./live/live_records.ts";
import { useRecordPages } from "./use_record_pages.ts";
import { ColumnPicker, useColumns } from "./column_picker.tsx";
import { expandParam } from "./related_columns.ts";
import { useBackCounts } from "./back_counts.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { FilterBar } from "./filter_bar.tsx";
import { GroupSummary } from "./group_summary.tsx";
import { LiveBadge, LiveNotice } from "./live/live_status.tsx";
import { Pager } from "./pager.tsx";
import { RecordTable } from "./record_table.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "../ui/not_found.tsx";
import type { EntitySchema } from "../schemas.ts";

/** Records of an entity. */
export function RecordsPage(props: { entity: string }): JSX.Element {
  const schema = schemaOf(props.entity);
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  if (schema.is_system) {
    return (
      <section class="card">
        <h1>{schema.name}</h1>
        <p>
          This system entity has no records API: manage admins on the{" "}
          <a href="/mb/admins">Admins</a> page.
        </p>
      </section>
    );
  }
  return <RecordsOf key={schema.name} schema={schema} />;
}

function RecordsOf(props: { schema: EntitySchema }): JSX.Element {
  const schema = props.schema;
  const state = readState(query.value);
  const [columns, setColumns] = useColumns(schema);
  const all = schemas.value ?? [];
  const expand = expandParam(all, schema, columns);
  const pages = useRecordPages(schema, state, expand);
  const counts = useBackCounts(all, schema, pages.page, columns);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const file = useFileToken(schema, pages.page);
  const readOnly = schema.type === "view";
  const update = (changes: Partial<TableState>) => {
    setSelected(new Set());
    setQuery(stateToQuery({ ...state, ...changes }));
  };
  const select = (ids: string[], on: boolean) => {
    const next = new Set(selected);
    for (const id of ids) on ? next.add(id) : next.delete(id);
    setSelected(next);
  };
  // Rows deleted elsewhere leave the selection.
  const live = useLiveRecords(
    schema,
    state,
    pages,
    (ids) =>
      setSelected((sel) => {
        if (!ids.some((id) => sel.has(id))) return sel;
        const next = new Set(sel);
        for (const id of ids) next.delete(id);
        return next;
      }),
    expand,
  );
  const bulkDelete = async () => {
    const ids = [...selected];
    const n = ids.length;
    const also = await cascadeLines(schemas.value ?? [], schema.name, ids);
    if (
      !await confirmAction(
        `Delete ${n} record${
          n === 1 ? "" : "s"
        } of ${schema.name}? This cannot be undone.`,
        "Delete",
        also,
      )
    ) return;
    setBusy(true);
    let done = 0;
    const failed: string[] = [];
    for (const id of ids) {
      try {
        await mb.entity(schema.name).delete(id);
        done++;
      } catch (e) {
        failed.push((e as Error).message);
      }
    }
    setBusy(false);
    setSelected(new Set());
    if (done > 0) toast(`Deleted ${done} record${done === 1 ? "" : "s"}`);
    if (failed.length > 0) {
      toast(`${failed.length} not deleted: ${failed[0]}`, "error");
    }
    pages.reload();
    void reloadCounts();
  };
  const items = pages.page?.items ?? [];
  const selCount = [...selected].length;
  return (
    <section>
      <EntityHeader
        schema={schema}
        tab="records"
        actions={!readOnly && (
          <a
            class="btn btn-primary"
            href={`${entityHref(schema.name)}/records/new`}
          >
            New record
          </a>
        )}
      />
      <FilterBar
        filter={state.filter}
        q={state.q}
        error={pages.filterError}
        hasText={textFields(schema).length > 0}
        searchable={hasSearchable(schema)}
        example={filterExample(schema)}
        onRun={(filter, q) => update({ filter, q })}
      />
      <div class="row wrap table-tools">
        <ColumnPicker
          schema={schema}
          visible={columns}
          onChange={setColumns}
        />
        {!readOnly && (
          <button
            type="button"
            class="btn btn-danger"
            disabled={selCount === 0 || busy}
            onClick={bulkDelete}
          >
            {busy ? "Deleting…" : `Delete selected (${selCount})`}
          </button>
        )}
        {readOnly && <span class="badge">read-only view</span>}
        <span class="spacer" />
        {pages.loading && <span class="muted" role="status">Loading…</span>}
        {live.enabled && (
          <>
            <LiveNotice waiting={live.waiting} onShow={live.show} />
            <LiveBadge state={live.state} why={live.why} />
          </>
        )}
      </div>
      <ErrorBox error={pages.error} />
      <GroupSummary schema={schema} state={state} version={pages.page} />
      {pages.page && file.ready && (
        <RecordTable
          schema={schema}
          columns={columns}
          items={items}
          sort={shownSort(schema, state)}
          onSort={(name) =>
            update({
              sort: nextSort(state.sort, name, defaultSort(schema)),
            })}
          selected={selected}
          onSelect={select}
          token={file.token}
          marks={live.marks}
          counts={counts}
          all={all}
        />
      )}
      {pages.page && items.length === 0 && (
        <p class="card empty muted">
          {state.filter || state.q
            ? "No records match."
            : pages.number > 1
            ? "No more records."
            : "No records yet."}
        </p>
      )}
      {(pages.page || !(pages.error || pages.filterError)) && (
        <Pager
          size={state.size}
          onSize={(size) => update({ size })}
          page={pages.number}
          shown={items.length}
          hasPrev={pages.number > 1}
          hasNext={!!pages.page?.has_more}
          onPrev={() => {
            setSelected(new Set());
            pages.prev();
          }}
          onNext={() => {
            setSelected(new Set());
            pages.next();
          }}
          total={pages.total}
          counting={pages.counting}
          onCount={pages.count}
        />
      )}
    </section>
  );
}
