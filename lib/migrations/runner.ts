/**
 * Applying and reverting migration files: each in one transaction of its
 * own, recorded in `mb_migrations` in that same transaction. Several
 * instances may start at once on one database: on PostgreSQL each
 * migration's transaction first takes a transaction-level advisory lock and
 * then looks for its row, so exactly one instance runs it and the others
 * find it done (SQLite: the write lock does the same). A migration's
 * statements, record operations and schema changes all join its
 * transaction (lib/records/write_scope.ts): a failure undoes all of it.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { MoonbaseError } from "../errors.ts";
import type { Queryable } from "../db/storage.ts";
import { WriteScope } from "../records/write_scope.ts";
import { scriptLoader } from "../extend/load.ts";
import { migrationApp } from "./app.ts";
import {
  importMigration,
  type MigrationFile,
  migrationFiles,
} from "./files.ts";

/** The advisory lock every instance takes around one migration (PostgreSQL). */
const LOCK_KEY = 7_271_804_211;

/** Records migration `name` as applied now. */
export async function recordApplied(q: Queryable, name: string): Promise<void> {
  await q.run(
    `INSERT INTO "mb_migrations" ("name", "applied") VALUES (?, ?)`,
    [name, new Date().toISOString()],
  );
}

/** A migration's state, for `migrate status`. */
export interface MigrationState {
  name: string;
  /** When it was applied (ISO 8601), or null while pending. */
  applied: string | null;
  /** Applied, but its file is no longer in the directory. */
  missing: boolean;
}

/** The migrations of an app's `migrationsDir`. */
export class Migrations {
  readonly #core: Core;
  readonly dir: string;

  constructor(core: Core, dir = core.config.migrationsDir) {
    this.#core = core;
    this.dir = dir;
  }

  /** The files, in order. */
  files(): Promise<MigrationFile[]> {
    return migrationFiles(this.dir);
  }

  /** Applied migrations: name → when. */
  async applied(): Promise<Map<string, string>> {
    const rows = await this.#core.storage.query(
      `SELECT "name", "applied" FROM "mb_migrations" ORDER BY "applied", "name"`,
    );
    return new Map(rows.map((r) => [String(r.name), String(r.applied)]));
  }

  /** Every file with its state, then applied migrations whose file is gone. */
  async status(): Promise<MigrationState[]> {
    const files = await this.files();
    const applied = await this.applied();
    const out: MigrationState[] = files.map((f) => ({
      name: f.name,
      applied: applied.get(f.name) ?? null,
      missing: false,
    }));
    for (const [name, at] of applied) {
      if (!files.some((f) => f.name === name)) {
        out.push({ name, applied: at, missing: true });
      }
    }
    return out;
  }

  /**
   * Applies every pending migration in name order; returns the ones this
   * call applied (another instance may have applied some meanwhile). The
   * first failure stops it with one line naming the file; that migration
   * changed nothing, the ones before it stay applied.
   */
  async up(onApplied?: (name: string) => void): Promise<string[]> {
    const files = await this.files();
    if (files.length === 0) return [];
    const done = await this.applied();
    const out: string[] = [];
    for (const m of files) {
      if (done.has(m.name)) continue;
      const mod = await importMigration(m, this.#loader());
      const up = mod.up;
      if (typeof up !== "function") {
        throw new Error(
          `Cannot apply migration ${m.name}: it exports no up(app) function`,
        );
      }
      if (await this.#run(m.name, "up", (app) => up(app))) {
        out.push(m.name);
        onApplied?.(m.name);
      }
    }
    // Another instance may have applied some meanwhile: its schemas, now.
    await this.#core.schemas.refreshIfChanged();
    return out;
  }

  /**
   * Reverts the migration applied last (its `down(app)`, in one
   * transaction); returns its name, or undefined when none is applied.
   */
  async down(): Promise<string | undefined> {
    const [last] = await this.#core.storage.query(
      `SELECT "name" FROM "mb_migrations" ORDER BY "applied" DESC, "name" DESC LIMIT 1`,
    );
    if (!last) return undefined;
    const name = String(last.name);
    const m = (await this.files()).find((f) => f.name === name);
    if (!m) {
      throw new MoonbaseError(
        "not_found",
        `Cannot revert migration ${name}: its file is not in ${this.dir}`,
      );
    }
    const down = (await importMigration(m, this.#loader())).down;
    if (typeof down !== "function") {
      throw new MoonbaseError(
        "invalid",
        `Cannot revert migration ${name}: it exports no down(app) function`,
      );
    }
    await this.#run(name, "down", (app) => down(app));
    return name;
  }

  /**
   * Records `name` as applied without running it (a file `--dev` wrote for
   * a change already made).
   */
  async record(name: string): Promise<void> {
    await recordApplied(this.#core.storage, name);
  }

  #loader() {
    return this.#core.config.scriptLoader ?? scriptLoader();
  }

  /**
   * Runs `fn` for migration `name` in one transaction with its row: `up`
   * inserts it, `down` deletes it; when the row is already as `fn` would
   * leave it (another instance got there first), runs nothing and returns
   * false.
   */
  async #run(
    name: string,
    direction: "up" | "down",
    fn: (app: ReturnType<typeof migrationApp>) => unknown,
  ): Promise<boolean> {
    const core = this.#core;
    const store = core.storage;
    const scope = new WriteScope(store);
    let ran = false;
    try {
      await store.transaction(async (tx) => {
        if (!await this.#claim(tx, name, direction)) return;
        await scope.run(tx, async () => {
          await fn(migrationApp(core, name));
        });
        if (direction === "up") await recordApplied(tx, name);
        else {
          await tx.run(`DELETE FROM "mb_migrations" WHERE "name" = ?`, [name]);
        }
        ran = true;
      });
    } catch (err) {
      // The schemas in memory may hold the rolled-back changes.
      await core.schemas.load().catch(() => {
        // Ignored: the error below says what failed; the next request reloads.
      });
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(
        `Cannot ${direction === "up" ? "apply" : "revert"} migration ${name}: ${
          why.split("\n")[0]
        }`,
      );
    }
    // What the migration's changes leave for after the commit (removing
    // files of dropped fields, telling other instances).
    if (ran) await scope.flush();
    return ran;
  }

  /**
   * Waits for the other instances' migrations (PostgreSQL: the advisory
   * lock, held to the end of this transaction; SQLite holds the write lock)
   * and says whether `name` still needs `direction`.
   */
  async #claim(
    tx: Queryable,
    name: string,
    direction: "up" | "down",
  ): Promise<boolean> {
    if (this.#core.storage.dialect.name === "postgres") {
      await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      // A migration may rewrite big tables: no statement timeout.
      await tx.exec("SET LOCAL statement_timeout = 0");
    }
    const rows = await tx.query(
      `SELECT "name" FROM "mb_migrations" WHERE "name" = ?`,
      [name],
    );
    return direction === "up" ? rows.length === 0 : rows.length > 0;
  }
}
