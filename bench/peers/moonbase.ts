/**
 * Moonbase, seeded by bench/seed.ts and started as bench/run.ts starts it
 * (request logs on, as shipped), with the scenarios of bench/report.ts; and
 * the bare servers the ratios divide by.
 *
 * @module
 */

import type { Target } from "../load.ts";
import { type Proc, SECRET, start, stop } from "../procs.ts";
import { scenarios } from "../rows.ts";
import { seed } from "../seed.ts";
import {
  COUNT,
  type ScenarioName,
  SCENARIOS,
  type System,
} from "./scenarios.ts";
import { freePort, startNode, stopNode } from "./node_procs.ts";

/** The version Moonbase's deno.json declares. */
async function version(): Promise<string> {
  const cfg = JSON.parse(await Deno.readTextFile("deno.json"));
  return String(cfg.version);
}

/**
 * Seeds and starts Moonbase with its data in `dataDir`, on SQLite or (with
 * `pgUrl`) on that PostgreSQL database.
 */
export async function startMoonbase(
  dataDir: string,
  pgUrl?: string,
): Promise<System> {
  const dbArgs = pgUrl ? ["--database", "PSQL", "--connection", pgUrl] : [];
  const seeded = await seed(
    pgUrl
      ? { dataDir, database: "PSQL", connection: pgUrl, jwtSecret: SECRET }
      : { dataDir, jwtSecret: SECRET },
    COUNT,
  );
  const proc = await start([
    "run",
    "-A",
    "main.ts",
    "--dataDir",
    dataDir,
    ...dbArgs,
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
  ]);
  const targets: Partial<Record<ScenarioName, Target>> = {};
  // The peers run no file scenario: no photo is uploaded.
  for (const s of scenarios(seeded, "", "", { photo: "" })) {
    const name = SCENARIOS.find((n) => n === s.name);
    if (name) targets[name] = s.target;
  }
  return {
    name: "Moonbase",
    version: await version(),
    database: pgUrl ? "PostgreSQL" : "SQLite",
    proc,
    targets,
    stop: () => stop(proc),
  };
}

/** A bare `Deno.serve` (bench/baseline.ts): Moonbase's ratios divide by it. */
export async function startBareDeno(): Promise<
  Proc & { stop(): Promise<void> }
> {
  const p = await start(["run", "-A", "bench/baseline.ts"]);
  return { ...p, stop: () => stop(p) };
}

/** A bare Node `http` server on the peers' Node: their ratios divide by it. */
export async function startBareNode(
  node: string,
  dir: string,
): Promise<Proc & { stop(): Promise<void> }> {
  const port = freePort();
  const p = await startNode({
    name: "bare Node",
    cmd: [
      node,
      new URL("./bare_node.mjs", import.meta.url).pathname,
      String(port),
    ],
    cwd: dir,
    env: {},
    port,
    ready: "/",
    log: `${dir}/bare_node.log`,
  });
  return { ...p, stop: () => stopNode(p) };
}
