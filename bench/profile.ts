/**
 * Profiles of `deno task bench --profile`: a scenario served by a Moonbase
 * started under `deno run --cpu-prof`, warmed up, loaded (wrk -c32), then
 * stopped (SIGTERM: it exits and V8 writes the `.cpuprofile`), summarised by
 * bench/cpuprofile.ts into `bench/profiles/<db>_<scenario>.md`.
 *
 * @module
 */

import { runLoad, type Target } from "./load.ts";
import { loadWithCpu, start, stop } from "./procs.ts";
import { type CpuProfile, summarise, summaryMarkdown } from "./cpuprofile.ts";
import { profileFile } from "./targets.ts";
import { Subscribers } from "./subscriber_process.ts";

/** One scenario to profile. */
export interface ProfileJob {
  db: string;
  /** The row's name (the file's name comes from it). */
  name: string;
  /** `deno` arguments of the server (`run` first). */
  serverArgs: string[];
  /** The server's environment beyond the bench's own (procs.ts `start`). */
  env?: Record<string, string>;
  target: Target;
  /** Idle SSE subscribers to hold open while it runs. */
  subscribers?: { count: number; path: string };
  /** Seconds of measured load (after a warm-up of 3 s). */
  seconds: number;
  /** What else the summary should say (how the server was started…). */
  note?: string;
}

/** The directory of the summaries. */
export const PROFILES_DIR = new URL("./profiles/", import.meta.url);
const ROOT = new URL("../", import.meta.url).href;

async function waitForFile(path: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // Not there yet: wait (the deadline below says when it never came).
    if (await Deno.stat(path).then(() => true, () => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Cannot read the profile: ${path} was not written`);
}

/**
 * The Web Workers' profiles (`server.worker-N.cpuprofile`: the request log
 * writer; with `--workers`, the other isolates), each named by its entry
 * module when it is one of those.
 */
async function workerSections(dir: string): Promise<string> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (/^server\.worker-\d+\.cpuprofile$/.test(e.name)) names.push(e.name);
  }
  names.sort((a, b) => Number(/\d+/.exec(a)) - Number(/\d+/.exec(b)));
  const out: string[] = [];
  for (const name of names) {
    const p = JSON.parse(await Deno.readTextFile(`${dir}/${name}`));
    const urls = new Set((p as CpuProfile).nodes.map((n) => n.callFrame.url));
    const first = urls.has(`${ROOT}lib/logs/writer_worker.ts`)
      ? "the request log writer"
      : urls.has(`${ROOT}lib/workers/worker.ts`)
      ? "a serving isolate"
      : "?";
    out.push(
      `## Worker ${/\d+/.exec(name)?.[0]} (${first})\n\n${
        summaryMarkdown(summarise(p, ROOT, 10))
      }`,
    );
  }
  return out.join("\n");
}

/** Profiles one scenario; returns the summary's path. */
export async function profileScenario(job: ProfileJob): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mb_bench_prof_" });
  const file = `${dir}/server.cpuprofile`;
  const server = await start([
    "run",
    "--cpu-prof",
    "--cpu-prof-dir",
    dir,
    "--cpu-prof-name",
    "server.cpuprofile",
    ...job.serverArgs.slice(1),
  ], job.env);
  const subs = job.subscribers
    ? new Subscribers(server.port, job.subscribers.path)
    : undefined;
  try {
    if (subs && job.subscribers) await subs.open(job.subscribers.count);
    await runLoad(`http://127.0.0.1:${server.port}`, job.target, 3);
    const r = await loadWithCpu(server, job.target, job.seconds);
    await subs?.close();
    await stop(server);
    await waitForFile(file, 10_000);
    const profile = JSON.parse(await Deno.readTextFile(file));
    const md = `# Profile: ${job.db}, ${job.name}

\`${job.target.method} ${
      decodeURIComponent(job.target.path).slice(0, 160)
    }\` against a Moonbase started with \`deno run --cpu-prof\`${
      job.note ? ` (${job.note})` : ""
    }: 3 s of warm-up, then ${job.seconds} s of load (32 connections) at ${
      r.rps.toFixed(0)
    } req/s, ${
      (r.cpu / Math.max(1, r.requests)).toFixed(1)
    } µs of server CPU per request (all threads),
${r.non2xx} non-2xx. The profiles cover the server's threads over their whole life (start-up
and warm-up included); profiling slows them down, so read shares, not absolute times. Native
functions (V8 builtins, Deno ops, \`node:sqlite\` statements) have no file: each names its caller. Written by
\`deno task bench --profile\` on ${new Date().toISOString()}.

## Main thread

${summaryMarkdown(summarise(profile, ROOT))}
${await workerSections(dir)}`;
    await Deno.mkdir(PROFILES_DIR, { recursive: true });
    const out = new URL(profileFile(job.db, job.name), PROFILES_DIR);
    await Deno.writeTextFile(out, md);
    // Tables as `deno fmt` lays them out (the repository's check runs it).
    await new Deno.Command(Deno.execPath(), {
      args: ["fmt", "--quiet", out.pathname],
    }).output();
    return out.pathname;
  } finally {
    // Cleanup after the profile is written (or the error that is thrown):
    // subscribers already gone and a scratch directory left behind harm nothing.
    await subs?.close().catch(() => {});
    await stop(server);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
