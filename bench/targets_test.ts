/**
 * The targets table: verdicts, bare handler figures, CPU budgets, profile
 * links, and what a partial run shows.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { LoadResult } from "./load.ts";
import { BATCH, POSTS, POSTS_EXPAND, S3_FILE, S3_PAIR } from "./rows.ts";
import { bareName, IDLE_RSS, REALTIME_PAIR, type Row } from "./rows.ts";
import {
  checks,
  missed,
  profileFile,
  targetsMet,
  targetsTable,
} from "./targets.ts";

const load = (rps: number, cpu: number, non2xx = 0): LoadResult => ({
  rps,
  p50: 1,
  p99: 2,
  errors: 0,
  non2xx,
  requests: rps,
  tool: "wrk",
  cpuPerRequest: cpu,
});
const row = (db: string, name: string, ratio: number, cpu = 40): Row => ({
  db,
  name,
  moonbase: load(ratio * 1000, cpu),
  baseline: load(1000, 10),
  ratio,
});

Deno.test("targets: verdict, bare handler and CPU budget", () => {
  const rows: Row[] = [
    row("sqlite", "GET by id (public)", 0.4, 25),
    row("sqlite", bareName("GET by id (public)"), 0.6, 18),
    row("sqlite", "health", 0.7),
    { db: "sqlite", name: IDLE_RSS, value: 80 },
  ];
  const get = checks(rows).find((c) => c.name === "GET by id (public)")!;
  assert.equal(get.got, "0.40");
  assert.equal(get.ok, false);
  assert.equal(get.bare, "0.60 (18.0 µs)");
  assert.equal(get.cpu, 25);
  assert.equal(get.budget, 20); // 10 µs ÷ 0.5
  assert.ok(checks(rows).find((c) => c.name === "health")!.ok);
  assert.deepEqual(missed(rows).map((c) => c.name), ["GET by id (public)"]);
  assert.equal(targetsMet(rows), false);
});

Deno.test("targets: only the databases measured; own checks", () => {
  const rows: Row[] = [
    row("postgres", "list 50", 0.13),
    { db: "postgres", name: IDLE_RSS, value: 120 },
  ];
  const cs = checks(rows);
  assert.ok(cs.every((c) => c.db === "postgres"));
  assert.deepEqual(
    cs.map((c) => [c.name, c.got, c.ok]),
    [
      ["health", "not measured", false],
      ["GET by id (public)", "not measured", false],
      ["GET by id (token + custom rule)", "not measured", false],
      ["list 50", "0.13", true],
      ["list filter + sort", "not measured", false],
      ["create", "not measured", false],
      ["idle RSS", "120 MB", false],
      ["errors and non-2xx", "0", true],
    ],
  );
  // Not measured is neither missed nor a failure; the idle RSS is.
  assert.deepEqual(missed(rows), []);
  assert.equal(targetsMet(rows), false);
});

Deno.test("targets: the PostgreSQL bare handler shows beside its target", () => {
  const rows: Row[] = [
    row("postgres", "list 50", 0.09, 120),
    row("postgres", bareName("list 50"), 0.125, 68),
    row("sqlite", bareName("list 50"), 0.2, 40),
  ];
  const list = checks(rows).find((c) =>
    c.db === "postgres" && c.name === "list 50"
  )!;
  assert.deepEqual([list.got, list.ok, list.bare], [
    "0.090",
    false,
    "0.13 (68.0 µs)",
  ]);
  assert.match(
    targetsTable(rows),
    /\| postgres \| list 50 \| ≥ 0\.12 \| 0\.090 \| NO \| 0\.13 \(68\.0 µs\) \|/,
  );
});

Deno.test("targets: a ratio below 0.1 shows a third digit", () => {
  const [c] = checks([row("postgres", "create", 0.047)]).filter((c) =>
    c.name === "create"
  );
  assert.deepEqual([c.got, c.ok], ["0.047", false]);
});

Deno.test("targets: the table links the profiles made", () => {
  const rows: Row[] = [row("sqlite", REALTIME_PAIR, 0.8)];
  const key = `sqlite/${REALTIME_PAIR}`;
  const file = profileFile("sqlite", REALTIME_PAIR);
  assert.equal(
    file,
    "sqlite_get_by_id_realtime_on_1_000_idle_subscribers_off_paired.md",
  );
  const table = targetsTable(rows, new Set([key]));
  assert.match(
    table,
    new RegExp(`\\| 0\\.80 \\| NO \\|.*\\(profiles/${file}\\)`),
  );
  assert.match(table, /\| health \| ≥ 0\.6 \| not measured \| – \|/);
});

Deno.test("targets: a goal against another row of the same run", () => {
  const rows: Row[] = [
    row("sqlite", "create", 0.2),
    row("sqlite", BATCH, 0.12),
    row("sqlite", POSTS, 0.2),
    row("sqlite", POSTS_EXPAND, 0.13),
  ];
  const cs = checks(rows);
  const batch = cs.find((c) => c.name.startsWith("batch of 10"))!;
  // 0.12 × 10 ÷ 0.2 = 6 times the records per second.
  assert.deepEqual([batch.got, batch.ok], ["6.00", true]);
  const expand = cs.find((c) => c.name.startsWith("list 50 with expand"))!;
  assert.deepEqual([expand.got, expand.ok], ["0.65", false]);
  // A missed goal against another row profiles its scenario.
  assert.deepEqual(missed(rows).map((c) => c.scenario ?? c.name), [
    "create",
    POSTS_EXPAND,
  ]);
});

Deno.test("targets: a figure without a goal shows, never missed", () => {
  const rows: Row[] = [
    row("postgres", S3_PAIR, 0.4, 300),
    row("postgres", bareName(S3_FILE), 0.05, 90),
  ];
  const [s3] = checks(rows).filter((c) => c.scenario === S3_PAIR);
  assert.deepEqual(
    [s3.name, s3.got, s3.ok, s3.bare, s3.cpu, s3.budget],
    [
      "file served from S3 ÷ from disk (same photo)",
      "0.40 (400 ÷ 1000 req/s)",
      true,
      "50 req/s (90.0 µs)",
      300,
      undefined,
    ],
  );
  assert.deepEqual(missed(rows), []);
  assert.equal(targetsMet(rows), true);
  assert.match(
    targetsTable(rows),
    /\| postgres \| file served from S3 ÷ from disk \(same photo\) \| none \(a figure\) \| 0\.40 \(400 ÷ 1000 req\/s\) \| – \| 50 req\/s \(90\.0 µs\) \| 300\.0 \|/,
  );
});
