/**
 * Benchmark scenarios, targets, and the results report.
 *
 * @module
 */

import type { LoadResult, Target } from "./load.ts";
import type { Seeded } from "./seed.ts";
import {
  type RealtimeRow,
  realtimeSection,
  realtimeSummary,
  spliceRealtime,
} from "./realtime_report.ts";

/** One measured scenario, or a single figure. */
export type Row =
  | {
    db: string;
    name: string;
    moonbase: LoadResult;
    baseline: LoadResult;
    ratio: number;
  }
  | { db: string; name: string; value: number };

/**
 * The paired logging row: GET by id with request logs on, in alternation with
 * a second server with them off ("baseline" is the logging-off server).
 */
export const LOGGING_PAIR = "GET by id: logging on ÷ off (paired)";

/** The sustained-load row: the last 5 s of 30 s ("baseline" is the first 5 s). */
export const SUSTAINED = "GET by id sustained 30 s: last ÷ first 5 s";

/** The scenarios, in order. */
export function scenarios(
  s: Seeded,
  token: string,
  page200: string,
): { name: string; target: Target }[] {
  const json = { "content-type": "application/json" };
  return [
    { name: "health", target: { method: "GET", path: "/api/v1/health" } },
    {
      name: "GET by id (public)",
      target: { method: "GET", path: `/api/v1/entities/items/${s.itemId}` },
    },
    {
      name: "GET by id (token + custom rule)",
      target: {
        method: "GET",
        path: `/api/v1/entities/notes/${s.noteId}`,
        headers: { authorization: `Bearer ${token}` },
      },
    },
    {
      name: "list 50",
      target: { method: "GET", path: "/api/v1/entities/items?limit=50" },
    },
    {
      name: "list filter + sort",
      target: {
        method: "GET",
        path: `/api/v1/entities/items?limit=50&sort=-n&filter=${
          encodeURIComponent('n >= 2000 && n < 4000 && tag == "t3"')
        }`,
      },
    },
    {
      name: "list page 200 (after)",
      target: {
        method: "GET",
        path: `/api/v1/entities/items?limit=50&after=${page200}`,
      },
    },
    {
      name: "create",
      target: {
        method: "POST",
        path: "/api/v1/entities/items",
        headers: json,
        body: '{"title":"bench","n":1,"tag":"x"}',
      },
    },
    {
      name: "PATCH",
      target: {
        method: "PATCH",
        path: `/api/v1/entities/items/${s.itemId}`,
        headers: json,
        body: '{"n":5000}',
      },
    },
    {
      name: "login",
      target: {
        method: "POST",
        path: "/api/v1/auth/users/login",
        headers: json,
        body: JSON.stringify({ identity: s.email, password: s.password }),
        spreadIps: true,
      },
    },
  ];
}

const TARGETS: Record<string, Record<string, number>> = {
  sqlite: {
    "GET by id (public)": 0.5,
    "GET by id (token + custom rule)": 0.4,
    "list 50": 0.15,
    "create": 0.3,
  },
  postgres: { "GET by id (public)": 0.1, "create": 0.05 },
};

function ratioOf(rows: Row[], db: string, name: string): number | undefined {
  const r = rows.find((x) => x.db === db && x.name === name);
  return r && "ratio" in r ? r.ratio : undefined;
}

/** Each target with its measured value and verdict. */
export function checks(
  rows: Row[],
): { what: string; goal: string; got: string; ok: boolean }[] {
  const out: { what: string; goal: string; got: string; ok: boolean }[] = [];
  for (const db of [...new Set(rows.map((r) => r.db))]) {
    for (const [name, goal] of Object.entries(TARGETS[db] ?? {})) {
      const got = ratioOf(rows, db, name) ?? 0;
      const bareName = {
        "GET by id (public)": "GET by id",
        "GET by id (token + custom rule)": "GET with token + owner check",
        "list 50": "list 50",
        "create": "create",
      }[name];
      const bare = bareName
        ? ratioOf(rows, db, `bare handler: ${bareName}`)
        : undefined;
      out.push({
        what: `${db}: ${name}`,
        goal: `ratio ≥ ${goal}`,
        got: got.toFixed(2) +
          (bare === undefined ? "" : ` (bare handler: ${bare.toFixed(2)})`),
        ok: got >= goal,
      });
    }
    const steady = ratioOf(rows, db, SUSTAINED);
    if (steady !== undefined) {
      out.push({
        what: `${db}: sustained load (own check)`,
        goal: "last 5 s ≥ 0.8 × first",
        got: steady.toFixed(2),
        ok: steady >= 0.8,
      });
    }
    if (db === "sqlite") {
      const p1 = ratioOf(rows, db, "list 50") ?? 0,
        p200 = ratioOf(rows, db, "list page 200 (after)") ?? 0;
      out.push({
        what: "sqlite: page 200 vs page 1",
        goal: "within 20%",
        got: (p200 / p1).toFixed(2),
        ok: p200 >= 0.8 * p1,
      });
      const rss = rows.find((r) => r.db === db && r.name === "idle RSS (MB)");
      const mb = rss && "value" in rss ? rss.value : 0;
      out.push({
        what: "sqlite: idle RSS",
        goal: "< 100 MB",
        got: `${mb.toFixed(0)} MB`,
        ok: mb < 100,
      });
      const onOff = ratioOf(rows, db, LOGGING_PAIR) ?? 0;
      out.push({
        what: "sqlite: logging on vs off",
        goal: "within 10%",
        got: onOff.toFixed(2),
        ok: onOff >= 0.9,
      });
      const bad = rows.filter((r) =>
        r.db === db && "moonbase" in r &&
        (r.moonbase.errors > 0 || r.moonbase.non2xx > 0)
      );
      out.push({
        what: "sqlite: errors and non-2xx",
        goal: "0",
        got: bad.map((r) => r.name).join(", ") || "0",
        ok: bad.length === 0,
      });
    }
  }
  return out;
}

/** True when every target holds. */
export function targetsMet(rows: Row[]): boolean {
  return checks(rows).every((c) => c.ok);
}

function table(rows: Row[]): string {
  const lines = [
    "| db | scenario | Moonbase req/s | p50 ms | p99 ms | errors | non-2xx | baseline req/s | ratio | server CPU µs/req (baseline) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const cpu = (x?: number) => x === undefined ? "?" : x.toFixed(1);
  for (const r of rows) {
    if ("value" in r) {
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
    return "?";
  }
}

/**
 * Writes the report (latest run + history of ratios) and returns it. With
 * no `rows` (`--only realtime`) the rest of the previous report stays and
 * only its realtime section is replaced.
 */
export async function writeResults(
  rows: Row[],
  path: string,
  runs: string,
  label: string,
  realtime: RealtimeRow[] = [],
): Promise<string> {
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
  const previous = await Deno.readTextFile(path).catch(() => "");
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
  const analysis = await Deno.readTextFile(
    new URL("./analysis.md", import.meta.url),
  ).catch(() => "");
  const section = realtime.length ? realtimeSection(realtime, date) : "";
  const main = (text: string) =>
    section ? spliceRealtime(text, section, analysis) : text;
  if (rows.length === 0 && previous.includes("## History\n")) {
    const report = `${
      main(previous.split("## History\n")[0]).trimEnd()
    }\n\n## History\n${history}\n`;
    await Deno.writeTextFile(path, report);
    return report;
  }
  const report = main(`# Benchmark results

Machine: ${cpu}, ${navigator.hardwareConcurrency} cores, ${
    (Number(mem) / 1024 / 1024).toFixed(1)
  } GiB; Deno ${Deno.version.deno}.
Date: ${date}. Commit: ${commit}${label ? ` (${label})` : ""}. Load: ${
    tool?.moonbase.tool ?? "?"
  }, 32 connections, ${runs} per scenario,
each Moonbase run right after a bare \`Deno.serve\` baseline run; ratio = Moonbase req/s ÷ baseline req/s
over all rounds (in the "${LOGGING_PAIR}" row the baseline is a Moonbase with request logs off).
Server CPU = CPU time (all threads) the server process used per request.

${table(rows)}

## Targets

| target | goal | measured | met |
|---|---|---|---|
${
    checks(rows).map((c) =>
      `| ${c.what} | ${c.goal} | ${c.got} | ${c.ok ? "yes" : "NO"} |`
    ).join("\n")
  }

Reproduce: \`deno task bench\` (SQLite) or \`deno task bench --pg\` (also PostgreSQL on a throwaway cluster).

${analysis}
## History
${history}
`);
  await Deno.writeTextFile(path, report);
  return report;
}
