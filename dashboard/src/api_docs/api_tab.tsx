/// <reference lib="dom" />
/**
 * `/mb/entities/<name>/api`: an entity's API at a glance — its routes with
 * the rule that decides each, its record's fields as the OpenAPI document
 * describes them, and sample calls in curl and in client code.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { schemaOf, schemas } from "../schemas.ts";
import type { EntitySchema } from "../schemas.ts";
import { session } from "../session/session.ts";
import { EntityHeader } from "../ui/entity_tabs.tsx";
import { ErrorBox } from "../ui/field.tsx";
import { NotFound } from "../ui/not_found.tsx";
import {
  constraintText,
  type Endpoint,
  entityEndpoints,
  loadDocument,
  type OpenApiDocument,
  recordSchemaName,
  refName,
  sampleBody,
  samplesOf,
  typeText,
} from "./openapi_doc.ts";

/** The admin's OpenAPI document, loaded once per visit of a page. */
export function useDocument(): {
  doc: OpenApiDocument | null;
  error: string;
} {
  const [doc, setDoc] = useState<OpenApiDocument | null>(null);
  const [error, setError] = useState("");
  const token = session.token.value;
  // Reloaded when the schemas change: the document follows them.
  const version = schemas.value?.map((s) => s.updated).join() ?? "";
  useEffect(() => {
    const ac = new AbortController();
    loadDocument(token, ac.signal).then(setDoc).catch((e) => {
      if (e instanceof DOMException && e.name === "AbortError") return;
      setError((e as Error).message);
    });
    return () => ac.abort();
  }, [token, version]);
  return { doc, error };
}

const RULE_OF: Record<string, string> = {
  "get list": "list",
  "get one": "get",
  "post list": "add",
  "patch one": "update",
  "delete one": "delete",
};

/** Who a rule lets through, in words. */
function ruleText(schema: EntitySchema, e: Endpoint): string {
  const op = RULE_OF[`${e.method} ${e.path.endsWith("{id}") ? "one" : "list"}`];
  const rule = schema.rules[op as keyof EntitySchema["rules"]];
  if (!rule) return "";
  const who = rule.mode === "public"
    ? "anyone"
    : rule.mode === "auth"
    ? "signed-in users"
    : rule.mode === "custom"
    ? `custom: ${rule.expr}`
    : "admins only";
  return `${op} rule: ${who}`;
}

/** A method as a badge. */
export function MethodBadge(props: { method: string }): JSX.Element {
  return (
    <span class={`badge method method-${props.method}`}>
      {props.method.toUpperCase()}
    </span>
  );
}

/** The API tab of one entity. */
export function ApiTabPage(props: { entity: string }): JSX.Element {
  const schema = schemaOf(props.entity);
  const { doc, error } = useDocument();
  if (!schemas.value) return <p class="muted">Loading…</p>;
  if (!schema) {
    return <NotFound what={`There is no entity named ${props.entity}.`} />;
  }
  return (
    <section class="api-tab">
      <EntityHeader schema={schema} tab="api" />
      <ErrorBox error={error} />
      {!doc && !error && <p class="muted">Loading…</p>}
      {doc && <EntityApi doc={doc} schema={schema} />}
    </section>
  );
}

function EntityApi(
  props: { doc: OpenApiDocument; schema: EntitySchema },
): JSX.Element {
  const { doc, schema } = props;
  const [lang, setLang] = useState<"curl" | "client">("curl");
  const list = entityEndpoints(doc, schema.name);
  if (!schema.has_api || schema.is_system || list.length === 0) {
    return (
      <p class="notice">
        {schema.name} has no API routes
        {schema.is_system
          ? " (a system entity)"
          : !schema.has_api
          ? " (its API is turned off in the schema)"
          : ""}.
      </p>
    );
  }
  const name = recordSchemaName(doc, schema.name);
  const record = name ? doc.components.schemas[name] : undefined;
  const create = name ? doc.components.schemas[`${name}Create`] : undefined;
  const body = sampleBody(create);
  return (
    <>
      <div class="card">
        <h2>Routes</h2>
        <p class="muted small">
          Base URL <code>{location.origin}</code>. Send a token as{" "}
          <code>Authorization: Bearer &lt;token&gt;</code>; the{" "}
          <a href="/mb/api">API reference</a> has every route.
        </p>
        <ul class="api-routes">
          {list.map((e) => (
            <li key={e.method + e.path}>
              <MethodBadge method={e.method} /> <code>{e.path}</code>{" "}
              <span>{e.op.summary}</span>{" "}
              <span class="muted small">{ruleText(schema, e)}</span>
            </li>
          ))}
        </ul>
      </div>
      {record && (
        <div class="card">
          <h2>
            Record <code>{name}</code>
          </h2>
          <div
            class="table-wrap"
            tabIndex={0}
            role="region"
            aria-label={`Fields of ${schema.name}`}
          >
            <table class="data api-fields">
              <caption class="sr-only">Fields of {schema.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col">Type</th>
                  <th scope="col">On create</th>
                  <th scope="col">Constraints</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(record.properties ?? {}).map(([f, s]) => {
                  const w = create?.properties?.[f];
                  return (
                    <tr key={f}>
                      <td>
                        <code>{f}</code>
                      </td>
                      <td class="mono">
                        {f === "expand"
                          ? Object.entries(s.properties ?? {}).map(([k, x]) =>
                            `${k}: ${x.$ref ? refName(x.$ref) : typeText(x)}`
                          ).join(", ")
                          : typeText(s)}
                      </td>
                      <td>
                        {f === "expand"
                          ? "with ?expand="
                          : !w
                          ? "set by the server"
                          : create?.required?.includes(f)
                          ? "required"
                          : "optional"}
                      </td>
                      <td class="small">{constraintText(w ?? s)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </div>
      )}
      <div class="card">
        <div class="row wrap">
          <h2>Sample calls</h2>
          <span class="spacer" />
          <div class="seg" role="group" aria-label="Language of the samples">
            <button
              type="button"
              class={lang === "curl" ? "btn btn-small active" : "btn btn-small"}
              aria-pressed={lang === "curl"}
              onClick={() => setLang("curl")}
            >
              curl
            </button>
            <button
              type="button"
              class={lang === "client"
                ? "btn btn-small active"
                : "btn btn-small"}
              aria-pressed={lang === "client"}
              onClick={() => setLang("client")}
            >
              Client (TypeScript)
            </button>
          </div>
        </div>
        {lang === "client" && (
          <pre class="api-sample">{`import { Moonbase } from "@moonbase/client";
import type { Schema } from "./moonbase-types.ts"; // moonbase types --out …

const mb = new Moonbase<Schema>(${JSON.stringify(location.origin)});`}</pre>
        )}
        {list.map((e) => {
          const s = samplesOf(e, schema.name, location.origin, body);
          return (
            <div key={e.method + e.path} class="api-sample-block">
              <h3 class="sub-title">
                <MethodBadge method={e.method} /> {e.op.summary}
              </h3>
              <pre class="api-sample">{lang === "curl" ? s.curl : s.client}</pre>
            </div>
          );
        })}
      </div>
    </>
  );
}
