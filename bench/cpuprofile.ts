/**
 * Summarises a V8 `.cpuprofile` (as `deno run --cpu-prof` writes it): self
 * time per function, per file and per area (Moonbase's code, Deno's
 * runtime, npm packages, the garbage collector…), as markdown tables.
 *
 * Self time of a sample is the time until the next sample (`timeDeltas`);
 * `(idle)` time is reported apart and left out of the percentages, so they
 * are shares of the time the main thread was busy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarise } from "moonbase/bench/cpuprofile.ts";
 * const frame = (functionName: string, url: string) =>
 *   ({ functionName, url, lineNumber: 0, columnNumber: 0 });
 * const s = summarise({
 *   nodes: [
 *     { id: 1, callFrame: frame("(root)", ""), children: [2] },
 *     { id: 2, callFrame: frame("handle", "file:///app/lib/a.ts") },
 *   ],
 *   samples: [2, 2],
 *   timeDeltas: [0, 1000],
 * }, "file:///app/");
 * assert.equal(s.functions[0].name, "handle");
 * assert.equal(s.functions[0].where, "lib/a.ts:1");
 * ```
 *
 * @module
 */

/** A call frame of the profile. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** A node of the profile's call tree. */
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a `.cpuprofile` the summary reads. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  /** µs between a sample and the one before it. */
  timeDeltas: number[];
}

/** Self time of one function, file or area. */
export interface Entry {
  name: string;
  /** The file and line (functions only). */
  where: string;
  /** Self time in ms. */
  ms: number;
  /** Share of the busy time, 0..1. */
  share: number;
}

/** What the profile says. */
export interface Summary {
  /** Sampled time the main thread was busy (ms). */
  busyMs: number;
  /** Sampled time it was idle (ms). */
  idleMs: number;
  samples: number;
  functions: Entry[];
  files: Entry[];
  areas: Entry[];
}

const IDLE = "(idle)";

/** A file's URL shown relative to `root`, npm packages by name. */
export function shortUrl(url: string, root: string): string {
  if (url === "") return "(native)";
  if (url.startsWith(root)) return url.slice(root.length);
  const npm = /\/npm\/[^/]+\/(@[^/]+\/[^/]+|[^/]+)\/[^/]+\/(.*)$/.exec(url);
  if (npm) return `npm:${npm[1]}/${npm[2]}`;
  return url;
}

/** The area a frame belongs to. */
export function areaOf(frame: CallFrame, root: string): string {
  const { url, functionName } = frame;
  if (url === "") {
    return functionName.startsWith("(") ? functionName : "(native)";
  }
  if (url.startsWith(root)) {
    const rel = url.slice(root.length);
    return rel.includes("/")
      ? `Moonbase: ${rel.split("/")[0]}/`
      : `Moonbase: ${rel}`;
  }
  if (/\/npm\//.test(url)) return "npm packages";
  if (url.startsWith("ext:") || url.startsWith("node:")) return "Deno runtime";
  return "other";
}

function top(
  m: Map<string, { where: string; us: number }>,
  busyUs: number,
  n: number,
): Entry[] {
  return [...m.entries()]
    .sort((a, b) => b[1].us - a[1].us)
    .slice(0, n)
    .map(([name, v]) => ({
      name,
      where: v.where,
      ms: v.us / 1000,
      share: busyUs > 0 ? v.us / busyUs : 0,
    }));
}

/** Self time per function, file and area (the `limit` largest of each). */
export function summarise(
  profile: CpuProfile,
  root: string,
  limit = 15,
): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const selfUs = new Map<number, number>();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i++) {
    // The time until the next sample (the last one gets the one before it).
    const us = timeDeltas[i + 1] ?? timeDeltas[i] ?? 0;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, us));
  }
  const fns = new Map<string, { where: string; us: number }>();
  const files = new Map<string, { where: string; us: number }>();
  const areas = new Map<string, { where: string; us: number }>();
  const add = (
    m: Map<string, { where: string; us: number }>,
    key: string,
    where: string,
    us: number,
  ) => {
    const e = m.get(key) ?? { where, us: 0 };
    e.us += us;
    m.set(key, e);
  };
  let busyUs = 0, idleUs = 0;
  for (const [id, us] of selfUs) {
    const f = byId.get(id)?.callFrame;
    if (!f) continue;
    if (f.functionName === IDLE) {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const file = shortUrl(f.url, root);
    let where = f.url === "" ? "" : `${file}:${f.lineNumber + 1}`;
    if (f.url === "" && !f.functionName.startsWith("(")) {
      // A native function (V8 builtin, Deno op, node:sqlite…): name its caller.
      const up = byId.get(parent.get(id) ?? -1)?.callFrame;
      if (up && up.url !== "") {
        where = `native, from ${up.functionName || "(anonymous)"} ${
          shortUrl(up.url, root)
        }:${up.lineNumber + 1}`;
      }
    }
    const name = f.functionName || "(anonymous)";
    add(fns, where ? `${name} ${where}` : name, where, us);
    const native = f.url === "" && !name.startsWith("(");
    add(
      files,
      f.url !== "" ? file : native ? `${name} (native)` : name,
      "",
      us,
    );
    add(areas, areaOf(f, root), "", us);
  }
  const fnEntries = top(fns, busyUs, limit).map((e) => ({
    ...e,
    name: e.where ? e.name.slice(0, -e.where.length - 1) : e.name,
  }));
  return {
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    samples: samples.length,
    functions: fnEntries,
    files: top(files, busyUs, limit),
    areas: top(areas, busyUs, limit),
  };
}

const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("`", "'");
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The summary as markdown: busy time, then the three tables. */
export function summaryMarkdown(s: Summary): string {
  const rows = (es: Entry[], fn: boolean) =>
    es.map((e, i) =>
      `| ${i + 1} | ${cell(e.name)} |${fn ? ` ${cell(e.where)} |` : ""} ${
        e.ms.toFixed(1)
      } | ${pct(e.share)} |`
    ).join("\n");
  return `This thread: ${s.busyMs.toFixed(0)} ms busy, ${
    s.idleMs.toFixed(0)
  } ms idle, ${s.samples} samples. Shares are of the busy time.

### Self time by area

| # | area | self ms | share |
|---:|---|---:|---:|
${rows(s.areas, false)}

### Self time by function (top ${s.functions.length})

| # | function | where | self ms | share |
|---:|---|---|---:|---:|
${rows(s.functions, true)}

### Self time by file (top ${s.files.length})

| # | file | self ms | share |
|---:|---|---:|---:|
${rows(s.files, false)}
`;
}
