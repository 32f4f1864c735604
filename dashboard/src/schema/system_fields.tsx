/// <reference lib="dom" />
/**
 * Read-only lists in the entity form: the built-in fields of a base or
 * auth entity, and the columns of a saved view.
 *
 * @module
 */

import type { JSX } from "preact";
import type { EntityType, FieldDef } from "../../../lib/schema/types.ts";

const BUILTIN: Record<"base" | "auth", [string, string, string][]> = {
  base: [
    ["id", "string", "Record id, set by the server"],
    ["created", "date", "Set when the record is created"],
    ["updated", "date", "Set on every change"],
  ],
  auth: [
    ["email", "email", "Required, unique, stored lower-case"],
    ["password", "string", "Write-only, at least 8 characters, hashed"],
    ["verified", "bool", "Default false; only admins may set it"],
  ],
};

/** The built-in fields of an entity type (none for views). */
export function SystemFields(props: { type: EntityType }): JSX.Element | null {
  if (props.type === "view") return null;
  const rows = props.type === "auth"
    ? [...BUILTIN.base, ...BUILTIN.auth]
    : BUILTIN.base;
  return (
    <details class="system-fields">
      <summary>
        Built-in fields ({rows.map((r) => r[0]).join(", ")}) — read-only
      </summary>
      <div class="table-wrap">
        <table class="data">
          <caption class="sr-only">Built-in fields</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Notes</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([name, type, note]) => (
              <tr key={name}>
                <td class="mono">{name}</td>
                <td>{type}</td>
                <td>{note}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** The columns a saved view returns (typed by the server). */
export function ViewColumns(props: { fields: FieldDef[] }): JSX.Element {
  return (
    <div class="table-wrap">
      <table class="data">
        <caption class="sr-only">Columns of the view</caption>
        <thead>
          <tr>
            <th scope="col">Column</th>
            <th scope="col">Type</th>
            <th scope="col">Copied from</th>
          </tr>
        </thead>
        <tbody>
          {props.fields.map((f) => (
            <tr key={f.name}>
              <td class="mono">{f.name}</td>
              <td>{f.type}</td>
              <td class="mono">{f.origin ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
