/**
 * `deno task bench:backup [--records 100000] [--mib 200]`: memory and time
 * of a backup and a restore of a large project (SQLite), to show both are
 * streamed. Seeds `--records` records (one statement) and `--mib` MiB of
 * files (8 MiB each, recorded in the file ledger), makes a backup, restores
 * it into the same server, and samples the process's RSS every 20 ms; prints
 * the peak above the baseline beside the archive's size.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { createApp } from "../mod.ts";
import { internalApp } from "../lib/internal_app.ts";

const args = parseArgs({
  args: Deno.args,
  options: { records: { type: "string" }, mib: { type: "string" } },
});
const RECORDS = Number(args.values.records ?? 100_000);
const MIB = Number(args.values.mib ?? 200);
const FILE_MIB = 8;

const dataDir = await Deno.makeTempDir({ prefix: "mb_bench_backup_" });
const mib = (n: number) => `${(n / 1048576).toFixed(0)} MiB`;

/** Peak RSS above `base` while `fn` runs (sampled every 20 ms). */
async function peak<T>(fn: () => Promise<T>): Promise<[T, number, number]> {
  let top = Deno.memoryUsage().rss;
  const timer = setInterval(() => {
    top = Math.max(top, Deno.memoryUsage().rss);
  }, 20);
  const start = performance.now();
  try {
    const out = await fn();
    return [out, top, performance.now() - start];
  } finally {
    clearInterval(timer);
  }
}

const app = internalApp(
  await createApp({
    dataDir,
    quiet: true,
    jwtSecret: "bench-secret-0123456789-abcdefghijklmnop",
    migrationsDir: `${dataDir}/migrations`,
  }),
);
try {
  const notes = await app.schemas.create({
    name: "notes",
    type: "base",
    fields: [{ name: "body", type: "text" }, { name: "n", type: "int" }],
  });
  await app.storage.run(
    `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${RECORDS}) INSERT INTO "notes" ("id", "created", "updated", "body", "n") SELECT 'n' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'a note of some length, number ' || i, i FROM c`,
  );
  const chunk = crypto.getRandomValues(new Uint8Array(1 << 16));
  for (let f = 0; f < Math.ceil(MIB / FILE_MIB); f++) {
    const name = `blob${f}_${String(f).padStart(10, "0")}.bin`;
    const body = (async function* () {
      for (let i = 0; i < (FILE_MIB << 20) / chunk.length; i++) yield chunk;
    })();
    await app.files.writeNamed(notes.id, name, FILE_MIB << 20, body);
  }
  // Settle what seeding allocated, then measure from here.
  await new Promise((r) => setTimeout(r, 500));
  const base = Deno.memoryUsage().rss;
  const [made, madePeak, madeMs] = await peak(() =>
    app.backups.create("bench")
  );
  const [, restoredPeak, restoredMs] = await peak(() =>
    app.backups.restore("bench")
  );
  console.log(
    `backup of ${RECORDS} records and ${MIB} MiB of files: archive ${
      mib(made.size)
    }, made in ${(madeMs / 1000).toFixed(1)} s, restored in ${
      (restoredMs / 1000).toFixed(1)
    } s`,
  );
  console.log(
    `RSS: baseline ${mib(base)}; peak while backing up ${mib(madePeak)} (+${
      mib(madePeak - base)
    }); peak while restoring ${mib(restoredPeak)} (+${
      mib(restoredPeak - base)
    })`,
  );
} finally {
  await app.close();
  await Deno.remove(dataDir, { recursive: true });
}
