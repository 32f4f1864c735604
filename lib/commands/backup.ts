/**
 * The backup commands of the CLI (main.ts): `backup create [--out <file>]`,
 * `backup list`, `backup restore <file|name>` (server stopped) and
 * `move-to --database PSQL --connection <url>`, the whole SQLite project
 * into an empty PostgreSQL database, verified table by table.
 *
 * @module
 */

import { join } from "node:path";
import type { AppConfig } from "../config.ts";
import { type Core, createCore } from "../core.ts";
import { MoonbaseError } from "../errors.ts";
import { PostgresStorage } from "../db/postgres.ts";
import { progressPrinter, type ProgressSink } from "../backup/progress.ts";
import { tableDigests } from "../backup/digest.ts";
import { UsageMistake } from "./usage.ts";

/** Progress to stderr: redrawn on a terminal, plain lines otherwise. */
function stderrSink(): ProgressSink {
  const enc = new TextEncoder();
  return {
    tty: Deno.stderr.isTerminal(),
    write: (text) => Deno.stderr.writeSync(enc.encode(text)),
  };
}

async function withCore<T>(
  config: AppConfig,
  fn: (core: Core) => Promise<T>,
): Promise<T> {
  // A command: it neither sweeps files nor prunes logs.
  const core = await createCore({ ...config, quiet: true }, "command");
  try {
    return await fn(core);
  } finally {
    await core.close();
  }
}

/** `backup create|list|restore`. */
export async function backupCommand(
  config: AppConfig,
  rest: string[],
  out: string | undefined,
): Promise<void> {
  const [action, arg, ...extra] = rest;
  if (extra.length) throw new UsageMistake(`unexpected ${extra.join(" ")}`);
  if (action === "create") {
    await withCore(config, async (core) => {
      const bar = progressPrinter("backup", stderrSink());
      if (out) {
        await core.backups.createAt(out, bar.update);
        bar.done();
        console.log(out);
      } else {
        const made = await core.backups.create(arg, bar.update);
        bar.done();
        console.log(core.backups.place.where(made.name));
      }
    });
  } else if (action === "list") {
    await withCore(config, async (core) => {
      const all = await core.backups.list();
      for (const b of all) console.log(`${b.name}\t${b.size}\t${b.created}`);
      if (all.length === 0) {
        console.log(`(no backups in ${core.backups.place.where("")})`);
      }
    });
  } else if (action === "restore") {
    if (!arg) throw new UsageMistake("backup restore needs <file|name>");
    await withCore(config, async (core) => {
      const isPath = arg.includes("/") || arg.includes("\\");
      const m = await core.backups.restore(arg, {
        path: isPath,
        onProgress: progressPrinter("restore", stderrSink()).update,
      });
      console.log(
        `Restored ${arg}: ${
          Object.values(m.tables).reduce((a, b) => a + b, 0)
        } rows, ${m.files} files (backup of ${m.created}, ${m.database})`,
      );
    });
  } else {
    throw new UsageMistake(
      "backup needs create [--out <file>], list or restore <file|name>",
    );
  }
}

/** True when the PostgreSQL database at `url` holds no Moonbase project. */
async function emptyTarget(url: string): Promise<boolean> {
  const pg = new PostgresStorage(url, 1);
  await pg.connect();
  try {
    const rows = await pg.query(
      `SELECT (SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('mb_tables', 'mb_admins')) AS "n"`,
    );
    if (Number(rows[0].n) === 0) return true;
    const used = await pg.query(
      `SELECT (SELECT count(*) FROM "mb_tables") + (SELECT count(*) FROM "mb_admins") AS "n"`,
    );
    return Number(used[0].n) === 0;
  } finally {
    await pg.close();
  }
}

/**
 * `move-to --database PSQL --connection <url>`: backs the SQLite project up,
 * restores it into the (empty) PostgreSQL database, and checks every table's
 * rows and digest on both sides. The data directory is bound to PostgreSQL
 * from then on (its files are the same files); if anything fails it is
 * bound back to SQLite, whose data was never changed.
 */
export async function moveToCommand(config: AppConfig): Promise<void> {
  if (!config.database || !config.connection) {
    throw new UsageMistake("move-to needs --database PSQL --connection <url>");
  }
  const source: AppConfig = {
    ...config,
    database: "SQLITE",
    connection: undefined,
  };
  const target: AppConfig = { ...config, rebindDataDir: true };
  if (!await emptyTarget(config.connection)) {
    throw new MoonbaseError(
      "conflict",
      "Cannot move: the PostgreSQL database already holds a Moonbase project; use an empty database",
    );
  }
  const dataDir = config.dataDir ?? "./data";
  const archive = join(
    dataDir,
    `.move-${crypto.randomUUID().slice(0, 8)}.tar.gz`,
  );
  let before: Awaited<ReturnType<typeof tableDigests>>;
  try {
    before = await withCore(source, async (core) => {
      const bar = progressPrinter("backup", stderrSink());
      await core.backups.createAt(archive, bar.update);
      bar.done();
      return await tableDigests(core.storage);
    });
    let moved = false;
    try {
      await withCore(target, async (core) => {
        const m = await core.backups.restore(archive, {
          path: true,
          onProgress: progressPrinter("restore", stderrSink()).update,
        });
        const after = await tableDigests(core.storage);
        for (const [table, want] of Object.entries(before)) {
          const got = after[table];
          if (!got || got.rows !== want.rows || got.sha256 !== want.sha256) {
            throw new MoonbaseError(
              "conflict",
              `Cannot move: ${table} differs after the move (${want.rows} rows before, ${
                got?.rows ?? 0
              } after)`,
            );
          }
        }
        console.log(
          `Moved ${
            Object.values(before).reduce((a, b) => a + b.rows, 0)
          } rows in ${
            Object.keys(before).length
          } tables and ${m.files} files to PostgreSQL; checked table by table.`,
        );
        moved = true;
      });
    } finally {
      if (!moved) {
        // Back to the SQLite database, as before the move.
        await withCore(
          { ...source, rebindDataDir: true },
          () => Promise.resolve(),
        );
      }
    }
    console.log(
      `Start the server with --database PSQL --connection <url> --dataDir ${dataDir}; the SQLite file stays as it was.`,
    );
  } finally {
    // The archive is this command's own.
    await Deno.remove(archive).catch(() => {
      // Ignored: it was never written.
    });
  }
}
