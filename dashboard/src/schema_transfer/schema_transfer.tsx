/// <reference lib="dom" />
/**
 * `/mb/schemas`: schema export and import. Export downloads `schema.json`
 * (the body of `GET /api/v1/schemas/export`) and shows it to copy. Import
 * takes a file or pasted JSON, always runs a dry run first and shows what
 * would change, entity by entity and value by value; Apply (after a
 * confirmation) runs the same import for real, all or nothing. A refused
 * import shows the server's reason and changes nothing.
 *
 * Over 350 lines, one idea: the schema transfer page; kept whole because
 * export and import (preview, confirm, apply) are one page's two cards sharing
 * its helpers.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { MoonbaseError } from "../mb.ts";
import { reloadSchemas } from "../schemas.ts";
import { confirmAction } from "../ui/confirm.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { toast } from "../ui/toast.tsx";
import { ImportDiff } from "./import_diff.tsx";
import { exportSchemas, importSchemas } from "./transfer_api.ts";
import {
  changeCounts,
  confirmText,
  entities,
  type EntityChange,
  summaryText,
} from "./transfer_diff.ts";
import {
  exportText,
  readSchemaFile,
  type SchemaBody,
} from "./transfer_file.ts";

/** The page. */
export function SchemaTransferPage(
  _props: Record<string, never>,
): JSX.Element {
  return (
    <section class="schema-transfer">
      <div class="page-head">
        <h1>Schema export / import</h1>
        <p class="muted">
          Carry the schemas (entities, fields, rules, indexes, auth options)
          from one server to another, or keep them in a file beside your code.
          Records and files are not included: a backup holds those.
        </p>
      </div>
      <ExportCard />
      <ImportCard />
    </section>
  );
}

/** A failed call's message, with its per-field errors. */
function failure(e: unknown): string {
  if (!(e instanceof MoonbaseError)) throw e;
  const fields = Object.entries(e.fields).map(([k, f]) => `${k}: ${f.message}`);
  return [e.message, ...fields].join(" · ");
}

/** Copies `text`: the clipboard API, else the selection of `area`. */
async function copy(text: string, area: HTMLTextAreaElement | null) {
  try {
    await navigator.clipboard.writeText(text);
    toast("Copied to the clipboard");
    return;
  } catch {
    // No clipboard API here (or no permission): copy the selection.
  }
  area?.select();
  const ok = area !== null && document.execCommand("copy");
  toast(
    ok
      ? "Copied to the clipboard"
      : "Cannot copy here: the text is selected, copy it with your keyboard",
    ok ? "ok" : "error",
  );
}

/** A `blob:` URL of `text` while it is shown (revoked after). */
function useBlobUrl(text: string): string {
  const [url, setUrl] = useState("");
  useEffect(() => {
    if (!text) return setUrl("");
    const u = URL.createObjectURL(
      new Blob([text], { type: "application/json" }),
    );
    setUrl(u);
    return () => URL.revokeObjectURL(u);
  }, [text]);
  return url;
}

/** Saves `text` as `schema.json` (a download, as a link would). */
function save(text: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  a.download = "schema.json";
  a.click();
  // Revoked later, not at once: a browser may still be reading the blob
  // after the click returns (FileSaver.js waits 40 s too).
  setTimeout(() => URL.revokeObjectURL(a.href), 40_000);
}

function ExportCard(): JSX.Element {
  const [text, setText] = useState("");
  const [count, setCount] = useState(0);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);
  const url = useBlobUrl(text);

  const run = async () => {
    setBusy(true);
    setError("");
    try {
      const schemas = await exportSchemas();
      const t = exportText(schemas);
      save(t);
      setText(t);
      setCount(schemas.length);
    } catch (e) {
      setError(failure(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card stack" aria-labelledby="export-title">
      <h2 id="export-title">Export</h2>
      <p class="muted">
        Every entity's schema (system entities left out), in dependency order,
        as <code>schema.json</code>. OAuth2 client secrets are left blank.
      </p>
      <div class="row wrap">
        <button
          type="button"
          class="btn btn-primary"
          onClick={run}
          disabled={busy}
          aria-busy={busy ? "true" : undefined}
        >
          {busy ? "Exporting…" : "Export schemas"}
        </button>
        {text && (
          <a class="btn" href={url} download="schema.json">
            Download schema.json
          </a>
        )}
        {text && (
          <button
            type="button"
            class="btn"
            onClick={() => copy(text, area.current)}
          >
            Copy
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {text && (
        <label class="field">
          <span class="field-label">
            schema.json ({entities(count)})
          </span>
          <textarea
            ref={area}
            class="json-editor transfer-json"
            rows={12}
            readOnly
            spellcheck={false}
            value={text}
          />
        </label>
      )}
    </section>
  );
}

/** A dry run's answer and the input it was run on (applied as it is). */
interface Preview {
  schemas: SchemaBody[];
  deleteMissing: boolean;
  changes: EntityChange[];
}

function ImportCard(): JSX.Element {
  const [text, setText] = useState("");
  const [fileName, setFileName] = useState("");
  const [deleteMissing, setDeleteMissing] = useState(false);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [applied, setApplied] = useState<EntityChange[] | null>(null);
  const [error, setError] = useState("");
  const [refused, setRefused] = useState(false);
  const [applyError, setApplyError] = useState("");
  const [busy, setBusy] = useState<"" | "preview" | "apply">("");
  const area = useRef<HTMLTextAreaElement>(null);

  // Any change of the input makes the shown preview stale: run it again.
  const changed = () => {
    setPreview(null);
    setApplied(null);
    setError("");
    setRefused(false);
    setApplyError("");
  };
  const onText = (t: string) => {
    setText(t);
    changed();
  };
  const onFile = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    try {
      onText(await file.text());
      setFileName(file.name);
    } catch {
      setError(`Cannot read ${file.name}: choose it again`);
    }
  };

  const dryRun = async () => {
    changed();
    const read = readSchemaFile(text);
    if (!read.ok) {
      setError(read.message);
      if (read.offset !== undefined && area.current) {
        area.current.focus();
        area.current.setSelectionRange(read.offset, read.offset + 1);
      }
      return;
    }
    setBusy("preview");
    try {
      const answer = await importSchemas(read.schemas, {
        dryRun: true,
        deleteMissing,
      });
      setPreview({
        schemas: read.schemas,
        deleteMissing,
        changes: answer.changes,
      });
    } catch (e) {
      setError(failure(e));
      setRefused(true);
    } finally {
      setBusy("");
    }
  };

  const apply = async () => {
    if (!preview) return;
    const ok = await confirmAction(
      confirmText(preview.changes),
      "Apply changes",
    );
    if (!ok) return;
    setBusy("apply");
    setApplyError("");
    try {
      const answer = await importSchemas(preview.schemas, {
        dryRun: false,
        deleteMissing: preview.deleteMissing,
      });
      setPreview(null);
      setApplied(answer.changes);
      toast(`Schemas imported: ${entities(answer.changes.length)} changed`);
    } catch (e) {
      setApplyError(failure(e));
    } finally {
      setBusy("");
      void reloadSchemas();
    }
  };

  const n = preview ? changeCounts(preview.changes) : null;
  return (
    <section class="card stack" aria-labelledby="import-title">
      <h2 id="import-title">Import</h2>
      <p class="muted">
        Makes this server's schemas the ones of the file: an entity is matched
        by id, else by name, else created; a field the file lacks is deleted
        with its data. You see every change before anything is applied.
      </p>
      <label class="field">
        <span class="field-label">Schema file</span>
        <input
          type="file"
          accept="application/json,.json"
          onChange={(e) => onFile(e.currentTarget)}
        />
      </label>
      <label class="field">
        <span class="field-label">
          Schema JSON{fileName ? ` (from ${fileName})` : ""}
        </span>
        <textarea
          ref={area}
          class="json-editor transfer-json"
          rows={10}
          spellcheck={false}
          value={text}
          placeholder='{"schemas": [...]}'
          aria-describedby="import-json-hint"
          onInput={(e) => onText(e.currentTarget.value)}
        />
      </label>
      <small class="hint" id="import-json-hint">
        Choose a file or paste what Export gives (<code>
          {'{"schemas": [...]}'}
        </code>).
      </small>
      <div class="stack transfer-delete">
        <label class="field inline">
          <input
            type="checkbox"
            checked={deleteMissing}
            aria-describedby="delete-missing-note"
            onChange={(e) => {
              setDeleteMissing(e.currentTarget.checked);
              changed();
            }}
          />
          <span>Delete the entities the file does not list</span>
        </label>
        <p
          id="delete-missing-note"
          class={deleteMissing ? "notice" : "hint"}
          role={deleteMissing ? "note" : undefined}
        >
          {deleteMissing
            ? "Warning: every entity of this server that the file lacks is deleted, with all its records and files."
            : "Off: entities the file does not list stay as they are."}
        </p>
      </div>
      <div class="row wrap">
        <button
          type="button"
          class="btn btn-primary"
          onClick={dryRun}
          disabled={busy !== ""}
          aria-busy={busy === "preview" ? "true" : undefined}
        >
          {busy === "preview" ? "Checking…" : "Preview changes"}
        </button>
      </div>
      {error && <Refusal error={error} server={refused} />}
      {preview && n && (
        <section class="stack transfer-result" aria-labelledby="preview-title">
          <h3 id="preview-title">Changes (dry run: nothing applied yet)</h3>
          <p role="status">{summaryText(preview.changes)}</p>
          <ImportDiff changes={preview.changes} />
          {applyError && <Refusal error={applyError} server />}
          {preview.changes.length > 0 && (
            <div class="row wrap end">
              <button
                type="button"
                class={n.delete > 0 ? "btn btn-danger" : "btn btn-primary"}
                onClick={apply}
                disabled={busy !== ""}
                aria-busy={busy === "apply" ? "true" : undefined}
              >
                {busy === "apply"
                  ? "Applying…"
                  : `Apply changes to ${entities(preview.changes.length)}`}
              </button>
            </div>
          )}
        </section>
      )}
      {applied && (
        <section class="stack transfer-result" aria-labelledby="applied-title">
          <h3 id="applied-title">Applied</h3>
          <p role="status">{summaryText(applied, true)}</p>
          <ImportDiff changes={applied} />
        </section>
      )}
    </section>
  );
}

/** Why an import was refused; from the server, that nothing was applied. */
function Refusal(props: { error: string; server?: boolean }): JSX.Element {
  return (
    <div class="stack transfer-refusal" role="alert">
      <p class="error-box">{props.error}</p>
      {props.server && (
        <p class="muted">
          The server refused this import: nothing was applied.
        </p>
      )}
    </div>
  );
}
