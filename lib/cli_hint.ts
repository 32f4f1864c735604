/**
 * The command a user can actually run, for hints the CLI prints (the start
 * banner's "create an admin" line): from a checkout `deno task moonbase …`
 * (the task that wraps the CLI), from elsewhere `deno run -A …/main.ts …`,
 * with `npx -y deno@<version>` for `deno` where Deno came from npm and is
 * not on `PATH`; the binary itself when it runs compiled.
 *
 * @module
 */

import {
  basename,
  delimiter,
  dirname,
  join,
  relative,
  resolve,
} from "node:path";
import { fileURLToPath } from "node:url";

/** Where the process runs from (injectable for tests). */
export interface Invocation {
  /** `Deno.execPath()`: the deno binary, or the compiled program. */
  execPath: string;
  /** `Deno.mainModule`. */
  mainModule: string;
  /** The working directory. */
  cwd: string;
  /** The real path of the first `name` on `PATH` (undefined: none, or unknown). */
  which(name: string): string | undefined;
  /** True when `dir` has a deno.json with a `moonbase` task (a checkout). */
  hasTask?(dir: string): boolean;
  /** The running Deno's version (`Deno.version.deno`). */
  denoVersion?: string;
}

/** The options that pick the database, as given on the command line. */
export interface DatabaseArgs {
  dataDir?: string;
  database?: string;
}

function which(name: string): string | undefined {
  try {
    for (const dir of (Deno.env.get("PATH") ?? "").split(delimiter)) {
      if (!dir) continue;
      try {
        return Deno.realPathSync(join(dir, name));
      } catch { /* not here */ }
    }
  } catch { /* no env or read permission */ }
  return undefined;
}

/** True when `dir/deno.json` declares the `moonbase` task. */
function hasTask(dir: string): boolean {
  try {
    const config = JSON.parse(Deno.readTextFileSync(join(dir, "deno.json")));
    return typeof config?.tasks?.moonbase === "string";
  } catch {
    return false; // no deno.json there, or not readable: no task to name
  }
}

/** The current process's invocation. */
export function currentInvocation(): Invocation {
  return {
    execPath: Deno.execPath(),
    mainModule: Deno.mainModule,
    cwd: Deno.cwd(),
    which,
    hasTask,
    denoVersion: Deno.version.deno,
  };
}

/** Quotes a shell word when it needs quoting. */
function word(s: string): string {
  return /^[\w./:@%+=,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** How to name an executable: bare on PATH, `./x` here, else its full path. */
function program(file: string, inv: Invocation, anyOnPath: boolean): string {
  const name = basename(file);
  const found = inv.which(name);
  if (found !== undefined && (anyOnPath || found === file)) return name;
  if (dirname(file) === resolve(inv.cwd)) return `./${name}`;
  return word(file);
}

/**
 * How to call this Deno: `deno` when that is on PATH; `npx -y deno@<version>`
 * when it came from npm's `deno` package (a path through `node_modules`, as
 * `npx -y deno@2.9.6 task start` runs it) and is not on PATH; else its path.
 */
function denoCommand(inv: Invocation): string {
  if (inv.which(basename(inv.execPath)) !== undefined) return "deno";
  if (inv.execPath.split(/[\\/]/).includes("node_modules")) {
    return `npx -y deno@${inv.denoVersion ?? Deno.version.deno}`;
  }
  return program(inv.execPath, inv, true);
}

/**
 * The command line that runs `moonbase <args>` the way this process was
 * started, with the options that choose the same database (a PostgreSQL
 * URL is shown as `<url>`: it may hold a password).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandFor } from "moonbase/lib/cli_hint.ts";
 * const inv = {
 *   execPath: "/usr/bin/deno",
 *   mainModule: "file:///srv/moonbase/main.ts",
 *   cwd: "/srv/moonbase",
 *   which: (name: string) => name === "deno" ? "/usr/bin/deno" : undefined,
 * };
 * assert.equal(
 *   commandFor("admins --add <email> <password>", {}, inv),
 *   "deno run -A main.ts admins --add <email> <password>",
 * );
 * // A checkout: the task that wraps the CLI.
 * assert.equal(
 *   commandFor("admins --ls", {}, { ...inv, hasTask: () => true }),
 *   "deno task moonbase admins --ls",
 * );
 * // Deno from npm (npx), not on PATH: npx again, never the cache's path.
 * assert.equal(
 *   commandFor("admins --ls", {}, {
 *     ...inv,
 *     execPath: "/root/.npm/_npx/1a2b/node_modules/@deno/linux-x64-glibc/deno",
 *     which: () => undefined,
 *     hasTask: () => true,
 *     denoVersion: "2.9.6",
 *   }),
 *   "npx -y deno@2.9.6 task moonbase admins --ls",
 * );
 * assert.equal(
 *   commandFor("admins --ls", { dataDir: "./d" }, {
 *     ...inv,
 *     execPath: "/srv/moonbase/moonbase",
 *   }),
 *   "./moonbase --dataDir ./d admins --ls",
 * );
 * ```
 */
export function commandFor(
  args: string,
  db: DatabaseArgs,
  inv: Invocation = currentInvocation(),
): string {
  const fromSource = /^deno(\.exe)?$/i.test(basename(inv.execPath)) &&
    inv.mainModule.startsWith("file:");
  let head: string;
  if (fromSource) {
    const main = fileURLToPath(inv.mainModule);
    const rel = relative(inv.cwd, main);
    const deno = denoCommand(inv);
    head = rel === "main.ts" && inv.hasTask?.(inv.cwd)
      ? `${deno} task moonbase`
      : `${deno} run -A ${word(rel.startsWith("..") ? main : rel)}`;
  } else head = program(inv.execPath, inv, false);
  const opts = [
    ...(db.dataDir !== undefined ? ["--dataDir", word(db.dataDir)] : []),
    ...(db.database ? ["--database", "PSQL", "--connection", "<url>"] : []),
  ];
  return [head, ...opts, args].join(" ");
}
