/**
 * The results report (bench/results.md): the run's table, the targets, the
 * realtime and soak sections, the analysis and the History of ratios.
 *
 * @module
 */

import type { LoadResult } from "./load.ts";
import {
  LOGGING_PAIR,
  REALTIME_PAIR,
  type Row,
  S3_PAIR,
  WEBSOCKET_PAIR,
} from "./rows.ts";
import { targetsTable } from "./targets.ts";
import {
  REALTIME_KEY,
  type RealtimeRow,
  realtimeSection,
  realtimeSummary,
} from "./realtime_report.ts";
import { extract, splice } from "./sections.ts";

function table(rows: Row[]): string {
  const lines = [
    "| db | scenario | Moonbase req/s | p50 ms | p99 ms | errors | non-2xx | baseline req/s | ratio | server CPU µs/req (baseline) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const cpu = (x?: number) => x === undefined ? "?" : x.toFixed(1);
  for (const r of rows) {
    if ("text" in r) {
      lines.push(`| ${r.db} | ${r.name} | ${r.text} | | | | | | | |`);
    } else if ("value" in r) {
      lines.push(
        `| ${r.db} | ${r.name} | ${r.value.toFixed(1)} | | | | | | | |`,
      );
    } else {
      const m = r.moonbase;
      lines.push(
        `| ${r.db} | ${r.name} | ${m.rps.toFixed(0)} | ${m.p50.toFixed(2)} | ${
          m.p99.toFixed(2)
        } | ${m.errors} | ${m.non2xx} | ${r.baseline.rps.toFixed(0)} | ${
          r.ratio.toFixed(2)
        } | ${cpu(m.cpuPerRequest)} (${cpu(r.baseline.cpuPerRequest)}) |`,
      );
    }
  }
  return lines.join("\n");
}

async function sh(cmd: string, args: string[]): Promise<string> {
  try {
    const out = await new Deno.Command(cmd, {
      args,
      stdout: "piped",
      stderr: "null",
    }).output();
    return new TextDecoder().decode(out.stdout).trim();
  } catch {
    return "?"; // the command is missing: the report says "?"
  }
}

/** What a run hands to the report. */
export interface Results {
  rows: Row[];
  realtime: RealtimeRow[];
  /** `db/name` keys of the scenarios profiled in this run. */
  profiles: Set<string>;
  /** How each scenario ran ("3 alternating rounds of 3 s"). */
  runs: string;
  label: string;
  /**
   * The report file (its previous History, realtime, soak and insert
   * sections are kept); none: the report is only returned.
   */
  path?: string;
}

/** Sections other tools write (bench/soak.ts, bench/inserts.ts): a full run keeps them. */
const KEPT =
  /<!-- (soak|inserts):\w+:start -->[\s\S]*?<!-- (?:soak|inserts):\w+:end -->/g;

/**
 * Writes the report (latest run + history of ratios) and returns it. With
 * no `rows` (`--only realtime`) the rest of the previous report stays and
 * only its realtime section is replaced. The soak and insert sections
 * (written by bench/soak.ts and bench/inserts.ts) are carried over.
 */
export async function writeResults(r: Results): Promise<string> {
  const { rows, realtime, path, label } = r;
  // Not Linux: the machine line says "?".
  const cpu = /model name\s*:\s*(.*)/.exec(
    await Deno.readTextFile("/proc/cpuinfo").catch(() => ""),
  )?.[1] ?? "?";
  const mem = /MemTotal:\s+(\d+)/.exec(
    await Deno.readTextFile("/proc/meminfo").catch(() => ""),
  )?.[1] ?? "0";
  const commit = await sh("git", ["rev-parse", "--short", "HEAD"]);
  const date = new Date().toISOString();
  const tool = rows.find((r) => "moonbase" in r && r.moonbase.tool) as {
    moonbase: LoadResult;
  } | undefined;
  // No results file yet: a new one, with an empty history.
  const previous = path ? await Deno.readTextFile(path).catch(() => "") : "";
  const save = (text: string) => path ? Deno.writeTextFile(path, text) : null;
  let history = previous.split("## History\n")[1] ?? "";
  const summary = [
    ...rows.filter((r) => "ratio" in r).map((r) =>
      `${r.db}/${r.name}=${(r as { ratio: number }).ratio.toFixed(2)}`
    ),
    realtimeSummary(realtime),
  ].filter((x) => x !== "").join("; ");
  history = `${history.trim()}\n- ${date} ${commit}${
    label ? ` (${label})` : ""
  }: ${summary}`.trim();
  // The analysis is optional: without it the section is left out.
  const analysis = await Deno.readTextFile(
    new URL("./analysis.md", import.meta.url),
  ).catch(() => "");
  const rt = realtime.length
    ? realtimeSection(realtime, date)
    : extract(previous, REALTIME_KEY) ?? "";
  const soak = (previous.match(KEPT) ?? []).join("\n\n");
  if (rows.length === 0 && previous.includes("## History\n")) {
    const head = splice(
      previous.split("## History\n")[0],
      REALTIME_KEY,
      rt,
      analysis.split("\n")[0],
    );
    const report = `${head.trimEnd()}\n\n## History\n${history}\n`;
    await save(report);
    return report;
  }
  const report = `# Benchmark results

Machine: ${cpu}, ${navigator.hardwareConcurrency} cores, ${
    (Number(mem) / 1024 / 1024).toFixed(1)
  } GiB; Deno ${Deno.version.deno}.
Date: ${date}. Commit: ${commit}${label ? ` (${label})` : ""}. Load: ${
    tool?.moonbase.tool ?? "?"
  }, 32 connections, ${r.runs} per scenario,
each Moonbase run right after a bare \`Deno.serve\` baseline run; ratio = Moonbase req/s ÷ baseline req/s
over all rounds. In the paired rows the baseline is a second Moonbase: request logs off
("${LOGGING_PAIR}"), \`--realtime off\` ("${REALTIME_PAIR}"), \`--websocket\` off
("${WEBSOCKET_PAIR}"), \`--workers 1\` (the workers row), the same photo served from the
data directory ("${S3_PAIR}": S3 is Ceph's RADOS Gateway on loopback, started by the bench).
Server CPU = CPU time (all threads) the server process used per request.

${table(rows)}

## Targets

Each goal is a ratio to the baseline in the same run. **bare handler**: a bare \`Deno.serve\` handler
doing only the scenario's database work, \`bench/floor.ts\` on SQLite, \`bench/floor_pg.ts\` on
PostgreSQL (Moonbase's statements on postgres.js, its pool size); its ratio to the same baseline
and its server CPU µs per request (PostgreSQL's own processes not counted): the ceiling on this machine. **CPU budget**: the baseline's server
CPU per request ÷ the goal — what Moonbase may spend per request to meet the goal when the
server's CPU is the limit. **profile**: where the time goes (\`deno task bench --profile\`).

${targetsTable(rows, r.profiles)}

Reproduce: \`deno task bench\` (SQLite) or \`deno task bench --pg\` (also PostgreSQL on a throwaway
cluster with PostgreSQL's default durability: fsync and synchronous commit on); \`--scenario <text>\` runs only the scenarios whose name contains it, \`--profile\` also
profiles each missed target (or each \`--scenario\` match) into \`bench/profiles/\`, \`--workers N\`
serves the scenarios with \`serve --workers N\`; \`deno task bench:soak\` runs the memory soak.

${rt}${rt ? "\n" : ""}${soak}${soak ? "\n\n" : ""}${analysis}
## History
${history}
`;
  await save(report);
  return report;
}
