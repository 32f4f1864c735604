/// <reference lib="dom" />
/**
 * The header of every entity page: its name and type, and the tabs
 * Records / Files / Schema / Rules (/ Auth for an auth entity) / API.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";
import { entityHref } from "../router.ts";
import type { EntitySchema } from "../schemas.ts";

/** Which tab is shown. */
export type EntityTab =
  | "records"
  | "files"
  | "schema"
  | "rules"
  | "auth"
  | "api";

/** Title and tabs of an entity page; `actions` go on the right. */
export function EntityHeader(props: {
  schema: EntitySchema;
  tab: EntityTab;
  actions?: ComponentChildren;
}): JSX.Element {
  const s = props.schema;
  const hasFiles = s.fields.some((f) =>
    f.type === "file" || f.type === "files"
  );
  const tabs: [EntityTab, string, string][] = [
    ["records", "Records", entityHref(s.name)],
    ...(hasFiles
      ? [["files", "Files", entityHref(s.name, "files")] as [
        EntityTab,
        string,
        string,
      ]]
      : []),
    ["schema", "Schema", entityHref(s.name, "schema")],
    ["rules", "Rules", entityHref(s.name, "rules")],
    ...(s.type === "auth" && !s.is_system
      ? [["auth", "Auth", entityHref(s.name, "auth")] as [
        EntityTab,
        string,
        string,
      ]]
      : []),
    ["api", "API", entityHref(s.name, "api")],
  ];
  return (
    <div class="page-head">
      <div class="row wrap">
        <h1>
          {s.name} <span class={`badge badge-${s.type}`}>{s.type}</span>
          {!s.has_api && <span class="badge">no API</span>}
        </h1>
        <span class="spacer" />
        {props.actions}
      </div>
      <nav class="tabs" aria-label={`${s.name} sections`}>
        {tabs.map(([id, label, href]) => (
          <a
            key={id}
            href={href}
            class={props.tab === id ? "tab active" : "tab"}
            aria-current={props.tab === id ? "page" : undefined}
          >
            {label}
          </a>
        ))}
      </nav>
    </div>
  );
}
