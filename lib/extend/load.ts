/**
 * Loading extension scripts from `--scriptsDir`: every `*.ts`, `*.js` and
 * `*.mjs` file whose name does not start with `_`, imported in name order.
 * Scripts are trusted code written by the administrator; rule expressions
 * never import or evaluate anything themselves.
 *
 * Two loaders: `file` imports the files (under `deno run`), `source` reads,
 * transpiles and imports them from `data:` URLs (a `deno compile` binary,
 * which cannot import files it did not embed; see source_loader.ts).
 *
 * @module
 */

import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { SourceLoad } from "./source_loader.ts";

/** One imported script. */
export interface LoadedScript {
  /** Absolute path. */
  file: string;
  /** The file name, for messages and logs. */
  name: string;
  /** Its exports. */
  mod: Record<string, unknown>;
}

/** How scripts are imported. */
export type ScriptLoader = "file" | "source";

/** Options of one load. */
export interface ImportOptions {
  /** The load's number: a reload (> 0) imports fresh module copies. */
  version?: number;
  /** The loader; default {@link scriptLoader}. */
  loader?: ScriptLoader;
  /**
   * A directory that leads to the same files under another path (file
   * loader): importing through a new one gets fresh copies of the scripts
   * and of the files they import relatively. Without it, a reload gets a
   * fresh copy of each script only.
   */
  through?: string;
}

/**
 * The loader in force: `MB_SCRIPT_LOADER` (`file` or `source`) when set,
 * else `source` in a `deno compile` binary and `file` otherwise.
 */
export function scriptLoader(
  env: string | undefined = loaderEnv(),
): ScriptLoader {
  if (env === "file" || env === "source") return env;
  if (env) {
    throw new Error(
      `Cannot load scripts: MB_SCRIPT_LOADER=${env} (use file or source)`,
    );
  }
  return Deno.build.standalone ? "source" : "file";
}

function loaderEnv(): string | undefined {
  try {
    return Deno.env.get("MB_SCRIPT_LOADER");
  } catch {
    return undefined; // no env permission: the default
  }
}

/** The script files of a directory, in name order (none when it is missing). */
export async function scriptFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (
        e.isFile && /\.(ts|js|mjs)$/.test(e.name) && !e.name.startsWith("_")
      ) names.push(e.name);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
  return names.sort().map((n) => resolve(join(dir, n)));
}

/**
 * Imports the scripts of a directory; the first failure throws one line
 * naming the script.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importScripts } from "moonbase/lib/extend/load.ts";
 * assert.deepEqual(await importScripts("/nonexistent-dir"), []);
 * ```
 */
export async function importScripts(
  dir: string,
  options: ImportOptions = {},
): Promise<LoadedScript[]> {
  const { version = 0, through } = options;
  const loader = options.loader ?? scriptLoader();
  const source = loader === "source" ? new SourceLoad(version) : undefined;
  const out: LoadedScript[] = [];
  for (const file of await scriptFiles(dir)) {
    const name = basename(file);
    const path = through ? join(through, name) : file;
    let mod: Record<string, unknown>;
    try {
      mod = source ? await source.import(file) : await import(
        pathToFileURL(path).href +
          (version > 0 && !through ? `?v=${version}` : "")
      );
    } catch (err) {
      const msg = problem(
        err,
        (url) => source?.fileOf(url) ?? url.replace(/\?v=\d+$/, ""),
      );
      // Name the files where they are, not the link they came through.
      throw new Error(
        `Cannot load script ${file}: ${
          through && !source
            ? msg.replaceAll(
              pathToFileURL(through).href,
              pathToFileURL(resolve(dir)).href,
            )
            : msg
        }`,
      );
    }
    out.push({ file, name, mod });
  }
  return out;
}

/**
 * One line for an import failure: its first line, and where it happened
 * when the runtime says so (a module URL named as the file it stands for).
 */
export function problem(err: unknown, name: (url: string) => string): string {
  const raw = err instanceof Error ? err.message : String(err);
  // V8's own syntax errors leave their name out of the message.
  const named = err instanceof SyntaxError && !raw.startsWith("SyntaxError")
    ? `SyntaxError: ${raw}`
    : raw;
  const text = named.replace(
    // deno-lint-ignore no-control-regex
    /\x1b\[[0-9;]*m/g,
    "",
  );
  const first = text.split("\n")[0].replace(
    /^(TypeError: )?(SyntaxError: )+/,
    "SyntaxError: ",
  );
  const at = /\n\s*at (\S+?):(\d+):(\d+)\s*$/.exec(text);
  return (at ? `${first} (${name(at[1])}:${at[2]}:${at[3]})` : first)
    .replace(/data:[^\s]{60,}/g, "a data: module");
}
