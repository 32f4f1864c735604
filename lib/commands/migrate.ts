/**
 * `moonbase migrate up|down|status|create <name>` (main.ts): the migration
 * files of `--migrationsDir` (docs/guide/migrations.md). `up`, `down` and
 * `status` open the database as a command does (no file sweep, no log
 * pruning) and load the scripts' helpers and record hooks, as a server
 * would have them; `create` only writes a file.
 *
 * @module
 */

import type { AppConfig } from "../config.ts";
import { type Core, createCore } from "../core.ts";
import { activate, install } from "../extend/extension_set.ts";
import { importScripts, scriptLoader } from "../extend/load.ts";
import {
  checkMigrationName,
  migrationTemplate,
  writeMigration,
} from "../migrations/files.ts";
import { Migrations } from "../migrations/runner.ts";
import { UsageMistake } from "./usage.ts";

/** A core with the scripts' helpers and hooks in force (no routes served, no cron). */
async function withCore<T>(
  config: AppConfig,
  fn: (core: Core) => Promise<T>,
): Promise<T> {
  const core = await createCore({ ...config, quiet: true }, "command");
  try {
    const scripts = await importScripts(core.config.scriptsDir, {
      loader: core.config.scriptLoader ?? scriptLoader(),
    });
    install(core, await activate(core, scripts, []), scripts.length);
    return await fn(core);
  } finally {
    await core.close();
  }
}

/** `migrate up|down|status|create <name>`. */
export async function migrateCommand(
  config: AppConfig,
  rest: string[],
): Promise<void> {
  const [action, arg, ...extra] = rest;
  if (extra.length > 0 || (arg !== undefined && action !== "create")) {
    throw new UsageMistake(`unexpected ${[arg, ...extra].join(" ")}`);
  }
  const dir = config.migrationsDir ?? "./migrations";
  if (action === "create") {
    if (!arg) throw new UsageMistake("migrate create needs <name>");
    const file = await writeMigration(
      dir,
      checkMigrationName(arg),
      migrationTemplate(arg),
    );
    console.log(file.file);
  } else if (action === "up") {
    await withCore(config, async (core) => {
      const done = await new Migrations(core, dir).up((name) =>
        console.log(`Applied ${name}`)
      );
      if (done.length === 0) console.log("No pending migrations");
    });
  } else if (action === "down") {
    await withCore(config, async (core) => {
      const name = await new Migrations(core, dir).down();
      console.log(name ? `Reverted ${name}` : "No migration to revert");
    });
  } else if (action === "status") {
    await withCore(config, async (core) => {
      const all = await new Migrations(core, dir).status();
      for (const m of all) {
        console.log(
          `${m.name}\t${
            m.applied === null
              ? "pending"
              : `applied ${m.applied}${m.missing ? " (file missing)" : ""}`
          }`,
        );
      }
      if (all.length === 0) console.log(`(no migrations in ${dir})`);
    });
  } else {
    throw new UsageMistake(
      "migrate needs up, down, status or create <name>",
    );
  }
}
