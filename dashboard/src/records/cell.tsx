/// <reference lib="dom" />
/**
 * One table cell's content, rendered by field type: local dates (ISO on
 * hover), ✓/✗ booleans, truncated text, collapsed JSON, relation links,
 * image thumbnails and file links, shortened ids.
 *
 * @module
 */

import type { JSX } from "preact";
import { fileUrl, isImageName, originalName } from "../files/file_token.ts";
import type { FieldDef } from "../schemas.ts";

/** Date and time in the browser's zone ("" for a non-date). */
export function localDate(iso: string): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** An id shortened to its last 8 characters, the full id on hover. */
export function ShortId(props: { id: string }): JSX.Element {
  const id = props.id;
  return (
    <span class="mono" title={id}>
      {id.length > 12 ? "…" + id.slice(-8) : id}
    </span>
  );
}

function FileLinks(
  props: { entity: string; names: string[]; token: string },
): JSX.Element {
  return (
    <span class="file-cell">
      {props.names.map((n) => (
        <a
          key={n}
          href={fileUrl(props.entity, n, props.token)}
          target="_blank"
          rel="noopener"
          title={n}
          class="file-chip"
          onClick={(e) => e.stopPropagation()}
        >
          {isImageName(n)
            ? (
              <img
                class="thumb"
                src={fileUrl(props.entity, n, props.token)}
                alt={originalName(n)}
                loading="lazy"
              />
            )
            : originalName(n)}
        </a>
      ))}
    </span>
  );
}

function JsonValue(props: { value: unknown }): JSX.Element {
  const v = props.value;
  const text = JSON.stringify(v);
  if (v === null || typeof v !== "object") {
    return <span class="mono" title={text}>{text}</span>;
  }
  const n = Array.isArray(v) ? v.length : Object.keys(v).length;
  const label = Array.isArray(v)
    ? `[…] ${n} item${n === 1 ? "" : "s"}`
    : `{…} ${n} key${n === 1 ? "" : "s"}`;
  return <span class="mono json-cell" title={text}>{label}</span>;
}

/** An empty cell's content ("—", read as "empty"). */
export function Empty(): JSX.Element {
  return (
    <span class="muted">
      <span aria-hidden="true">—</span>
      <span class="sr-only">empty</span>
    </span>
  );
}

/** A link to a relation's target record, by its label or short id. */
function RelationLink(
  props: { target: string; id: string; label?: string },
): JSX.Element {
  const { target, id, label } = props;
  return (
    <a
      href={`/mb/entities/${encodeURIComponent(target)}/records/${
        encodeURIComponent(id)
      }`}
      onClick={(e) => e.stopPropagation()}
      title={`${target} ${id}`}
      class={label ? undefined : "mono"}
    >
      {label
        ? (label.length > 40 ? label.slice(0, 40) + "…" : label)
        : id.length > 12
        ? "…" + id.slice(-8)
        : id}
    </a>
  );
}

/** The content of one cell. */
export function Cell(props: {
  field: FieldDef;
  value: unknown;
  entity: string;
  token: string;
  /** For relations: the target records' labels by id (shown instead of ids). */
  labels?: ReadonlyMap<string, string>;
}): JSX.Element {
  const { field: f, value: v } = props;
  if (v === null || v === undefined || v === "") {
    return <Empty />;
  }
  if (f.name === "id" && typeof v === "string") return <ShortId id={v} />;
  switch (f.type) {
    case "bool":
      return v
        ? (
          <span class="bool-yes">
            <span aria-hidden="true">✓</span>
            <span class="sr-only">yes</span>
          </span>
        )
        : (
          <span class="bool-no">
            <span aria-hidden="true">✗</span>
            <span class="sr-only">no</span>
          </span>
        );
    case "date":
      return (
        <time dateTime={String(v)} title={String(v)}>
          {localDate(String(v))}
        </time>
      );
    case "json":
      return <JsonValue value={v} />;
    case "relation": {
      const target = f.foreign_key?.entity ?? "";
      const ids = Array.isArray(v) ? v.map(String) : [String(v)];
      if (ids.length === 0) return <Empty />;
      const links = ids.map((id) => (
        <RelationLink
          key={id}
          target={target}
          id={id}
          label={props.labels?.get(id)}
        />
      ));
      return Array.isArray(v) ? <span class="relation-list">{links}</span> : (
        links[0]
      );
    }
    case "file":
    case "files": {
      const names = Array.isArray(v) ? v.map(String) : [String(v)];
      if (names.length === 0) {
        return <Empty />;
      }
      return (
        <FileLinks entity={props.entity} names={names} token={props.token} />
      );
    }
    default: {
      const text = typeof v === "string" ? v : JSON.stringify(v);
      return (
        <span class="trunc" title={text}>
          {text.length > 80 ? text.slice(0, 80) + "…" : text}
        </span>
      );
    }
  }
}
