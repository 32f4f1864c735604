/**
 * `deno task bench:inserts [--pg] [--n 100000] [--concurrency 64]`:
 * TrailBase's insert benchmark. A separate process inserts `n` chat
 * messages through `@moonbase/client` at `concurrency`, then the same
 * against a bare `Deno.serve` doing the same INSERT (bench/inserts_run.ts),
 * on SQLite and with `--pg` also on a throwaway PostgreSQL (fsync on).
 * Prints each database's section and writes it into bench/results.md (or
 * `--out <file>`).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { benchInserts } from "./inserts_run.ts";
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

for (const db of dbs) {
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
