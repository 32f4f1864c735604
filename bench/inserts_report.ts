/**
 * The insert benchmark's section of bench/results.md (one per database,
 * between the markers `inserts:<db>`): total time, records per second and
 * latency percentiles through `@moonbase/client` and through the bare
 * handler, the ratio of the two, and the machine and its load.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seconds } from "moonbase/bench/inserts_report.ts";
 * assert.equal(seconds(12_345), "12.3 s");
 * assert.equal(seconds(987), "0.987 s");
 * ```
 *
 * @module
 */

import { splice, wrap } from "./sections.ts";
import type { InsertsResult, ServerFigures } from "./inserts_run.ts";

/** The machine and how busy it was. */
export interface Conditions {
  cores: number;
  cpu: string;
  /** 1-minute load average before and after the run. */
  loadBefore: number;
  loadAfter: number;
  at: string;
}

/** A duration in ms as seconds, to 3 significant digits. */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toPrecision(3))} s`;
}

/** The cores, the CPU model (/proc/cpuinfo) and the 1-minute load average. */
export function machine(): { cores: number; cpu: string } {
  const info = Deno.readTextFileSync("/proc/cpuinfo");
  return {
    cores: navigator.hardwareConcurrency,
    cpu: /model name\s*:\s*(.+)/.exec(info)?.[1]?.trim() ?? "unknown",
  };
}

/** The 1-minute load average (/proc/loadavg). */
export function loadAverage(): number {
  return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
}

const ms = (x: number) => `${x.toFixed(1)} ms`;
const us = (x: number) => `${Math.round(x)} µs`;

/** Records per second of a run. */
export function rate(f: ServerFigures): number {
  return f.n / (f.ms / 1000);
}

function row(name: string, f: ServerFigures): string {
  return `| ${name} | ${seconds(f.ms)} | ${Math.round(rate(f))} | ${
    ms(f.p50)
  } | ${ms(f.p90)} | ${ms(f.p99)} | ${ms(f.max)} | ${us(f.serverCpu / f.n)} | ${
    us(f.cpu / f.n)
  } | ${f.stored} of ${f.n} | ${f.errors}${
    f.firstError ? ` (${f.firstError.slice(0, 80)})` : ""
  } |`;
}

/** The section of one database. */
export function insertsSection(r: InsertsResult, c: Conditions): string {
  const { moonbase: m, bare: b } = r;
  return wrap(
    `inserts:${r.db}`,
    `## Inserts through the client: ${r.db}

\`deno task bench:inserts${
      r.db === "postgres" ? " --pg" : ""
    } --n ${m.n} --concurrency ${m.concurrency}\` (${c.at}): TrailBase's
insert benchmark. A separate Deno process inserts ${m.n} chat messages (\`{room, text}\`, the
owner from the token) at ${m.concurrency} requests in flight, after one warm-up message.
**Moonbase**: \`serve\` with its defaults (request log and realtime on), through
\`@moonbase/client\` (\`mb.entity("messages").create\` after \`login\`); the add rule is
TrailBase's: the author is a member of the room (\`record.owner == auth.id && record.room.room_members_via_room.some(…)\`).
**Bare**: a \`Deno.serve\` (bench/inserts_bare.ts) checking the token and running one
\`INSERT … SELECT … WHERE EXISTS (room_members …)\`, from the same process with plain \`fetch\`.
${
      r.db === "postgres"
        ? "PostgreSQL 15 with fsync and synchronous commit on."
        : "SQLite in WAL mode, synchronous=NORMAL (as Moonbase)."
    }
Machine: ${c.cores} cores (${c.cpu}), shared; load average ${c.loadBefore} before, ${c.loadAfter} after.
Server CPU: the server process (all threads; PostgreSQL's own processes not counted);
writer CPU: the writer process. Both per insert.

| server | total | records/s | p50 | p90 | p99 | max | server CPU | writer CPU | stored | errors |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${row("Moonbase, @moonbase/client", m)}
${row("bare Deno.serve, fetch", b)}

Moonbase ÷ bare, records/s: **${(rate(m) / rate(b)).toFixed(2)}**.
`,
  );
}

/** Writes (or replaces) the section of one database in `path`. */
export async function writeInsertsSection(
  path: string,
  section: string,
  db: string,
): Promise<void> {
  const report = await Deno.readTextFile(path).catch(() => "");
  await Deno.writeTextFile(
    path,
    splice(report, `inserts:${db}`, section, "## How to read these figures"),
  );
}
