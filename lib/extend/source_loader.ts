/**
 * The source loader: imports a script by reading its file, turning
 * TypeScript into JavaScript, and importing the result from a `data:` URL.
 * A `deno compile` binary can import `data:` URLs but no file that was not
 * embedded at compile time, so the binary loads scripts this way.
 *
 * Local files a script imports (`./x.ts`, `../x.js`, `/abs/x.ts`,
 * `file:` URLs) are loaded the same way and their specifiers replaced by
 * their `data:` URLs. Only the import and `export … from` declarations at
 * the top of a file (before any other statement) are rewritten; a later or
 * dynamic `import("./x.ts")`, a cycle between local files, JSON modules and
 * `import.meta.url`-relative paths are not supported. `node:` imports work;
 * `npm:` and `jsr:` imports work under `deno run`, and in the binary only
 * for packages the binary embeds.
 *
 * @module
 */

import { stripTypeScriptTypes } from "node:module";
import { dirname, extname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Extensions read as TypeScript (transpiled); the others are taken as JavaScript. */
const TYPESCRIPT = new Set([".ts", ".mts"]);
const JAVASCRIPT = new Set([".js", ".mjs"]);

/**
 * One load of a set of scripts: local modules shared by several scripts
 * become one module, as they would be when imported from files.
 */
export class SourceLoad {
  readonly #version: number;
  readonly #urls = new Map<string, Promise<string>>();
  readonly #open = new Set<string>();
  readonly #files = new Map<string, string>();

  /** `version` is written into every module so a reload gets fresh copies. */
  constructor(version = 0) {
    this.#version = version;
  }

  /** Imports `file` (an absolute path) and the local files it imports. */
  async import(file: string): Promise<Record<string, unknown>> {
    return await import(await this.url(resolve(file), []));
  }

  /** The file a `data:` URL of this load stands for. */
  fileOf(url: string): string | undefined {
    const file = this.#files.get(url);
    return file && pathToFileURL(file).href;
  }

  /** The `data:` URL of a local module (its own imports rewritten). */
  url(file: string, chain: readonly string[]): Promise<string> {
    if (this.#open.has(file)) {
      return Promise.reject(
        new Error(
          `import cycle ${
            [...chain, file].map((f) => f.split(/[\\/]/).pop()).join(" → ")
          } (the source loader cannot load cycles)`,
        ),
      );
    }
    let url = this.#urls.get(file);
    if (!url) {
      this.#open.add(file);
      url = this.#build(file, [...chain, file]).finally(() =>
        this.#open.delete(file)
      );
      this.#urls.set(file, url);
    }
    return url;
  }

  async #build(file: string, chain: string[]): Promise<string> {
    let code: string;
    try {
      code = await Deno.readTextFile(file);
    } catch (err) {
      throw new Error(
        `cannot read ${file}: ${err instanceof Error ? err.message : err}`,
      );
    }
    code = toJavaScript(code, file);
    const parts: string[] = [];
    let at = 0;
    for (const imp of localImports(code)) {
      const target = localPath(imp.specifier, file);
      if (!target) continue;
      parts.push(code.slice(at, imp.start), await this.url(target, chain));
      at = imp.end;
    }
    parts.push(code.slice(at));
    // The data: URL is the module's content: the version in the last line
    // makes a reload's modules new ones; sourceURL names the file in errors
    // and stack traces.
    const href = pathToFileURL(file).href;
    const body = `${parts.join("")}\n//# sourceURL=${
      this.#version > 0 ? `${href}?v=${this.#version}` : href
    }`;
    const url = `data:text/javascript;charset=utf-8,${
      encodeURIComponent(body)
    }`;
    this.#files.set(url, file);
    return url;
  }
}

/** JavaScript for a module's source: TypeScript is transpiled, JavaScript kept. */
export function toJavaScript(code: string, file: string): string {
  const ext = extname(file).toLowerCase();
  if (JAVASCRIPT.has(ext)) return code;
  if (!TYPESCRIPT.has(ext)) {
    throw new Error(
      `cannot import ${file}: the source loader takes .ts, .mts, .js and .mjs files`,
    );
  }
  try {
    return stripTypeScriptTypes(code, { mode: "transform" });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // "SyntaxError: <what>\n  | …\n at file:///…:line:col": the same shape
    // as the runtime's own import errors, naming the file.
    const what = msg.replace(/^(SyntaxError: )+/, "").split("\n")[0];
    const where = /:(\d+):(\d+)\s*$/.exec(msg);
    throw new Error(
      `SyntaxError: ${what}` +
        (where
          ? `\n    at ${pathToFileURL(file).href}:${where[1]}:${where[2]}`
          : ""),
    );
  }
}

/** One import specifier in a module's text. */
export interface ImportSpan {
  specifier: string;
  /** Where the specifier (without its quotes) starts and ends. */
  start: number;
  end: number;
}

const GAP = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/y;
const DECLARATION =
  /(?:import\b\s*(?:[^"'`;()=]*?\bfrom\s*)?|export\b\s*[^"'`;()=]*?\bfrom\s*)(["'])([^"'\n]*)\1(?:\s*with\s*\{[^}]*\})?\s*;?/y;

/**
 * The specifiers of the import and `export … from` declarations at the top
 * of a module, before its first other statement.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { localImports } from "moonbase/lib/extend/source_loader.ts";
 * const code = 'import { a } from "./a.ts";\nexport const b = 1;\nimport "./c.ts";';
 * assert.deepEqual(localImports(code).map((i) => i.specifier), ["./a.ts"]);
 * ```
 */
export function localImports(code: string): ImportSpan[] {
  const out: ImportSpan[] = [];
  let at = code.startsWith("#!") ? code.indexOf("\n") + 1 || code.length : 0;
  for (;;) {
    GAP.lastIndex = at;
    GAP.exec(code);
    at = GAP.lastIndex;
    DECLARATION.lastIndex = at;
    const m = DECLARATION.exec(code);
    if (!m) return out;
    const start = at + m[0].indexOf(m[1]) + 1;
    // The first quote of the match opens the specifier.
    out.push({ specifier: m[2], start, end: start + m[2].length });
    at = DECLARATION.lastIndex;
  }
}

/** The file a specifier names, when it names a local file (else undefined). */
function localPath(specifier: string, from: string): string | undefined {
  if (specifier.startsWith("file:")) return fileURLToPath(specifier);
  if (/^\.{1,2}\//.test(specifier)) return resolve(dirname(from), specifier);
  if (specifier.startsWith("/")) return resolve(specifier);
  return undefined;
}
