/**
 * The soak's section of bench/results.md (one per database, between the
 * markers `soak:<db>`): the server's RSS samples under the mixed load and
 * whether memory levels off.
 *
 * Levels off: neither the mean nor the peak of the samples of the last 3
 * minutes (the last third of a shorter run) is more than `MAX_RISE` MiB
 * above that of the 3 minutes before. (Under load the heap saws up and down
 * by tens of MiB between collections: the spread within a window is shown,
 * a trend between windows is what counts.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { verdict } from "moonbase/bench/soak_report.ts";
 * const flat = Array.from({ length: 60 }, (_, i) => ({
 *   s: (i + 1) * 10, requests: 0, rps: 0, non2xx: 0, s5xx: 0, errors: 0,
 *   rss: 90 + (i % 2),
 * }));
 * assert.equal(verdict(flat).levelsOff, true);
 * const growing = flat.map((x, i) => ({ ...x, rss: 90 + i }));
 * assert.equal(verdict(growing).levelsOff, false);
 * ```
 *
 * @module
 */

import { splice, wrap } from "./sections.ts";

/** One sample of the soak. */
export interface Sample {
  /** Seconds since the load started. */
  s: number;
  requests: number;
  rps: number;
  non2xx: number;
  s5xx: number;
  errors: number;
  /** Server VmRSS, MiB. */
  rss: number;
}

/** Whether RSS levels off, and the figures behind it. */
export interface Verdict {
  levelsOff: boolean;
  /** The window's length, s. */
  window: number;
  /** max − min RSS in the window, MiB. */
  spread: number;
  /** Mean RSS in the window − mean in the window before, MiB. */
  rise: number;
  /** Peak RSS in the window − peak in the window before, MiB. */
  peakRise: number;
}

/** The largest rise (MiB) of the last window's mean or peak over the one before. */
export const MAX_RISE = 10;
const WINDOW_S = 180;

/** A difference with its sign ("+5.7", "−18.4"). */
export const signed = (x: number): string =>
  `${x < 0 ? "−" : "+"}${Math.abs(x).toFixed(1)}`;

const mean = (xs: number[]) =>
  xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** The verdict on `samples` (in time order). */
export function verdict(samples: Sample[]): Verdict {
  const end = samples.at(-1)?.s ?? 0;
  const window = end >= 3 * WINDOW_S ? WINDOW_S : end / 3;
  const last = samples.filter((x) => x.s > end - window).map((x) => x.rss);
  const before = samples.filter((x) =>
    x.s > end - 2 * window && x.s <= end - window
  ).map((x) => x.rss);
  const spread = last.length ? Math.max(...last) - Math.min(...last) : 0;
  const rise = before.length ? mean(last) - mean(before) : 0;
  const peakRise = before.length && last.length
    ? Math.max(...last) - Math.max(...before)
    : 0;
  return {
    levelsOff: before.length > 0 && last.length > 0 && rise <= MAX_RISE &&
      peakRise <= MAX_RISE,
    window,
    spread,
    rise,
    peakRise,
  };
}

/** At most `n` samples, evenly spread, the last one kept. */
function thin(samples: Sample[], n: number): Sample[] {
  if (samples.length <= n) return samples;
  const step = samples.length / n;
  return Array.from(
    { length: n },
    (_, i) =>
      samples[Math.min(samples.length - 1, Math.round((i + 1) * step) - 1)],
  );
}

/** What the run was, for the section's heading lines. */
export interface SoakRun {
  db: string;
  minutes: number;
  connections: number;
  /** Seconds between samples. */
  interval: number;
  idle: number;
  date: string;
}

/** The section of one database's soak. */
export function soakSection(run: SoakRun, samples: Sample[]): string {
  const v = verdict(samples);
  const win = Math.round(v.window);
  const last = samples.at(-1);
  const peak = Math.max(...samples.map((x) => x.rss));
  const rows = thin(samples, 20).map((x) =>
    `| ${x.s} s | ${x.requests} | ${
      x.rps.toFixed(0)
    } | ${x.non2xx} | ${x.s5xx} | ${x.errors} | ${x.rss.toFixed(1)} |`
  );
  return wrap(
    `soak:${run.db}`,
    `## Memory soak: ${run.db}

\`deno task bench:soak${
      run.db === "postgres" ? " --pg" : ""
    } --minutes ${run.minutes}\` (${run.date}): ${run.connections} connections of mixed
load (gets, lists with varied filters and sorts, creates, patches, deletes, token-checked
reads, a login a second) for ${run.minutes} min; the server's VmRSS sampled every ${run.interval} s.
Idle RSS ${run.idle.toFixed(1)} MiB, peak ${peak.toFixed(1)} MiB, last ${
      last?.rss.toFixed(1) ?? "?"
    } MiB; ${last?.requests ?? 0} requests, ${last?.s5xx ?? 0} 5xx, ${
      last?.errors ?? 0
    } errors.

**Levels off: ${
      v.levelsOff ? "yes" : "NO"
    }** — the last ${win} s against the ${win} s before:
mean ${signed(v.rise)} MiB, peak ${
      signed(v.peakRise)
    } MiB (levels off when neither is above
+${MAX_RISE} MiB). Within the last window the samples span ${
      v.spread.toFixed(1)
    } MiB: the heap
saws up and down between collections.

| elapsed | requests | req/s | non-2xx | 5xx | errors | RSS MiB |
|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}
`,
  );
}

/**
 * Puts the section into the report at `path` (replacing this database's
 * previous one; a new one goes before the History).
 */
export async function writeSoak(
  path: string,
  db: string,
  section: string,
): Promise<void> {
  // No results file yet: a new one.
  const report = await Deno.readTextFile(path).catch(() =>
    "# Benchmark results\n\n## History\n"
  );
  const before = ["## How to read these figures", "## History\n"]
    .find((h) => report.includes(h)) ?? "";
  await Deno.writeTextFile(path, splice(report, `soak:${db}`, section, before));
}
