/**
 * One comparison: a peer and Moonbase on the same kind of database, each
 * with its bare server (bare Node for the peer, bare `Deno.serve` for
 * Moonbase), scenario by scenario in alternating short wrk runs, so drift on
 * the shared machine hits all four alike.
 *
 * @module
 */

import { type LoadResult, runLoad, type Target } from "../load.ts";
import { combine, type CpuLoad, loadWithCpu, type Proc } from "../procs.ts";
import { type ScenarioName, SCENARIOS, type System } from "./scenarios.ts";

/** The bare servers' request. */
const BARE: Target = { method: "GET", path: "/" };

/** One scenario's figures. */
export interface Row {
  peer: string;
  version: string;
  database: string;
  scenario: ScenarioName;
  peerLoad: LoadResult;
  bareNode: LoadResult;
  moonbase: LoadResult;
  bareDeno: LoadResult;
  /** /proc/loadavg's 1-minute figure right after the scenario. */
  load1: number;
}

/** The 1-, 5- and 15-minute load averages. */
export function loadAverage(): [number, number, number] {
  const f = Deno.readTextFileSync("/proc/loadavg").split(" ").map(Number);
  return [f[0], f[1], f[2]];
}

const url = (p: Proc) => `http://127.0.0.1:${p.port}`;

/** Measures every scenario `peer` has; logs each as it goes. */
export async function compare(
  peer: System,
  moonbase: System,
  bareNode: Proc,
  bareDeno: Proc,
  rounds: number,
  seconds: number,
): Promise<Row[]> {
  // Warm-up: the JIT keeps improving a server for its first seconds.
  const get = "GET by id (public)";
  await runLoad(url(peer.proc), peer.targets[get]!, 5);
  await runLoad(url(moonbase.proc), moonbase.targets[get]!, 5);
  await runLoad(url(bareNode), BARE, 2);
  await runLoad(url(bareDeno), BARE, 2);
  const rows: Row[] = [];
  for (const scenario of SCENARIOS) {
    const pt = peer.targets[scenario], mt = moonbase.targets[scenario];
    if (!pt || !mt) continue;
    await runLoad(url(peer.proc), pt, 1);
    await runLoad(url(moonbase.proc), mt, 1);
    const runs: CpuLoad[][] = [[], [], [], []];
    for (let i = 0; i < rounds; i++) {
      runs[0].push(await loadWithCpu(bareNode, BARE, seconds));
      runs[1].push(await loadWithCpu(peer.proc, pt, seconds));
      runs[2].push(await loadWithCpu(bareDeno, BARE, seconds));
      runs[3].push(await loadWithCpu(moonbase.proc, mt, seconds));
    }
    const [bareNodeR, peerR, bareDenoR, moonR] = runs.map(combine);
    const row: Row = {
      peer: peer.name,
      version: peer.version,
      database: peer.database,
      scenario,
      peerLoad: peerR,
      bareNode: bareNodeR,
      moonbase: moonR,
      bareDeno: bareDenoR,
      load1: loadAverage()[0],
    };
    rows.push(row);
    console.error(
      `[${peer.name}/${peer.database}] ${scenario}: ${peer.name} ${
        peerR.rps.toFixed(0)
      } req/s (bare Node ${bareNodeR.rps.toFixed(0)}, ratio ${
        (peerR.rps / bareNodeR.rps).toFixed(3)
      }, non-2xx ${peerR.non2xx}); Moonbase ${
        moonR.rps.toFixed(0)
      } req/s (bare Deno ${bareDenoR.rps.toFixed(0)}, ratio ${
        (moonR.rps / bareDenoR.rps).toFixed(3)
      }, non-2xx ${moonR.non2xx}); load ${row.load1.toFixed(2)}`,
    );
  }
  return rows;
}
