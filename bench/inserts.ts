/**
 * `deno task bench:inserts [--pg] [--n 100000] [--concurrency 64]`:
 * TrailBase's insert benchmark. A separate process inserts `n` chat
 * messages through `@moonbase/client` at `concurrency`, then the same
 * against a bare `Deno.serve` doing the same INSERT (bench/inserts_run.ts),
 * on SQLite and with `--pg` also on a throwaway PostgreSQL (fsync on;
 * `--pg-only`: PostgreSQL alone).
 * Prints each database's section and writes it into bench/results.md (or
 * `--out <file>`). With `--profile`, Moonbase runs under `--cpu-prof`
 * instead and the summary goes to `bench/profiles/<db>_inserts_client.md`
 * (results.md is left alone: the profiler slows the server down).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { benchInserts, type InsertsResult, PROFILE } from "./inserts_run.ts";
import { type CpuProfile, summarise, summaryMarkdown } from "./cpuprofile.ts";
import { PROFILES_DIR } from "./profile.ts";
import {
  insertsSection,
  loadAverage,
  machine,
  writeInsertsSection,
} from "./inserts_report.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    pg: { type: "boolean" },
    "pg-only": { type: "boolean" },
    n: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "64" },
    out: { type: "string", default: "bench/results.md" },
    profile: { type: "boolean" },
  },
});
const n = Number(args.values.n), concurrency = Number(args.values.concurrency);
if (!(n >= 1) || !(concurrency >= 1)) {
  throw new Error("Cannot run: --n and --concurrency must be at least 1");
}
const dbs = args.values["pg-only"]
  ? ["postgres"] as const
  : args.values.pg
  ? ["sqlite", "postgres"] as const
  : ["sqlite"] as const;

/** Writes the summary of a profiled run; returns its path. */
async function writeProfile(dir: string, r: InsertsResult): Promise<string> {
  const root = new URL("../", import.meta.url).href;
  const profile: CpuProfile = JSON.parse(
    await Deno.readTextFile(`${dir}/${PROFILE}`),
  );
  const m = r.moonbase;
  const out = new URL(`${r.db}_inserts_client.md`, PROFILES_DIR);
  await Deno.mkdir(PROFILES_DIR, { recursive: true });
  await Deno.writeTextFile(
    out,
    `# Profile: ${r.db}, ${m.n} inserts through the client

\`deno task bench:inserts${
      r.db === "postgres" ? " --pg-only" : ""
    } --profile --n ${m.n} --concurrency ${m.concurrency}\`
(${new Date().toISOString()}): Moonbase started with \`deno run --cpu-prof\`,
${m.n} chat messages through \`@moonbase/client\` at ${m.concurrency} in flight from a
separate process (bench/inserts.ts) at ${
      Math.round(m.n / (m.ms / 1000))
    } records/s,
${
      Math.round(m.serverCpu / m.n)
    } µs of server CPU per insert (all threads; the bare handler in
the same run: ${
      Math.round(r.bare.serverCpu / r.bare.n)
    } µs). The profile covers the main thread over
its whole life (start-up included); profiling slows it down, so read shares, not absolute
times. Native functions (V8 builtins, Deno ops, \`node:sqlite\` statements) have no file:
each names its caller.

## Main thread

${summaryMarkdown(summarise(profile, root))}`,
  );
  // Tables as `deno fmt` lays them out (the repository's check runs it).
  await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", out.pathname],
  }).output();
  return out.pathname;
}

for (const db of dbs) {
  if (args.values.profile) {
    const profileDir = await Deno.makeTempDir({ prefix: "mb_inserts_prof_" });
    const r = await benchInserts({ db, n, concurrency, profileDir });
    console.log(`profile: ${await writeProfile(profileDir, r)}`);
    await Deno.remove(profileDir, { recursive: true }).catch(() => {});
    continue;
  }
  const loadBefore = loadAverage();
  const result = await benchInserts({ db, n, concurrency });
  const section = insertsSection(result, {
    ...machine(),
    loadBefore,
    loadAfter: loadAverage(),
    at: new Date().toISOString(),
  });
  console.log(section);
  await writeInsertsSection(args.values.out, section, db);
}
Deno.exit(0);
