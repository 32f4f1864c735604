/**
 * Extension scripts from `--scriptsDir`: every `*.ts` / `*.js` file is
 * imported once at start (in name order). A script may export
 * `helpers` (functions callable from rule expressions) and
 * `setup(app)` (to add routes or anything else through the library API).
 * Scripts are trusted code written by the administrator; rule expressions
 * never import or evaluate anything themselves.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** What the scripts provide. */
export interface Scripts {
  helpers: Map<string, (...args: unknown[]) => unknown>;
  setups: { file: string; setup: (app: unknown) => unknown }[];
  files: string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Loads the scripts of a directory (a missing directory means none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadScripts } from "moonbase/lib/scripts.ts";
 * const s = await loadScripts("/nonexistent-dir");
 * assert.ok(s.helpers.size === 0 && s.files.length === 0);
 * ```
 */
export async function loadScripts(dir: string): Promise<Scripts> {
  const out: Scripts = { helpers: new Map(), setups: [], files: [] };
  let names: string[];
  try {
    names = [];
    for await (const e of Deno.readDir(dir)) {
      if (
        e.isFile && /\.(ts|js|mjs)$/.test(e.name) && !e.name.startsWith("_")
      ) names.push(e.name);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return out;
    throw err;
  }
  for (const name of names.sort()) {
    const file = resolve(join(dir, name));
    let mod: Record<string, unknown>;
    try {
      mod = await import(pathToFileURL(file).href);
    } catch (err) {
      throw new Error(
        `Cannot load script ${file}: ${
          err instanceof Error ? err.message.split("\n")[0] : err
        }`,
      );
    }
    out.files.push(file);
    const helpers = mod.helpers;
    if (helpers && typeof helpers === "object") {
      for (const [k, fn] of Object.entries(helpers)) {
        if (typeof fn !== "function") continue;
        if (!NAME.test(k) || ["auth", "req", "record"].includes(k)) {
          throw new Error(
            `Cannot load script ${file}: helper name ${
              JSON.stringify(k)
            } is not allowed`,
          );
        }
        out.helpers.set(k, fn as (...args: unknown[]) => unknown);
      }
    }
    if (typeof mod.setup === "function") {
      out.setups.push({ file, setup: mod.setup as (app: unknown) => unknown });
    }
  }
  return out;
}
