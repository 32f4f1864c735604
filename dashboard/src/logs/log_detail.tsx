/// <reference lib="dom" />
/**
 * `/mb/logs/:id`: every field of one log entry (`GET /sys/logs/:id`), its
 * `data` as indented JSON, and a link to the caller's record when the
 * entry names one.
 *
 * @module
 */

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError, seg } from "../mb.ts";
import { ErrorBox } from "../ui/field.tsx";
import {
  duration,
  LevelBadge,
  localTime,
  type LogEntry,
} from "./log_format.tsx";

function Row(props: { name: string; children: ComponentChildren }) {
  return (
    <>
      <dt>{props.name}</dt>
      <dd>{props.children}</dd>
    </>
  );
}

const none = <span class="muted">—</span>;

/** The caller, linked to its record when it is a user of an entity. */
function Caller(props: { e: LogEntry }): JSX.Element {
  const { auth_id: id, auth_entity: entity } = props.e;
  if (!id) {
    return (
      <span class="muted">{props.e.type === "request" ? "guest" : "none"}</span>
    );
  }
  if (entity === "mb_admins") {
    return <span class="mono">{id} (admin)</span>;
  }
  if (!entity) return <span class="mono">{id}</span>;
  return (
    <a
      class="mono"
      href={`/mb/entities/${encodeURIComponent(entity)}/records/${
        encodeURIComponent(id)
      }`}
    >
      {entity}/{id}
    </a>
  );
}

/** One log entry. */
export function LogDetailPage(props: { id: string }): JSX.Element {
  const [entry, setEntry] = useState<LogEntry | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    const ac = new AbortController();
    mb.send<LogEntry>("GET", `/api/v1/sys/logs/${seg(props.id)}`, {
      signal: ac.signal,
    }).then(setEntry).catch((e) => {
      // Anything else is the abort of a page left meanwhile.
      if (e instanceof MoonbaseError) setError(e.message);
    });
    return () => ac.abort();
  }, [props.id]);
  const e = entry;
  return (
    <section class="log-detail">
      <div class="page-head">
        <p class="crumbs">
          <a href="/mb/logs">← All logs</a>
        </p>
        <h1>Log entry</h1>
      </div>
      <ErrorBox error={error} />
      {!e && !error && <p class="muted">Loading…</p>}
      {e && (
        <>
          <div class="card">
            <p class="log-headline">
              <LevelBadge level={e.level} /> <strong>{e.message}</strong>
            </p>
            <dl class="kv">
              <Row name="Time">
                <time dateTime={e.time}>{localTime(e.time)}</time>{" "}
                <span class="muted">({e.time})</span>
              </Row>
              <Row name="Level">{e.level}</Row>
              <Row name="Type">{e.type}</Row>
              <Row name="Message">
                <span class="wrap-any">{e.message}</span>
              </Row>
              <Row name="Method">{e.method ?? none}</Row>
              <Row name="Path">
                {e.path ? <span class="mono wrap-any">{e.path}</span> : none}
              </Row>
              <Row name="Status">{e.status ?? none}</Row>
              <Row name="Duration">
                {e.duration_ms === null ? none : duration(e.duration_ms)}
              </Row>
              <Row name="IP">
                {e.ip ? <span class="mono">{e.ip}</span> : none}
              </Row>
              <Row name="Caller">
                <Caller e={e} />
              </Row>
              <Row name="Request id">
                {e.request_id
                  ? <span class="mono wrap-any">{e.request_id}</span>
                  : none}
              </Row>
              <Row name="Entry id">
                <span class="mono wrap-any">{e.id}</span>
              </Row>
            </dl>
          </div>
          <div class="card">
            <h2>Data</h2>
            {e.data
              ? (
                <pre
                  class="log-data"
                  tabIndex={0}
                  role="region"
                  aria-label="Entry data as JSON"
                >
                  {JSON.stringify(e.data, null, 2)}
                </pre>
              )
              : <p class="muted">This entry has no data.</p>}
          </div>
        </>
      )}
    </section>
  );
}
