/**
 * The extensions of one app over its life: the first load at start (a
 * failure stops start-up with one line), and in `--dev` the reloads (a
 * failure is logged and the last good set keeps serving). Each load builds
 * a whole new set and swaps it in at once, cron jobs included.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { CronRunner } from "./cron.ts";
import { activate, type ExtensionSet, install } from "./extension_set.ts";
import { importScripts } from "./load.ts";

/** The scripts of an app: loading, swapping, stopping. */
export class Extensions {
  readonly #core: Core;
  readonly #builtin: [string, string][];
  readonly #cron: CronRunner;
  #version = 0;
  #current: ExtensionSet | undefined;

  /** `builtin` lists the built-in routes (`[method, pattern]`), which scripts may not replace. */
  constructor(core: Core, builtin: Iterable<[string, string]>) {
    this.#core = core;
    this.#builtin = [...builtin];
    this.#cron = new CronRunner(core.storage, core.log, core.now);
  }

  /** The set in force. */
  get current(): ExtensionSet | undefined {
    return this.#current;
  }

  /**
   * Imports every script and swaps the new set in; throws (one line naming
   * the script) and keeps the current set when any script fails.
   */
  async load(): Promise<ExtensionSet> {
    const version = this.#version++;
    const scripts = await importScripts(
      this.#core.config.scriptsDir,
      version === 0 ? undefined : version,
    );
    const set = await activate(this.#core, scripts, this.#builtin);
    install(this.#core, set);
    this.#cron.start(set.crons);
    this.#current = set;
    if (scripts.length > 0) {
      this.#core.log.info(
        version === 0 ? "scripts loaded" : "scripts reloaded",
        {
          files: scripts.map((s) => s.name),
        },
      );
    }
    return set;
  }

  /** Stops the jobs (and, in `--dev`, the watcher). */
  async close(): Promise<void> {
    await this.#cron.stop();
  }
}
