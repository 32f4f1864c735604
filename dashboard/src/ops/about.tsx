/// <reference lib="dom" />
/**
 * `/mb/about`: the server's health (`GET /health`: status, database kind
 * and state, the file store's kind and state, uptime in words, version),
 * the API base URL, and where the documentation is.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { mb, MoonbaseError } from "../mb.ts";
import { ErrorBox } from "../ui/field.tsx";
import { localTime } from "../logs/log_format.tsx";

/** The health answer. */
interface Health {
  status: string;
  uptime: number;
  version: string;
  database: string;
  database_kind?: string;
  files?: string;
  files_kind?: string;
}

/**
 * Seconds in words, two units at most: "45 s", "12 min", "3 h 12 min",
 * "2 d 5 h".
 */
export function humanUptime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
  const m = Math.floor(s % 3600 / 60);
  if (d > 0) return h ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m ? `${h} h ${m} min` : `${h} h`;
  if (m > 0) return `${m} min`;
  return `${s} s`;
}

const KIND: Record<string, string> = {
  sqlite: "SQLite",
  postgres: "PostgreSQL",
};

const FILES_KIND: Record<string, string> = {
  local: "on this server's disk",
  s3: "S3 bucket",
};

const STATE: Record<string, string> = {
  ok: "reachable",
  unavailable: "not answering",
  full: "disk full: writes fail",
};

/** The health and about page. */
export function AboutPage(_props: Record<string, never>): JSX.Element {
  const [health, setHealth] = useState<Health | null>(null);
  const [error, setError] = useState("");
  const [checked, setChecked] = useState(0);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    mb.send<Health>("GET", "/api/v1/health", {
      signal: ac.signal,
      auth: "none",
    })
      .then((h) => {
        setHealth(h);
        setError("");
      })
      .catch((e) => {
        if (!(e instanceof MoonbaseError)) return; // aborted: the page was left
        // 503 still carries the health data: show it with the problem.
        const d = e.data as Health | null;
        if (d && typeof d.uptime === "number") setHealth(d);
        setError(e.message);
      })
      .finally(() => setChecked(Date.now()));
    return () => ac.abort();
  }, [tick]);
  const base = `${location.origin}/api/v1`;
  const h = health;
  const ok = h?.status === "ok";
  return (
    <section class="about-page">
      <div class="page-head row wrap">
        <h1>Health &amp; about</h1>
        <span class="spacer" />
        <button type="button" class="btn" onClick={() => setTick(tick + 1)}>
          Check again
        </button>
      </div>
      <ErrorBox error={error} />
      {!h && !error && <p class="muted">Checking…</p>}
      {h && (
        <div class="card">
          <h2>Server</h2>
          <dl class="kv">
            <dt>Status</dt>
            <dd>
              <span class={`badge ${ok ? "badge-ok" : "badge-error"}`}>
                {h.status}
              </span>
            </dd>
            <dt>Version</dt>
            <dd>Moonbase {h.version}</dd>
            <dt>Database</dt>
            <dd>
              {KIND[h.database_kind ?? ""] ?? "unknown"}{" "}
              <span class={h.database === "ok" ? "muted" : "error-text"}>
                ({STATE[h.database] ?? h.database})
              </span>
            </dd>
            {h.files && (
              <>
                <dt>Files</dt>
                <dd>
                  {FILES_KIND[h.files_kind ?? ""] ?? "unknown"}{" "}
                  <span class={h.files === "ok" ? "muted" : "error-text"}>
                    ({STATE[h.files] ?? h.files})
                  </span>
                </dd>
              </>
            )}
            <dt>Uptime</dt>
            <dd>
              {humanUptime(h.uptime)}{" "}
              <span class="muted">
                (since {localTime(
                  new Date(Date.now() - h.uptime * 1000).toISOString(),
                )})
              </span>
            </dd>
            <dt>Checked</dt>
            <dd>{checked ? localTime(new Date(checked).toISOString()) : ""}</dd>
          </dl>
        </div>
      )}
      <div class="card">
        <h2>API</h2>
        <dl class="kv">
          <dt>Base URL</dt>
          <dd>
            <code class="wrap-any">{base}</code>
          </dd>
          <dt>Health check</dt>
          <dd>
            <a href={`${base}/health`} target="_blank" rel="noopener">
              <code class="wrap-any">{base}/health</code>
            </a>
          </dd>
        </dl>
        <p>
          The full API reference (entities, records, rules, files, auth, logs,
          admins) is in <code>docs/reference/</code> shipped with Moonbase{" "}
          {h?.version ?? ""}; this server does not serve it. Every response is
          an envelope <code>{`{status, data, error}`}</code>.
        </p>
      </div>
    </section>
  );
}
