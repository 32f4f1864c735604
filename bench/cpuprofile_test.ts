/**
 * The profile summariser: self time per function, file and area from a
 * small hand-made profile, and from a real one written by
 * `deno run --cpu-prof`.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  areaOf,
  type CpuProfile,
  shortUrl,
  summarise,
  summaryMarkdown,
} from "./cpuprofile.ts";

const ROOT = "file:///app/";
const frame = (functionName: string, url: string, lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber: 0,
});

/** root → handle (lib/a.ts) → query (npm postgres); plus idle and GC. */
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)", ""), children: [2, 3, 4, 6] },
    { id: 2, callFrame: frame("(idle)", "") },
    {
      id: 3,
      callFrame: frame("handle", `${ROOT}lib/a.ts`, 9),
      children: [5],
    },
    { id: 4, callFrame: frame("(garbage collector)", "") },
    {
      id: 5,
      callFrame: frame(
        "query",
        "file:///root/.cache/deno/npm/registry.npmjs.org/postgres/3.4.7/src/q.js",
        4,
      ),
    },
    { id: 6, callFrame: frame("serve", "ext:deno_http/00_serve.ts", 1) },
  ],
  // Each sample lasts until the next one: 3 → 4 ms, 5 → 2 ms, 2 → 10 ms,
  // 4 → 1 ms, 6 → 3 ms, and the last (3) as long as the one before (3 ms).
  samples: [3, 5, 2, 4, 6, 3],
  timeDeltas: [0, 4000, 2000, 10000, 1000, 3000],
};

Deno.test("cpuprofile: self time per function, idle apart", () => {
  const s = summarise(PROFILE, ROOT);
  assert.equal(s.idleMs, 10);
  assert.equal(s.busyMs, 13);
  assert.equal(s.samples, 6);
  assert.deepEqual(
    s.functions.map((f) => [f.name, f.where, f.ms]),
    [
      ["handle", "lib/a.ts:10", 7],
      ["serve", "ext:deno_http/00_serve.ts:2", 3],
      ["query", "npm:postgres/src/q.js:5", 2],
      ["(garbage collector)", "", 1],
    ],
  );
  assert.equal(s.functions[0].share, 7 / 13);
});

Deno.test("cpuprofile: self time per file and per area", () => {
  const s = summarise(PROFILE, ROOT);
  assert.deepEqual(s.files.map((f) => [f.name, f.ms]), [
    ["lib/a.ts", 7],
    ["ext:deno_http/00_serve.ts", 3],
    ["npm:postgres/src/q.js", 2],
    ["(garbage collector)", 1],
  ]);
  assert.deepEqual(s.areas.map((f) => [f.name, f.ms]), [
    ["Moonbase: lib/", 7],
    ["Deno runtime", 3],
    ["npm packages", 2],
    ["(garbage collector)", 1],
  ]);
});

Deno.test("cpuprofile: a native function names its caller", () => {
  const p: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame("(root)", ""), children: [2] },
      { id: 2, callFrame: frame("rows", `${ROOT}lib/db.ts`, 3), children: [3] },
      { id: 3, callFrame: frame("all", "") },
    ],
    samples: [3, 3],
    timeDeltas: [0, 500],
  };
  const s = summarise(p, ROOT);
  assert.deepEqual(s.functions.map((f) => [f.name, f.where, f.ms]), [
    ["all", "native, from rows lib/db.ts:4", 1],
  ]);
  assert.deepEqual(s.files.map((f) => f.name), ["all (native)"]);
  assert.deepEqual(s.areas.map((f) => f.name), ["(native)"]);
});

Deno.test("cpuprofile: the limit keeps the largest entries", () => {
  const s = summarise(PROFILE, ROOT, 2);
  assert.deepEqual(s.functions.map((f) => f.name), ["handle", "serve"]);
  assert.equal(s.files.length, 2);
});

Deno.test("cpuprofile: urls and areas", () => {
  assert.equal(shortUrl(`${ROOT}main.ts`, ROOT), "main.ts");
  assert.equal(
    shortUrl(
      "file:///c/npm/registry.npmjs.org/@scope/pkg/1.0.0/dist/x.js",
      ROOT,
    ),
    "npm:@scope/pkg/dist/x.js",
  );
  assert.equal(shortUrl("", ROOT), "(native)");
  assert.equal(areaOf(frame("f", `${ROOT}main.ts`), ROOT), "Moonbase: main.ts");
  assert.equal(areaOf(frame("f", "node:sqlite"), ROOT), "Deno runtime");
  assert.equal(areaOf(frame("(program)", ""), ROOT), "(program)");
  assert.equal(areaOf(frame("JSON.stringify", ""), ROOT), "(native)");
});

Deno.test("cpuprofile: markdown tables, pipes escaped", () => {
  const p: CpuProfile = {
    ...PROFILE,
    nodes: PROFILE.nodes.map((n) =>
      n.id === 6 ? { ...n, callFrame: frame("a|b", "ext:x.ts") } : n
    ),
  };
  const md = summaryMarkdown(summarise(p, ROOT));
  assert.match(md, /13 ms busy, 10 ms idle, 6 samples/);
  assert.match(md, /\| 1 \| handle \| lib\/a\.ts:10 \| 7\.0 \| 53\.8% \|/);
  assert.match(md, /a\\\|b/);
  assert.match(md, /### Self time by file \(top 4\)/);
});

Deno.test("cpuprofile: a profile written by deno run --cpu-prof", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_cpuprof_" });
  try {
    const script = `${dir}/busy.js`;
    await Deno.writeTextFile(
      script,
      "function spin(){let s=0;for(let i=0;i<5e7;i++)s+=i%7;return s}\n" +
        "console.log(spin());\n",
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--cpu-prof",
        "--cpu-prof-dir",
        dir,
        "--cpu-prof-name",
        "p.cpuprofile",
        script,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const profile = JSON.parse(await Deno.readTextFile(`${dir}/p.cpuprofile`));
    const s = summarise(profile, `file://${dir}/`);
    assert.equal(s.functions[0].name, "spin");
    assert.equal(s.functions[0].where, "busy.js:1");
    assert.ok(s.functions[0].share > 0.5, `${s.functions[0].share}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
