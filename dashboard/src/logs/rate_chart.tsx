/// <reference lib="dom" />
/**
 * The request-rate chart of the logs page: `GET /sys/logs/stats` for the
 * filter's date range (the last hour when none), drawn as stacked SVG bars
 * (2xx/3xx, 4xx, 5xx). Accessible as one image with a summary, a title per
 * bar (hover), and the numbers as a table behind "Show the numbers".
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { MoonbaseError } from "../mb.ts";
import { getTagged } from "./live_tail.ts";
import { localTime } from "./log_format.tsx";

/** One bucket of the stats answer. */
export interface StatsBucket {
  time: string;
  requests: number;
  errors: number;
  warnings: number;
}

/** The stats answer. */
export interface LogStats {
  from: string;
  to: string;
  bucket_seconds: number;
  buckets: StatsBucket[];
}

const W = 600, H = 150;

function span(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${seconds / 60} min`;
  if (seconds < 86400) return `${seconds / 3600} h`;
  return `${seconds / 86400} d`;
}

function plural(n: number, one: string, many = one + "s"): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The chart's one-sentence summary (its accessible name). */
export function summary(s: LogStats, label: (iso: string) => string): string {
  let total = 0, warn = 0, err = 0;
  let peak: StatsBucket | undefined;
  for (const b of s.buckets) {
    total += b.requests;
    warn += b.warnings;
    err += b.errors;
    if (b.requests > (peak?.requests ?? 0)) peak = b;
  }
  const head = `Requests from ${label(s.from)} to ${label(s.to)}, per ${
    span(s.bucket_seconds)
  }: ${plural(total, "request")}, ${warn} answered 4xx, ${err} answered 5xx`;
  return peak
    ? `${head}; the busiest was ${label(peak.time)} with ${
      plural(peak.requests, "request")
    }.`
    : `${head}.`;
}

/** The chart; reloads when the range or `refresh` changes. */
export function RateChart(props: {
  start: string;
  end: string;
  refresh: number;
}): JSX.Element {
  const [stats, setStats] = useState<LogStats | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    const ac = new AbortController();
    // Tagged: the live tail leaves the chart's own refreshes out.
    getTagged<LogStats>(
      "/sys/logs/stats",
      { start_date: props.start, end_date: props.end, buckets: 60 },
      ac.signal,
    ).then((s) => {
      setStats(s);
      setError("");
    }).catch((e) => {
      // Anything else is the abort of a refresh superseded by the next one.
      if (e instanceof MoonbaseError) setError(e.message);
    });
    return () => ac.abort();
  }, [props.start, props.end, props.refresh]);

  const head = <h2 id="rate-title">Requests over time</h2>;
  if (error) {
    return (
      <section class="card rate-card" aria-labelledby="rate-title">
        {head}
        <p class="error-box" role="alert">{error}</p>
      </section>
    );
  }
  if (!stats) {
    return (
      <section class="card rate-card" aria-labelledby="rate-title">
        {head}
        <p class="muted">Loading the chart…</p>
      </section>
    );
  }
  // Times alone when the range stays within one local day.
  const days = localTime(stats.from).slice(0, 10) !==
    localTime(new Date(Date.parse(stats.to) - 1).toISOString()).slice(0, 10);
  const label = (iso: string) =>
    days ? localTime(iso).slice(0, 16) : localTime(iso).slice(11, 16);
  const n = stats.buckets.length || 1;
  const max = Math.max(1, ...stats.buckets.map((b) => b.requests));
  const step = W / n, bw = Math.max(step * 0.8, 0.5);
  const y = (v: number) => (v / max) * (H - 4);
  const busy = stats.buckets.filter((b) => b.requests > 0);
  return (
    <section class="card rate-card" aria-labelledby="rate-title">
      <div class="row wrap">
        {head}
        <span class="spacer" />
        <ul class="rate-legend" aria-label="Legend">
          <li>
            <span class="swatch swatch-ok" />2xx/3xx
          </li>
          <li>
            <span class="swatch swatch-warn" />4xx
          </li>
          <li>
            <span class="swatch swatch-error" />5xx
          </li>
        </ul>
      </div>
      <p class="muted">
        Every request in the date range (level, type and search filter the table
        only).
      </p>
      <div class="rate-plot">
        <span class="rate-max muted" aria-hidden="true">{max}</span>
        <svg
          class="rate-svg"
          viewBox={`0 0 ${W} ${H}`}
          preserveAspectRatio="none"
          role="img"
          aria-label={summary(stats, label)}
        >
          <line class="rate-axis" x1="0" y1={H} x2={W} y2={H} />
          {stats.buckets.map((b, i) => {
            if (b.requests === 0) return null;
            const ok = b.requests - b.warnings - b.errors;
            const x = i * step + (step - bw) / 2;
            const hOk = y(ok), hWarn = y(b.warnings), hErr = y(b.errors);
            return (
              <g key={b.time} class="bar">
                <title>
                  {`${label(b.time)}: ${
                    plural(b.requests, "request")
                  }, ${b.warnings} 4xx, ${b.errors} 5xx`}
                </title>
                <rect
                  class="bar-ok"
                  x={x}
                  y={H - hOk}
                  width={bw}
                  height={hOk}
                />
                <rect
                  class="bar-warn"
                  x={x}
                  y={H - hOk - hWarn}
                  width={bw}
                  height={hWarn}
                />
                <rect
                  class="bar-error"
                  x={x}
                  y={H - hOk - hWarn - hErr}
                  width={bw}
                  height={hErr}
                />
              </g>
            );
          })}
        </svg>
      </div>
      <div class="rate-axis-labels muted" aria-hidden="true">
        <span>{label(stats.from)}</span>
        <span>each bar: {span(stats.bucket_seconds)}</span>
        <span>{label(stats.to)}</span>
      </div>
      {busy.length === 0 && <p class="muted">No requests in this range.</p>}
      {busy.length > 0 && (
        <details class="rate-numbers">
          <summary>Show the numbers</summary>
          <div class="table-wrap">
            <table class="data">
              <caption class="sr-only">
                Requests per {span(stats.bucket_seconds)}
              </caption>
              <thead>
                <tr>
                  <th scope="col">From</th>
                  <th scope="col">Requests</th>
                  <th scope="col">4xx</th>
                  <th scope="col">5xx</th>
                </tr>
              </thead>
              <tbody>
                {busy.map((b) => (
                  <tr key={b.time}>
                    <td>{localTime(b.time)}</td>
                    <td>{b.requests}</td>
                    <td>{b.warnings}</td>
                    <td>{b.errors}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <small class="muted">Intervals without requests are left out.</small>
        </details>
      )}
    </section>
  );
}
