/// <reference lib="dom" />
/**
 * `/mb/entities/:name/files`: the files in the file fields of an entity's
 * records, paged over the records (keyset), with thumbnail, name, size and
 * type (from HEAD), the owning record, a download link, and delete (a
 * PATCH that takes the file off its record).
 *
 * @module
 */

import type { JSX } from "preact";
import { api, seg } from "../api.ts";
import { sizeText, useFileMeta } from "../file_meta.ts";
import {
  extOf,
  fileUrl,
  isImageName,
  originalName,
  useFileToken,
} from "../file_token.ts";
import { readState, stateToQuery } from "../records_query.ts";
import { entityHref, query, setQuery } from "../router.ts";
import {
  type EntitySchema,
  type FieldDef,
  schemaOf,
  schemas,
} from "../schemas.ts";
import { useRecordPages } from "../use_record_pages.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { Pager } from "../ui/pager.tsx";
import { recordHref } from "../ui/record_table.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "./not_found.tsx";

/** Files of an entity. */
export function FilesPage(props: { entity: string }): JSX.Element {
  const schema = schemaOf(props.entity);
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema || schema.is_system) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  return <FilesOf key={schema.name} schema={schema} />;
}

interface Row {
  name: string;
  field: FieldDef;
  record: string;
}

function FilesOf(props: { schema: EntitySchema }): JSX.Element {
  const schema = props.schema;
  const fileFields = schema.fields.filter((f) =>
    f.type === "file" || f.type === "files"
  );
  const state = { ...readState(query.value), filter: "", q: "", sort: "" };
  const pages = useRecordPages(schema, state);
  const file = useFileToken(schema, pages.page);
  const items = pages.page?.items ?? [];
  const rows: Row[] = [];
  for (const r of items) {
    for (const f of fileFields) {
      const v = r[f.name];
      const names = Array.isArray(v) ? v.map(String) : v ? [String(v)] : [];
      for (const name of names) rows.push({ name, field: f, record: r.id });
    }
  }
  const meta = useFileMeta(schema.name, rows.map((r) => r.name));
  const remove = async (row: Row) => {
    const shown = originalName(row.name);
    if (
      !await confirmAction(
        `Delete ${shown} from record ${row.record}? The file is removed for good.`,
      )
    ) return;
    const rec = items.find((r) => r.id === row.record);
    const cur = rec?.[row.field.name];
    const body = row.field.type === "file" ? { [row.field.name]: null } : {
      [row.field.name]: (Array.isArray(cur) ? cur : []).filter((n) =>
        n !== row.name
      ),
    };
    try {
      await api.patch(
        `/entities/${seg(schema.name)}/${seg(row.record)}`,
        body,
      );
      toast(`Deleted ${shown}`);
      pages.reload();
    } catch (e) {
      toast(`Cannot delete ${shown}: ${(e as Error).message}`, "error");
    }
  };
  const readOnly = schema.type === "view";
  if (fileFields.length === 0) {
    return (
      <section>
        <EntityHeader schema={schema} tab="files" />
        <p class="card muted">
          This entity has no file fields: add a <code>file</code> or{" "}
          <code>files</code> field in its{" "}
          <a href={entityHref(schema.name, "schema")}>schema</a>.
        </p>
      </section>
    );
  }
  return (
    <section>
      <EntityHeader schema={schema} tab="files" />
      <ErrorBox error={pages.error} />
      {pages.loading && <p class="muted" role="status">Loading…</p>}
      {pages.page && (
        <div
          class="table-wrap files-wrap"
          tabIndex={0}
          role="region"
          aria-label={`${schema.name} files`}
        >
          <table class="data files-table">
            <thead>
              <tr>
                <th scope="col">Preview</th>
                <th scope="col">File</th>
                <th scope="col">Field</th>
                <th scope="col">Size</th>
                <th scope="col">Type</th>
                <th scope="col">Record</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => {
                const url = fileUrl(schema.name, row.name, file.token);
                const m = meta[row.name];
                return (
                  <tr key={row.record + row.name}>
                    <td>
                      {isImageName(row.name) && file.ready
                        ? (
                          <img
                            class="thumb"
                            src={url}
                            alt={originalName(row.name)}
                            loading="lazy"
                          />
                        )
                        : (
                          <span class="file-icon" aria-hidden="true">
                            {extOf(row.name)}
                          </span>
                        )}
                    </td>
                    <td title={row.name}>{originalName(row.name)}</td>
                    <td>{row.field.name}</td>
                    <td>{m ? sizeText(m.size) : "…"}</td>
                    <td class="mono">{m ? m.type : "…"}</td>
                    <td>
                      <a
                        href={recordHref(schema.name, row.record)}
                        title={row.record}
                        class="mono"
                      >
                        …{row.record.slice(-8)}
                      </a>
                    </td>
                    <td>
                      <div class="row file-row-actions">
                        <a
                          class="btn btn-small"
                          href={url}
                          download={originalName(row.name)}
                          aria-label={`Download ${originalName(row.name)}`}
                        >
                          Download
                        </a>
                        {!readOnly && (
                          <button
                            type="button"
                            class="btn btn-small btn-danger"
                            aria-label={`Delete ${originalName(row.name)}`}
                            onClick={() => remove(row)}
                          >
                            Delete
                          </button>
                        )}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {rows.length === 0 && (
            <p class="empty muted">No files in these records.</p>
          )}
        </div>
      )}
      <Pager
        label="Pages of records"
        size={state.size}
        onSize={(size) => setQuery(stateToQuery({ ...state, size }))}
        page={pages.number}
        shown={items.length}
        summary={`${rows.length} file${
          rows.length === 1 ? "" : "s"
        } in ${items.length} record${items.length === 1 ? "" : "s"}`}
        hasPrev={pages.number > 1}
        hasNext={!!pages.page?.has_more}
        onPrev={pages.prev}
        onNext={pages.next}
        total={pages.total}
        counting={pages.counting}
        onCount={pages.count}
      />
    </section>
  );
}
