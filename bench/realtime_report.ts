/**
 * The "Realtime" section of bench/results.md: the figures of
 * bench/realtime.ts as a table, their one-line summary for the History,
 * and how the section replaces the previous one (`--only realtime` keeps
 * the rest of the report as it was).
 *
 * @module
 */

import { wrap } from "./sections.ts";

/** One realtime figure. */
export interface RealtimeRow {
  db: string;
  /** A stable short key (the History line uses it). */
  key: string;
  /** What it is, for the table. */
  name: string;
  value: number;
  unit: "ms" | "µs" | "KB" | "ratio" | "count";
  /** The figures around it (p50 next to a p99, req/s behind a ratio…). */
  detail?: string;
}

/** The key of the section's markers (bench/sections.ts). */
export const REALTIME_KEY = "realtime";

function shown(r: RealtimeRow): string {
  const digits = r.unit === "count" ? 0 : r.unit === "ratio" ? 2 : 1;
  const unit = r.unit === "ratio" || r.unit === "count" ? "" : ` ${r.unit}`;
  return `${r.value.toFixed(digits)}${unit}`;
}

/** The section, between markers so a later run can replace it. */
export function realtimeSection(rows: RealtimeRow[], date: string): string {
  return wrap(
    REALTIME_KEY,
    `## Realtime

Measured by \`bench/realtime.ts\` (${date}; \`deno task bench --only realtime\` runs only
this part). One Moonbase process with realtime on; 1 000 SSE subscribers to one public entity
in a separate Deno process (raw TCP, chunked stream decoded and parsed there); writes are
creates from the benchmark process, each record carrying its sequence number and the time
it was sent. **commit → delivery** = arrival at a subscriber − the time the create's
response was back at the writer (negative when the event reaches a subscriber before the
writer has read its own response); **sent → delivery** = arrival − the time the create was
sent. Percentiles are over every delivery (writes × subscribers); the spread is, per write,
last subscriber − first. *Paced*: 200 creates at 20/s. *Burst*: 8 writers as fast as they
can for 3 s, then until every event is delivered (or 15 s). Memory: the server's VmRSS with
no subscriber and with 1 000 idle ones (2 s pauses to settle). Server CPU per delivery: the
server process's CPU time (all threads) over the paced creates ÷ events delivered. The paired
GET row alternates rounds between this server (realtime on, 1 000 idle subscribers) and a
second one started with \`--realtime off\`. The **bare** rows (a bare \`Deno.serve\`) are the same
subscribers and 100 paced creates against \`bench/sse_baseline.ts\` (SSE streams as Moonbase
makes them, each POST sent to all; no database): what Deno itself costs. Latencies move a
lot between runs on a shared 2-core machine (the server, the subscribers and the writer
compete for it); memory and CPU per delivery are the steadier figures.

| db | figure | value | detail |
|---|---|---:|---|
${
      rows.map((r) =>
        `| ${r.db} | ${r.name} | ${shown(r)} | ${r.detail ?? ""} |`
      )
        .join("\n")
    }
`,
  );
}

/** The History line's part for realtime. */
export function realtimeSummary(rows: RealtimeRow[]): string {
  return rows.filter((r) => r.key !== "")
    .map((r) => `${r.db}/rt ${r.key}=${shown(r).replace(" ", "")}`)
    .join("; ");
}
