/**
 * A fresh path to the scripts for every load in `--dev`. The module cache
 * of the runtime keeps a module for good under its URL, so a reload
 * imports the scripts through a new link to the same directory
 * (`<temp>/v<n>` → scriptsDir): the scripts and the files they import
 * relatively (`./_shared.ts`) all get new URLs and so their current source.
 * Imports that leave the scripts directory (`../x.ts`) resolve under the
 * link's parent, where nothing is: keep shared code inside scriptsDir.
 *
 * @module
 */

import { dirname, join, resolve } from "node:path";

/** Links to one directory, one per load, removed on `close()`. */
export class FreshPaths {
  readonly #dir: string;
  #root: Promise<string> | undefined;
  #links: string[] = [];
  /** Removes the links when the program exits without closing the app. */
  readonly #onUnload = () => {
    // Links first (removing a link never touches what it leads to), then
    // the emptied directory that held them.
    for (
      const path of [...this.#links, ...this.#links.slice(0, 1).map(dirname)]
    ) {
      try {
        Deno.removeSync(path);
      } catch { /* gone already */ }
    }
  };

  /** `dir` is the directory the links lead to. */
  constructor(dir: string) {
    this.#dir = resolve(dir);
  }

  /**
   * A new path to the directory for load `version`; throws when no link
   * can be made (the caller then imports the files where they are).
   */
  async path(version: number): Promise<string> {
    if (!this.#root) {
      this.#root = Deno.makeTempDir({ prefix: "moonbase_scripts_" });
      globalThis.addEventListener("unload", this.#onUnload);
    }
    const link = join(await this.#root, `v${version}`);
    await Deno.symlink(
      this.#dir,
      link,
      Deno.build.os === "windows" ? { type: "junction" } : undefined,
    );
    this.#links.push(link);
    return link;
  }

  /** Removes the links (the directory they lead to is untouched). */
  async close(): Promise<void> {
    const root = this.#root;
    this.#root = undefined;
    if (!root) return;
    globalThis.removeEventListener("unload", this.#onUnload);
    // Links already gone (removed by hand, or the temp dir cleaned) are
    // what close wants anyway; nothing else can fail here that a caller
    // could act on.
    for (const link of this.#links.splice(0)) {
      await Deno.remove(link).catch(() => {});
    }
    await Deno.remove(await root).catch(() => {});
  }
}
