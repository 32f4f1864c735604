/**
 * Server processes of the benchmark: started as children of this process
 * (ready once they print `listening <port>`), stopped, and watched from
 * /proc (CPU time, resident memory), with load runs that also measure the
 * server's CPU time per request.
 *
 * @module
 */

import { type LoadResult, runLoad, type Target } from "./load.ts";

/** The token-signing secret every benchmarked server gets. */
export const SECRET = "bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz";

/** A started server process. */
export interface Proc {
  child: Deno.ChildProcess;
  port: number;
}

/** Starts `deno <cmd…>` and waits until it prints the port it listens on. */
export async function start(
  cmd: string[],
  env: Record<string, string> = {},
): Promise<Proc> {
  const child = new Deno.Command(Deno.execPath(), {
    args: cmd,
    stdout: "piped",
    stderr: "inherit",
    env: { MB_JWT_SECRET: SECRET, NO_COLOR: "1", ...env },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`Cannot start ${cmd.join(" ")}`);
    buf += value;
    const m = /listening (?:on http:\/\/[^:]+:)?(\d+)/.exec(buf);
    if (m) {
      // Keep draining stdout (request logs) so the pipe never fills.
      (async () => {
        while (!(await reader.read()).done) { /* discard */ }
      })();
      return { child, port: Number(m[1]) };
    }
  }
}

/** Stops a server and waits for it to exit. */
export async function stop(p: Proc): Promise<void> {
  try {
    p.child.kill("SIGTERM");
  } catch { /* gone */ }
  await p.child.status;
}

/** CPU time (user + system, all threads) a process has used, in µs. */
export function cpuUs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000; // clock ticks of 10 ms
}

/** Resident memory of a process (VmRSS), in bytes. */
export function rssBytes(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** A load run with the server's CPU time over it (µs). */
export type CpuLoad = LoadResult & { cpu: number };

/**
 * Runs `t` against a server for `seconds`, with the server's CPU time per
 * request (a steadier figure than req/s on a shared 2-core machine).
 */
export async function loadWithCpu(
  p: Proc,
  t: Target,
  seconds: number,
): Promise<CpuLoad> {
  const before = cpuUs(p.child.pid);
  const r = await runLoad(`http://127.0.0.1:${p.port}`, t, seconds);
  return { ...r, cpu: cpuUs(p.child.pid) - before };
}

/** Sums rounds: req/s over the whole time, median latencies, summed errors. */
export function combine(rs: CpuLoad[]): LoadResult {
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
  const requests = rs.reduce((a, r) => a + r.requests, 0);
  return {
    rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
    requests,
    tool: rs[0].tool,
    cpuPerRequest: rs.reduce((a, r) => a + r.cpu, 0) / Math.max(1, requests),
  };
}
