/**
 * The command a user can actually run, for hints the CLI prints (the start
 * banner's "create an admin" line): `deno run -A main.ts …` when Moonbase
 * runs from source, the binary itself when it runs compiled.
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

/** The current process's invocation. */
export function currentInvocation(): Invocation {
  return {
    execPath: Deno.execPath(),
    mainModule: Deno.mainModule,
    cwd: Deno.cwd(),
    which,
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
    head = `${program(inv.execPath, inv, true)} run -A ${
      word(rel.startsWith("..") ? main : rel)
    }`;
  } else head = program(inv.execPath, inv, false);
  const opts = [
    ...(db.dataDir !== undefined ? ["--dataDir", word(db.dataDir)] : []),
    ...(db.database ? ["--database", "PSQL", "--connection", "<url>"] : []),
  ];
  return [head, ...opts, args].join(" ");
}
