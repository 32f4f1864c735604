/**
 * Every run's figures, kept in bench/peers/runs/<date>.json, and the range
 * each comparison spans over them: one run on a shared 2-core machine moves
 * with the other work on it, the range over several shows by how much.
 *
 * @module
 */

import type { Row } from "./measure.ts";
import type { RunInfo } from "./report.ts";

/** One run as kept. */
export interface Run {
  info: RunInfo;
  rows: Row[];
}

/** The directory runs are kept in. */
export const RUNS_DIR = "bench/peers/runs";

/** Keeps a run (named after its date). */
export async function saveRun(run: Run): Promise<void> {
  await Deno.mkdir(RUNS_DIR, { recursive: true });
  const name = run.info.date.replace(/[:.]/g, "-");
  const path = `${RUNS_DIR}/${name}.json`;
  await Deno.writeTextFile(path, JSON.stringify(run, null, 2) + "\n");
  // The repository's `deno fmt --check` covers it.
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", path] })
    .output();
}

/** Every kept run, oldest first. */
export async function loadRuns(): Promise<Run[]> {
  const runs: Run[] = [];
  try {
    for await (const e of Deno.readDir(RUNS_DIR)) {
      if (!e.name.endsWith(".json")) continue;
      runs.push(JSON.parse(await Deno.readTextFile(`${RUNS_DIR}/${e.name}`)));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return runs.sort((a, b) => a.info.date.localeCompare(b.info.date));
}

/** Two significant digits at least, no more decimals than that needs. */
export function fixed(x: number): string {
  if (x >= 10) return x.toFixed(0);
  if (x >= 1) return x.toFixed(1);
  return x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
}

function span(xs: number[], unit = ""): string {
  const lo = Math.min(...xs), hi = Math.max(...xs);
  return fixed(lo) === fixed(hi)
    ? `${fixed(lo)}${unit}`
    : `${fixed(lo)}–${fixed(hi)}${unit}`;
}

/** The range of each comparison over `runs`, as a markdown table. */
export function rangeTable(runs: Run[]): string {
  const groups = new Map<string, Row[]>();
  for (const run of runs) {
    for (const r of run.rows) {
      const key = `${r.peer} | ${r.version} | ${r.database} | ${r.scenario}`;
      groups.set(key, [...(groups.get(key) ?? []), r]);
    }
  }
  const lines = [
    "| peer | version | database | scenario | runs | peer ratio | Moonbase ratio | Moonbase ÷ peer throughput | peer ÷ Moonbase CPU µs/req | load (1 min) |",
    "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const [key, rows] of groups) {
    const cpu = (r: Row) =>
      (r.peerLoad.cpuPerRequest ?? NaN) / (r.moonbase.cpuPerRequest ?? NaN);
    lines.push(
      `| ${key} | ${rows.length} | ${
        span(rows.map((r) => r.peerLoad.rps / r.bareNode.rps))
      } | ${span(rows.map((r) => r.moonbase.rps / r.bareDeno.rps))} | ${
        span(rows.map((r) => r.moonbase.rps / r.peerLoad.rps), "×")
      } | ${span(rows.map(cpu), "×")} | ${span(rows.map((r) => r.load1))} |`,
    );
  }
  return lines.join("\n");
}
