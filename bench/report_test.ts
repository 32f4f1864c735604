/**
 * The report file: a full run rewrites it and keeps the History, the
 * soak and the insert sections; a realtime-only run replaces only its section; a run with
 * no path writes nothing.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { LoadResult } from "./load.ts";
import type { RealtimeRow } from "./realtime_report.ts";
import { writeResults } from "./report.ts";
import type { Row } from "./rows.ts";
import { soakSection, writeSoak } from "./soak_report.ts";
import { writeInsertsSection } from "./inserts_report.ts";

const load = (rps: number): LoadResult => ({
  rps,
  p50: 1,
  p99: 2,
  errors: 0,
  non2xx: 0,
  requests: rps,
  tool: "wrk",
  cpuPerRequest: 10,
});
const rows: Row[] = [
  {
    db: "sqlite",
    name: "health",
    moonbase: load(700),
    baseline: load(1000),
    ratio: 0.7,
  },
  { db: "sqlite", name: "GET by id: --workers 2 ÷ 1 (paired)", text: "n/a" },
];
const rt = (value: number): RealtimeRow[] => [
  { db: "sqlite", key: "p50", name: "paced p50", value, unit: "ms" },
];
const base = { runs: "1 round", label: "", profiles: new Set<string>() };

Deno.test("report: rewrite keeps History and soak, realtime-only splices", async () => {
  const path = await Deno.makeTempFile({ suffix: ".md" });
  try {
    await writeResults({ ...base, rows, realtime: rt(11), path });
    const samples = [1, 2, 3].map((i) => ({
      s: i,
      requests: i,
      rps: 1,
      non2xx: 0,
      s5xx: 0,
      errors: 0,
      rss: 90,
    }));
    const run = { minutes: 1, connections: 1, interval: 1, idle: 80, date: "" };
    await writeSoak(
      path,
      "sqlite",
      soakSection({ db: "sqlite", ...run }, samples),
    );
    await writeInsertsSection(
      path,
      "<!-- inserts:postgres:start -->\n## Inserts through the client: postgres\n<!-- inserts:postgres:end -->",
      "postgres",
    );
    await writeResults({
      ...base,
      rows,
      realtime: [],
      path,
      profiles: new Set(["sqlite/health"]),
    });
    let text = await Deno.readTextFile(path);
    assert.match(text, /\| sqlite \| health \| ≥ 0\.6 \| 0\.70 \| yes \|/);
    assert.match(text, /\[profile\]\(profiles\/sqlite_health\.md\)/);
    assert.match(text, /\| GET by id: --workers 2 ÷ 1 \(paired\) \| n\/a \|/);
    // The previous realtime and soak sections are carried over, once each.
    assert.equal(text.match(/## Realtime/g)?.length, 1);
    assert.match(text, /\| sqlite \| paced p50 \| 11\.0 ms \|/);
    assert.equal(text.match(/## Memory soak: sqlite/g)?.length, 1);
    assert.equal(
      text.match(/## Inserts through the client: postgres/g)?.length,
      1,
    );
    assert.equal(text.split("## History\n")[1].trim().split("\n").length, 2);
    // A realtime-only run: only that section changes.
    await writeResults({ ...base, rows: [], realtime: rt(22), path });
    text = await Deno.readTextFile(path);
    assert.match(text, /\| sqlite \| paced p50 \| 22\.0 ms \|/);
    assert.doesNotMatch(text, /11\.0 ms/);
    assert.match(text, /\| sqlite \| health \| ≥ 0\.6 \| 0\.70 \| yes \|/);
    assert.equal(text.match(/## Memory soak: sqlite/g)?.length, 1);
    assert.equal(text.split("## History\n")[1].trim().split("\n").length, 3);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("report: no path, nothing written", async () => {
  const text = await writeResults({ ...base, rows, realtime: [] });
  assert.match(text, /^# Benchmark results/);
  assert.match(text, /## History\n- .*sqlite\/health=0\.70\n$/);
});
