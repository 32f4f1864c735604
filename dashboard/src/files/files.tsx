/// <reference lib="dom" />
/**
 * `/mb/entities/:name/files`: the files in the file fields of an entity's
 * records, newest records first, in pages of files (use_file_pages.ts: a
 * page holds "Per page" files however they are spread over records), with
 * thumbnail, name, size and type (from HEAD), the owning record, a
 * download link, and delete (a PATCH that takes the file off its record).
 * Below 620 px the field, size, type and record go under the name, so the
 * table fits a phone without scrolling sideways.
 *
 * @module
 */

import type { JSX } from "preact";
import { mb } from "../mb.ts";
import { sizeText, useFileMeta } from "./file_meta.ts";
import {
  extOf,
  fileUrl,
  isImageName,
  originalName,
  useFileToken,
} from "./file_token.ts";
import type { FileRow } from "./file_pages.ts";
import { readState, stateToQuery } from "../records/records_query.ts";
import { entityHref, query, setQuery } from "../router.ts";
import { type EntitySchema, schemaOf, schemas } from "../schemas.ts";
import { useFilePages } from "./use_file_pages.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { Pager } from "../records/pager.tsx";
import { recordHref } from "../records/record_table.tsx";
import { toast } from "../ui/toast.tsx";
import { NotFound } from "../ui/not_found.tsx";

/** Files of an entity. */
export function FilesPage(props: { entity: string }): JSX.Element {
  const schema = schemaOf(props.entity);
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema || schema.is_system) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  return <FilesOf key={schema.name} schema={schema} />;
}

function FilesOf(props: { schema: EntitySchema }): JSX.Element {
  const schema = props.schema;
  const fileFields = schema.fields.filter((f) =>
    f.type === "file" || f.type === "files"
  );
  const state = { ...readState(query.value), filter: "", q: "", sort: "" };
  const pages = useFilePages(schema, fileFields, state.size);
  const rows = pages.rows ?? [];
  const file = useFileToken(schema, pages.number);
  const meta = useFileMeta(schema.name, rows.map((r) => r.name));
  const records = new Set(rows.map((r) => r.record)).size;
  const remove = async (row: FileRow) => {
    const shown = originalName(row.name);
    if (
      !await confirmAction(
        `Delete ${shown} from record ${row.record}? The file is removed for good.`,
      )
    ) return;
    const field = fileFields.find((f) => f.name === row.field)!;
    const cur = pages.records.get(row.record)?.[field.name];
    const body = field.type === "file" ? { [field.name]: null } : {
      [field.name]: (Array.isArray(cur) ? cur : []).filter((n) =>
        n !== row.name
      ),
    };
    try {
      await mb.entity(schema.name).update(row.record, body);
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
      {pages.rows && (
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
                <th scope="col" class="wide-only">Field</th>
                <th scope="col" class="wide-only">Size</th>
                <th scope="col" class="wide-only">Type</th>
                <th scope="col" class="wide-only">Record</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => {
                const url = fileUrl(schema.name, row.name, file.token);
                const m = meta[row.name];
                return (
                  <tr key={row.record + "/" + row.name}>
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
                    <td class="file-name-cell" title={row.name}>
                      <span class="file-original">
                        {originalName(row.name)}
                      </span>
                      <span class="narrow-only muted file-facts">
                        {row.field} · {m ? sizeText(m.size) : "…"} ·{" "}
                        {m ? m.type : "…"} · record{" "}
                        <a
                          href={recordHref(schema.name, row.record)}
                          title={row.record}
                          class="mono"
                        >
                          …{row.record.slice(-8)}
                        </a>
                      </span>
                    </td>
                    <td class="wide-only">{row.field}</td>
                    <td class="wide-only">{m ? sizeText(m.size) : "…"}</td>
                    <td class="mono wide-only">{m ? m.type : "…"}</td>
                    <td class="wide-only">
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
            <p class="empty muted">
              {pages.number > 1 ? "No more files." : "No files yet."}
            </p>
          )}
        </div>
      )}
      <Pager
        label="Pages of files"
        size={state.size}
        onSize={(size) => setQuery(stateToQuery({ ...state, size }))}
        page={pages.number}
        shown={rows.length}
        summary={`${rows.length} file${
          rows.length === 1 ? "" : "s"
        } in ${records} record${records === 1 ? "" : "s"}`}
        hasPrev={pages.number > 1}
        hasNext={pages.hasNext}
        onPrev={pages.prev}
        onNext={pages.next}
        total={null}
        counting={false}
      />
    </section>
  );
}
