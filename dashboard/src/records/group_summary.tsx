/// <reference lib="dom" />
/**
 * The records page's group-by summary: pick a select, bool or relation
 * field and see how many of the listed records (the table's filter and
 * search apply) hold each value, most first (then by name). One aggregate request
 * (`GET …/aggregate?group=<field>&count=true`) when the summary is open;
 * relation values show their target's display field where it has one.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb } from "../mb.ts";
import type { EntitySchema } from "../schemas.ts";
import {
  summaryFields,
  summaryQuery,
  type TableState,
} from "./records_query.ts";
import { labelsFor } from "./relation_labels.ts";
import { ErrorBox } from "../ui/field.tsx";

interface Counted {
  value: unknown;
  label: string;
  count: number;
}

function labelOf(v: unknown, labels: Map<string, string>): string {
  if (v === null || v === undefined) return "(empty)";
  if (typeof v === "string") return labels.get(v) ?? v;
  return String(v);
}

/** The "Summary" disclosure of the records page. */
export function GroupSummary(props: {
  schema: EntitySchema;
  state: TableState;
  /** Changes when the table reloads (a count may have changed). */
  version: unknown;
}): JSX.Element | null {
  const fields = summaryFields(props.schema);
  const [open, setOpen] = useState(false);
  const [field, setField] = useState(fields[0]?.name ?? "");
  const [rows, setRows] = useState<Counted[] | null>(null);
  const [error, setError] = useState("");
  const query = summaryQuery(props.schema, props.state, field);
  const key = JSON.stringify(query);
  useEffect(() => {
    if (!open || !field) return;
    const ac = new AbortController();
    (async () => {
      const data = await mb.entity(props.schema.name).aggregate(query, {
        signal: ac.signal,
      });
      const values = data.groups.map((g) => g.key[field]);
      const def = fields.find((f) => f.name === field);
      let labels = new Map<string, string>();
      const target = def?.type === "relation" && def.foreign_key?.entity;
      if (target) {
        const ids = values.filter((v): v is string => typeof v === "string");
        // Labels are a nicety: without them the ids show.
        labels = await labelsFor(target, ids, ac.signal).catch(() => labels);
      }
      setRows(
        data.groups
          .map((g) => ({
            value: g.key[field],
            label: labelOf(g.key[field], labels),
            count: g.count ?? 0, // asked for: always there
          }))
          .sort((a, b) => b.count - a.count || a.label.localeCompare(b.label)),
      );
      setError("");
    })().catch((e) => {
      if (e instanceof DOMException && e.name === "AbortError") return;
      setRows(null);
      setError((e as Error).message);
    });
    return () => ac.abort();
  }, [open, key, props.version]);
  if (fields.length === 0) return null;
  const most = Math.max(1, ...(rows ?? []).map((r) => r.count));
  return (
    <details
      class="card group-summary"
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>Summary: records per value</summary>
      <label class="field inline">
        <span class="field-label">Count by</span>
        <select
          value={field}
          onChange={(e) => setField(e.currentTarget.value)}
        >
          {fields.map((f) => (
            <option key={f.name} value={f.name}>{f.name} ({f.type})</option>
          ))}
        </select>
      </label>
      <ErrorBox error={error} />
      {rows && rows.length === 0 && <p class="muted">No records.</p>}
      {rows && rows.length > 0 && (
        <table class="summary-table">
          <caption class="sr-only">Records per value of {field}</caption>
          <thead>
            <tr>
              <th scope="col">{field}</th>
              <th scope="col" class="num">Records</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={JSON.stringify(r.value)}>
                <td
                  class={r.value === null ? "muted" : undefined}
                  title={typeof r.value === "string" && r.label !== r.value
                    ? r.value
                    : undefined}
                >
                  {r.label}
                </td>
                <td class="num">
                  <span
                    class="summary-bar"
                    style={{ width: `${(r.count / most) * 100}%` }}
                    aria-hidden="true"
                  />
                  <span class="summary-count">{r.count}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}
