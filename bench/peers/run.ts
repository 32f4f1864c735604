/**
 * `deno run -A bench/peers/run.ts`: Moonbase beside its npm-installable peers
 * on this machine: Directus on SQLite against Moonbase on SQLite, Parse
 * Server on PostgreSQL against Moonbase on PostgreSQL, each system's req/s
 * as a ratio to a bare server of its runtime in the same run. Installs the
 * peers into a temp dir (bench/peers/install.ts), writes
 * bench/peers/results.md and stops every server it started.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { startPostgres } from "../../tests/_pg.ts";
import { startDirectus } from "./directus.ts";
import { type Installed, installPeers } from "./install.ts";
import { compare, loadAverage, type Row } from "./measure.ts";
import { startBareDeno, startBareNode, startMoonbase } from "./moonbase.ts";
import { stopAllNow } from "./node_procs.ts";
import { startParse } from "./parse.ts";
import { renderReport, type RunInfo } from "./report.ts";
import { loadRuns, type Run, saveRun } from "./history.ts";
import type { System } from "./scenarios.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    only: { type: "string" },
    render: { type: "boolean" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    dir: {
      type: "string",
      default: `${Deno.env.get("TMPDIR") ?? "/tmp"}/mb_peers`,
    },
    out: { type: "string", default: "bench/peers/results.md" },
  },
});
const only = args.values.only;
if (only !== undefined && only !== "directus" && only !== "parse") {
  throw new Error(`--only ${only}: "directus" or "parse"`);
}
const SECONDS = Number(args.values.seconds);
const ROUNDS = Math.max(1, Number(args.values.rounds));
// Moonbase's main.ts and deno.json are found from the repository's root.
Deno.chdir(new URL("../..", import.meta.url).pathname);

/** Stops of every server up now (Ctrl-C stops them too). */
const active = new Set<() => Promise<void>>();
Deno.addSignalListener("SIGINT", () => {
  stopAllNow();
  for (const stop of active) stop(); // each sends SIGTERM at once
  setTimeout(() => Deno.exit(130), 500);
});

function text(cmd: string, cmdArgs: string[]): string {
  try {
    const out = new Deno.Command(cmd, { args: cmdArgs }).outputSync();
    return new TextDecoder().decode(out.stdout).trim();
  } catch {
    return ""; // the tool is not installed: the report leaves its version out
  }
}

/** Copies the servers' logs (`*.log` under `from`) into `to`. */
async function keepLogs(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    const path = `${from}/${e.name}`;
    if (e.isDirectory) await keepLogs(path, to);
    else if (e.name.endsWith(".log")) {
      // Logs are kept for reading later: one that cannot be copied is missed.
      await Deno.copyFile(path, `${to}/${e.name}`).catch(() => {});
    }
  }
}

/** Starts a peer and Moonbase with their bare servers, compares, stops all. */
async function group(
  peers: Installed,
  info: RunInfo,
  label: string,
  startPeer: (dir: string) => Promise<System>,
  pgUrl: () => Promise<string | undefined>,
): Promise<Row[]> {
  const dir = await Deno.makeTempDir({ prefix: "mb_peers_run_" });
  const before = loadAverage();
  const stops: (() => Promise<void>)[] = [];
  const up = (stop: () => Promise<void>) => {
    stops.push(stop);
    active.add(stop);
  };
  try {
    console.error(`[${label}] seeding the peer with 10 000 records…`);
    const peer = await startPeer(dir);
    up(peer.stop);
    console.error(`[${label}] seeding Moonbase with 10 000 records…`);
    await Deno.mkdir(`${dir}/moonbase`);
    const moonbase = await startMoonbase(`${dir}/moonbase`, await pgUrl());
    up(moonbase.stop);
    const bareNode = await startBareNode(peers.node, dir);
    up(bareNode.stop);
    const bareDeno = await startBareDeno();
    up(bareDeno.stop);
    const rows = await compare(
      peer,
      moonbase,
      bareNode,
      bareDeno,
      ROUNDS,
      SECONDS,
    );
    info.loads.push({ label, before, after: loadAverage() });
    return rows;
  } finally {
    // Cleanup: a peer already gone and a scratch directory left behind harm
    // nothing, and must not hide the error that got here.
    for (const stop of stops.reverse()) {
      active.delete(stop);
      await stop().catch(() => {});
    }
    await keepLogs(dir, `${args.values.dir}/logs`);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Installs the peers, measures both comparisons, returns the run. */
async function measureAll(): Promise<Run> {
  const peers = await installPeers(args.values.dir);
  const info: RunInfo = {
    date: new Date().toISOString(),
    commit: text("git", ["log", "-1", "--format=%h"]),
    machine: `${
      /model name\s*:\s*(.*)/.exec(Deno.readTextFileSync("/proc/cpuinfo"))?.[1]
    }, ${navigator.hardwareConcurrency} cores, ${
      (Deno.systemMemoryInfo().total / 2 ** 30).toFixed(1)
    } GiB`,
    deno: Deno.version.deno,
    node: text(peers.node, ["--version"]).replace(/^v/, ""),
    rounds: ROUNDS,
    seconds: SECONDS,
    loads: [],
  };
  const rows: Row[] = [];
  try {
    if (only !== "parse") {
      rows.push(
        ...await group(peers, info, "Directus/SQLite", async (dir) => {
          await Deno.mkdir(`${dir}/directus`);
          return await startDirectus(peers, `${dir}/directus`);
        }, () => Promise.resolve(undefined)),
      );
    }
    if (only !== "directus") {
      const pg = await startPostgres();
      rows.push(
        ...await group(peers, info, "Parse/PostgreSQL", async (dir) => {
          await Deno.mkdir(`${dir}/parse`);
          return await startParse(
            peers,
            `${dir}/parse`,
            await pg.createDatabase(),
          );
        }, () => pg.createDatabase()),
      );
    }
  } catch (e) {
    stopAllNow();
    throw e;
  }
  return { info, rows };
}

let run: Run;
if (args.values.render) {
  const kept = await loadRuns();
  if (kept.length === 0) throw new Error("Cannot render: no kept run");
  run = kept[kept.length - 1];
} else {
  run = await measureAll();
  await saveRun(run);
}
await Deno.writeTextFile(
  args.values.out,
  renderReport(run.rows, run.info, await loadRuns()),
);
await new Deno.Command(Deno.execPath(), { args: ["fmt", args.values.out] })
  .output();
console.log(await Deno.readTextFile(args.values.out));
Deno.exit(0);
