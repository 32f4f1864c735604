/**
 * The extensions of one app over its life: the first load at start (a
 * failure stops start-up with one line), and in `--dev` the reloads when a
 * file in the scripts directory changes (a failure is logged and the last
 * good set keeps serving). Each load builds a whole new set and swaps it in
 * at once, cron jobs included.
 *
 * @module
 */

import type { Core } from "../core.ts";
import { CronRunner } from "./cron.ts";
import { activate, type ExtensionSet, install } from "./extension_set.ts";
import { FreshPaths } from "./fresh_dir.ts";
import { importScripts, scriptLoader } from "./load.ts";
import { type DirWatch, watchDir } from "./watch.ts";

/** How long the scripts' files must be quiet before a reload. */
const SETTLE_MS = 150;

/** The scripts of an app: loading, swapping, watching, stopping. */
export class Extensions {
  readonly #core: Core;
  readonly #builtin: [string, string][];
  readonly #cron: CronRunner;
  /** In `--dev`, every load imports through a new path (fresh modules). */
  readonly #fresh: FreshPaths | undefined;
  #version = 0;
  #current: ExtensionSet | undefined;
  #watch: DirWatch | undefined;
  /** The load in progress (loads run one after another). */
  #loading: Promise<unknown> = Promise.resolve();
  #closed = false;

  /** `builtin` lists the built-in routes (`[method, pattern]`), which scripts may not replace. */
  constructor(core: Core, builtin: Iterable<[string, string]>) {
    this.#core = core;
    this.#builtin = [...builtin];
    this.#cron = new CronRunner(core.storage, core.log, core.now);
    if (core.config.dev) this.#fresh = new FreshPaths(core.config.scriptsDir);
  }

  /** The set in force. */
  get current(): ExtensionSet | undefined {
    return this.#current;
  }

  /**
   * Imports every script and swaps the new set in; throws (one line naming
   * the script) and keeps the current set when any script fails.
   */
  load(): Promise<ExtensionSet> {
    const run = this.#loading.then(() => this.#load());
    // The queue only orders loads; `run`'s caller gets the failure.
    this.#loading = run.catch(() => {});
    return run;
  }

  /**
   * Loads like `load()`, but a failure is logged (one line naming the
   * script) and the set in force keeps serving (`--dev` reloads; start-up
   * uses `load()`, which throws). Resolves to whether the new set is in
   * force.
   */
  async reload(): Promise<boolean> {
    try {
      await this.load();
      return true;
    } catch (err) {
      if (this.#closed) return false;
      this.#core.log.error(
        err instanceof Error ? err.message.split("\n")[0] : String(err),
        {
          scriptsDir: this.#core.config.scriptsDir,
          serving: this.#current ? "the scripts loaded before" : "no scripts",
        },
      );
      return false;
    }
  }

  /**
   * Reloads the scripts whenever a file in the scripts directory is
   * created, changed or removed (for `--dev`; the caller decides).
   */
  watch(): void {
    if (this.#watch || this.#closed) return;
    const dir = this.#core.config.scriptsDir;
    this.#watch = watchDir(
      dir,
      () => void this.reload(),
      (err) =>
        err instanceof Deno.errors.NotFound
          ? this.#core.log.info(`Not watching scripts: ${dir} does not exist`)
          : this.#core.log.warn(
            `Cannot watch scripts: ${dir}: ${
              err instanceof Error ? err.message : err
            }`,
          ),
      SETTLE_MS,
    );
  }

  async #load(): Promise<ExtensionSet> {
    if (this.#closed) throw new Error("Cannot load scripts: the app is closed");
    const version = this.#version++;
    const dir = this.#core.config.scriptsDir;
    const loader = this.#core.config.scriptLoader ?? scriptLoader();
    let through: string | undefined;
    // The source loader reads the files anew at every load: no link needed.
    if (this.#fresh && loader === "file") {
      try {
        through = await this.#fresh.path(version);
      } catch (err) {
        this.#core.log.warn(
          `Cannot link scripts for reloading: ${
            err instanceof Error ? err.message : err
          } (files the scripts import will not reload)`,
        );
      }
    }
    const scripts = await importScripts(dir, { version, loader, through });
    const set = await activate(this.#core, scripts, this.#builtin);
    if (this.#closed) throw new Error("Cannot load scripts: the app is closed");
    install(this.#core, set, scripts.length);
    this.#cron.start(set.crons);
    const reloaded = version > 0;
    this.#current = set;
    if (scripts.length > 0 || reloaded) {
      this.#core.log.info(reloaded ? "scripts reloaded" : "scripts loaded", {
        files: scripts.map((s) => s.name),
      });
    }
    if (reloaded && set.setups.length > 0) {
      this.#core.log.warn(
        "setup(app) exports run only at start: restart to apply them",
        { files: set.setups.map((s) => s.name) },
      );
    }
    return set;
  }

  /** Stops the watcher, waits for a load in progress, stops the jobs. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.close();
    this.#watch = undefined;
    await this.#loading;
    await this.#cron.stop();
    await this.#fresh?.close();
  }
}
