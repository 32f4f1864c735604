/**
 * One generation of extensions: what the scripts registered when they were
 * (re)loaded — routes, middleware, record hooks, cron jobs and rule helpers.
 * A reload builds a new set and swaps it in only if every script loaded.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { Router } from "../http/router.ts";
import { RecordEvents } from "../records/events.ts";
import type { LoadedScript } from "./load.ts";
import {
  type ExtensionSet,
  scriptApp,
  type ScriptHelper,
  shape,
} from "./script_app.ts";

export type { ExtensionSet };

/**
 * Runs every script's registrations into a new set: its `helpers` export,
 * then its default export with its own ScriptApp. The first failure throws
 * one line naming the script.
 */
export async function activate(
  core: Core,
  scripts: LoadedScript[],
  builtin: Iterable<[string, string]>,
): Promise<ExtensionSet> {
  const set: ExtensionSet = {
    routes: new Router(),
    middleware: [],
    events: new RecordEvents(),
    crons: [],
    helpers: new Map(),
    builtin: new Set([...builtin].map(([m, p]) => `${m} ${shape(p)}`)),
    taken: new Map(),
    setups: [],
  };
  for (const { name, mod } of scripts) {
    const app = scriptApp(core, set, name);
    const helpers = mod.helpers;
    if (helpers && typeof helpers === "object") {
      for (const [k, fn] of Object.entries(helpers)) {
        if (typeof fn === "function") app.helper(k, fn as ScriptHelper);
      }
    }
    if (typeof mod.default === "function") {
      try {
        await mod.default(app);
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err);
        throw new Error(
          msg.startsWith("Cannot load script ")
            ? msg
            : `Cannot load script ${name}: ${msg.split("\n")[0]}`,
        );
      }
    }
    if (typeof mod.setup === "function") {
      set.setups.push({
        name,
        setup: mod.setup as (app: unknown) => unknown,
      });
    }
  }
  return set;
}

/**
 * Makes a set the app's current extensions (helpers, hooks, routes,
 * middleware). With any script loaded, requests run in their request
 * scope, so a script acting `{ as }` the caller is counted against the
 * client's address (sign-ups, password checks).
 */
export function install(core: Core, set: ExtensionSet, scripts: number): void {
  core.helpers.clear();
  for (const [k, fn] of set.helpers) core.helpers.set(k, fn);
  core.hooks.replace(set.events);
  core.extensions = {
    middleware: set.middleware,
    routes: set.routes,
    scoped: scripts > 0,
  };
}
