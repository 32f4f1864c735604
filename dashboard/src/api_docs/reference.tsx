/// <reference lib="dom" />
/**
 * `/mb/api`: the API reference, rendered from the server's OpenAPI
 * document (the admin's: every route and entity), grouped by tag; each
 * operation opens to its parameters, request body and answer.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ErrorBox } from "../ui/field.tsx";
import { MethodBadge, useDocument } from "./api_tab.tsx";
import {
  type Endpoint,
  endpoints,
  type OpenApiDocument,
  type Schema,
  typeText,
} from "./openapi_doc.ts";

/** The API reference page. */
export function ApiReferencePage(
  _props: Record<string, never>,
): JSX.Element {
  const { doc, error } = useDocument();
  return (
    <section class="api-reference">
      <div class="page-head row wrap">
        <h1>API reference</h1>
        <span class="spacer" />
        {doc && <DownloadDocument doc={doc} />}
      </div>
      <ErrorBox error={error} />
      {!doc && !error && <p class="muted">Loading…</p>}
      {doc && <Reference doc={doc} />}
    </section>
  );
}

/** A link that saves the admin's document (a plain link would fetch a guest's). */
function DownloadDocument(props: { doc: OpenApiDocument }): JSX.Element {
  const [href, setHref] = useState("");
  useEffect(() => {
    const url = URL.createObjectURL(
      new Blob([JSON.stringify(props.doc, null, 2)], {
        type: "application/json",
      }),
    );
    setHref(url);
    return () => URL.revokeObjectURL(url);
  }, [props.doc]);
  return (
    <a class="btn" href={href} download="openapi.json">
      Download openapi.json
    </a>
  );
}

function Reference(props: { doc: OpenApiDocument }): JSX.Element {
  const { doc } = props;
  const [filter, setFilter] = useState("");
  const f = filter.trim().toLowerCase();
  const groups = new Map<string, Endpoint[]>();
  for (const e of endpoints(doc)) {
    const text = `${e.method} ${e.path} ${e.op.summary ?? ""}`.toLowerCase();
    if (f && !text.includes(f)) continue;
    const tag = e.op.tags?.[0] ?? "other";
    groups.set(tag, [...groups.get(tag) ?? [], e]);
  }
  return (
    <>
      <p class="muted">
        {doc.info.title} {doc.info.version}: OpenAPI {doc.openapi}, served at
        {" "}
        <code>/api/v1/openapi.json</code>{" "}
        for any generator (each caller gets the routes and entities its rules
        open). Every JSON answer is an envelope{" "}
        <code>{"{status, data, error}"}</code>.
      </p>
      <label class="api-filter">
        <span>Filter routes</span>{" "}
        <input
          type="search"
          value={filter}
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          placeholder="posts, login, /sys/…"
        />
      </label>
      {[...groups].map(([tag, list]) => (
        <div class="card" key={tag}>
          <h2>{tag}</h2>
          {list.map((e) => <Operation key={e.method + e.path} e={e} />)}
        </div>
      ))}
      {groups.size === 0 && <p class="muted">No route matches.</p>}
    </>
  );
}

function schemaLines(s: Schema | undefined): string {
  if (!s) return "";
  const data = s.properties?.data;
  const shown = data && s.properties?.status ? data : s;
  if (shown.properties) {
    const req = new Set(shown.required ?? []);
    return `{\n${
      Object.entries(shown.properties).map(([k, v]) =>
        `  ${k}${req.has(k) ? "" : "?"}: ${typeText(v)}`
      ).join("\n")
    }\n}`;
  }
  return typeText(shown);
}

function Operation(props: { e: Endpoint }): JSX.Element {
  const { e } = props;
  const admin = e.op.description?.includes("Admins only");
  const ok = Object.entries(e.op.responses ?? {}).find(([k]) =>
    /^[12]\d\d$/.test(k)
  );
  const body = e.op.requestBody?.content;
  return (
    <details class="api-op">
      <summary>
        <MethodBadge method={e.method} /> <code>{e.path}</code>{" "}
        <span>{e.op.summary}</span>
        {admin && <span class="badge badge-quiet">admin</span>}
      </summary>
      {e.op.description && <p>{e.op.description}</p>}
      {e.op.parameters && e.op.parameters.length > 0 && (
        <dl class="kv">
          {e.op.parameters.map((p) => [
            <dt key={`${p.in}${p.name}t`}>
              <code>{p.name}</code>{" "}
              <span class="muted small">
                {p.in}
                {p.required ? ", required" : ""}
              </span>
            </dt>,
            <dd key={`${p.in}${p.name}d`}>{p.description}</dd>,
          ])}
        </dl>
      )}
      {body && Object.entries(body).map(([media, c]) => (
        <div key={media}>
          <p class="small muted">Body ({media})</p>
          <pre>{schemaLines(c.schema)}</pre>
        </div>
      ))}
      {ok && (
        <div>
          <p class="small muted">
            {ok[0]} {ok[1].description}
          </p>
          {ok[1].content && (
            <pre>{schemaLines(Object.values(ok[1].content)[0].schema)}</pre>
          )}
        </div>
      )}
    </details>
  );
}
