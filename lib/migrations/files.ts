/**
 * Migration files on disk (`--migrationsDir`, default `./migrations`):
 * `NNNN_name.ts` (or `.js`, `.mjs`), applied in the order of their names;
 * importing one the way scripts are imported (lib/extend/load.ts), and
 * writing new ones under the next number.
 *
 * @module
 */

import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { problem, type ScriptLoader } from "../extend/load.ts";
import { SourceLoad } from "../extend/source_loader.ts";
import { MoonbaseError } from "../errors.ts";

/** A migration file's name: a number of at least 4 digits, `_`, a name. */
const FILE = /^(\d{4,})_([A-Za-z0-9_]{1,64})\.(ts|js|mjs)$/;
/** The name part `migrate create` and `--dev` accept. */
const NAME = /^[A-Za-z0-9_]{1,64}$/;

/** One migration file. */
export interface MigrationFile {
  /** The file name (`0001_create_posts.ts`): what `mb_migrations` records. */
  name: string;
  /** Absolute path. */
  file: string;
}

/**
 * The migration files of `dir`, in name order (none when it is missing).
 * Other files (a `_helpers.ts`, a README) are left alone.
 */
export async function migrationFiles(dir: string): Promise<MigrationFile[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && FILE.test(e.name)) names.push(e.name);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw new Error(
      `Cannot read migrations: ${dir}: ${
        err instanceof Error ? err.message : err
      }`,
    );
  }
  return names.sort().map((name) => ({ name, file: resolve(join(dir, name)) }));
}

/** A migration's exports (`up`, and `down` when it can be reverted). */
export interface MigrationModule {
  up?: unknown;
  down?: unknown;
}

/**
 * Imports a migration file with the scripts' loader (`file`: `import()`;
 * `source`: read, strip types, `data:` URL, as a compiled binary does);
 * a failure is one line naming the file.
 */
export async function importMigration(
  m: MigrationFile,
  loader: ScriptLoader,
): Promise<MigrationModule> {
  const source = loader === "source" ? new SourceLoad() : undefined;
  try {
    return source
      ? await source.import(m.file)
      : await import(pathToFileURL(m.file).href);
  } catch (err) {
    throw new Error(
      `Cannot load migration ${m.name}: ${
        problem(err, (url) => source?.fileOf(url) ?? url)
      }`,
    );
  }
}

/** Checks the name part of a new migration (`migrate create <name>`). */
export function checkMigrationName(name: string): string {
  if (!NAME.test(name)) {
    throw new MoonbaseError(
      "invalid",
      `Cannot create migration ${
        JSON.stringify(name.slice(0, 80))
      }: use 1-64 letters, digits and _`,
    );
  }
  return name;
}

/**
 * Writes `text` as the next migration of `dir` (`NNNN_<name>.ts`, one more
 * than the highest number there; the directory is made when missing) and
 * returns it. Never replaces a file: when another writer took the number
 * meanwhile, the next one is tried.
 */
export async function writeMigration(
  dir: string,
  name: string,
  text: string,
): Promise<MigrationFile> {
  checkMigrationName(name);
  await Deno.mkdir(dir, { recursive: true });
  for (let attempt = 0;; attempt++) {
    let last = 0;
    for await (const e of Deno.readDir(dir)) {
      const m = FILE.exec(e.name);
      if (m) last = Math.max(last, Number(m[1]));
    }
    const file = `${String(last + 1).padStart(4, "0")}_${name}.ts`;
    const path = resolve(join(dir, file));
    try {
      await Deno.writeTextFile(path, text, { createNew: true });
      return { name: basename(path), file: path };
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists) || attempt >= 20) {
        throw err;
      }
    }
  }
}

/** The text of `moonbase migrate create <name>`: an `up` and a `down` to fill in. */
export function migrationTemplate(name: string): string {
  return `/**
 * Migration ${name}: applied once, in one transaction, by \`moonbase migrate
 * up\` or when the server starts (docs/guide/migrations.md).
 *
 * \`app\` is what a script's default export gets (entities, db, log) plus
 * \`app.schemas\`: get, all, create, update and delete, with the bodies of
 * the schemas API.
 */

// deno-lint-ignore no-explicit-any
type App = any;

export async function up(app: App): Promise<void> {
  // await app.schemas.create({
  //   name: "tags",
  //   type: "base",
  //   fields: [{ name: "label", type: "string", required: true }],
  // });
}

export async function down(app: App): Promise<void> {
  // await app.schemas.delete("tags");
}
`;
}
