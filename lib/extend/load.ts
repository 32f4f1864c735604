/**
 * Loading extension scripts from `--scriptsDir`: every `*.ts`, `*.js` and
 * `*.mjs` file whose name does not start with `_`, imported in name order.
 * Scripts are trusted code written by the administrator; rule expressions
 * never import or evaluate anything themselves.
 *
 * @module
 */

import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** One imported script. */
export interface LoadedScript {
  /** Absolute path. */
  file: string;
  /** The file name, for messages and logs. */
  name: string;
  /** Its exports. */
  mod: Record<string, unknown>;
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
 * Imports the scripts of a directory. `version` makes a reload import fresh
 * copies (a new module URL); the first load passes none.
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
  version?: number,
): Promise<LoadedScript[]> {
  const out: LoadedScript[] = [];
  for (const file of await scriptFiles(dir)) {
    const url = pathToFileURL(file).href +
      (version === undefined ? "" : `?v=${version}`);
    let mod: Record<string, unknown>;
    try {
      mod = await import(url);
    } catch (err) {
      throw new Error(
        `Cannot load script ${file}: ${
          err instanceof Error ? err.message.split("\n")[0] : err
        }`,
      );
    }
    out.push({ file, name: basename(file), mod });
  }
  return out;
}
