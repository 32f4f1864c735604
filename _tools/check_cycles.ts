/**
 * Fails when the source has an import cycle or an import against the layers.
 *
 * Run by `deno task check`. Every `import`/`export … from` counts, type-only
 * ones included: a type import is still a dependency a reader must follow.
 *
 * Three graphs are checked:
 * - files: no cycle between any two source files;
 * - lib folders (`lib/auth`, `lib/db`, …; top-level `lib/*.ts` files are each
 *   their own node): no cycle, and each import points down {@link LAYERS};
 * - route files: no cycle (covered by the file graph) and never imported by
 *   `lib/`.
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Layers from the bottom up: a module may import its own layer or lower. */
export const LAYERS: readonly (readonly string[])[] = [
  [
    "lib/errors.ts",
    "lib/ids.ts",
    "lib/cli_hint.ts",
    "lib/caller.ts",
    "lib/schedule.ts",
  ],
  ["lib/rules", "lib/http"],
  ["lib/db"],
  ["lib/schema"],
  ["lib/records"],
  [
    "lib/auth",
    "lib/files",
    "lib/logs",
    "lib/settings",
    "lib/mail",
    "lib/openapi",
    "lib/backup",
  ],
  ["lib/config.ts", "lib/sync.ts", "lib/realtime", "lib/cluster"],
  ["lib/core.ts"],
  ["lib/extend", "lib/migrations"],
  ["routes"],
  [
    "mod.ts",
    "main.ts",
    "lib/internal_app.ts",
    "lib/app.ts",
    "lib/workers",
    "lib/commands",
  ],
];

const ROOTS = ["lib", "routes", "mod.ts", "main.ts"];
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*\{[^}]*\})?)\s*from\s*["']([^"']+)["']/g;
const BARE = /(?:^|\n)\s*import\s*["']([^"']+)["']/g;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** One source file and the repository-relative files it imports. */
export interface SourceFile {
  path: string;
  imports: string[];
}

/** The node a file belongs to in the folder graph. */
export function nodeOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "lib" && parts.length > 2) return `lib/${parts[1]}`;
  if (parts[0] === "routes") return "routes";
  return path;
}

/** The layer index of a node, or -1 when it is in none. */
export function layerOf(node: string): number {
  return LAYERS.findIndex((layer) => layer.includes(node));
}

/** Relative imports of a source text, resolved against its path. */
export function importsOf(path: string, text: string): string[] {
  const found: string[] = [];
  for (const re of [IMPORT, BARE, DYNAMIC]) {
    for (const m of text.matchAll(re)) {
      const spec = m[1];
      if (!spec.startsWith(".") || !/\.tsx?$/.test(spec)) continue;
      found.push(join(dirname(path), spec).replaceAll("\\", "/"));
    }
  }
  return [...new Set(found)];
}

/** Every cycle of a graph, each as a path that returns to its start. */
export function findCycles(graph: Map<string, Set<string>>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") {
        cycles.push([...stack.slice(stack.indexOf(next)), next]);
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) {
    if (!state.has(node)) visit(node);
  }
  return cycles;
}

/** Problems of a set of files: cycles and imports against the layers. */
export function problems(files: SourceFile[]): string[] {
  const out: string[] = [];
  const fileGraph = new Map<string, Set<string>>();
  const folderGraph = new Map<string, Set<string>>();
  for (const f of files) {
    fileGraph.set(f.path, new Set(f.imports));
    const from = nodeOf(f.path);
    if (!folderGraph.has(from)) folderGraph.set(from, new Set());
    for (const target of f.imports) {
      const to = nodeOf(target);
      if (to === from) continue;
      folderGraph.get(from)!.add(to);
      const [lf, lt] = [layerOf(from), layerOf(to)];
      if (lf < 0) out.push(`${f.path}: ${from} is in no layer`);
      else if (lt < 0) out.push(`${f.path} imports ${target}: in no layer`);
      else if (lt > lf) {
        out.push(`${f.path} imports ${target}: ${to} is above ${from}`);
      }
    }
  }
  for (const c of findCycles(fileGraph)) {
    out.push(`file cycle: ${c.join(" → ")}`);
  }
  for (const c of findCycles(folderGraph)) {
    out.push(`folder cycle: ${c.join(" → ")}`);
  }
  return [...new Set(out)];
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* walk(path);
    else if (/\.tsx?$/.test(e.name) && !/_test\.tsx?$/.test(e.name)) {
      yield path;
    }
  }
}

/** Reads the repository's source files (tests excluded). */
export async function readSources(root: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  for (const r of ROOTS) {
    const abs = join(root, r);
    const paths = r.endsWith(".ts") ? [abs] : await Array.fromAsync(walk(abs));
    for (const p of paths) {
      const path = relative(root, p).replaceAll("\\", "/");
      files.push({
        path,
        imports: importsOf(path, await Deno.readTextFile(p)),
      });
    }
  }
  return files;
}

if (import.meta.main) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const found = problems(await readSources(root));
  for (const p of found) console.error(p);
  if (found.length > 0) {
    console.error(`Cannot pass the layer check: ${found.length} problem(s)`);
    Deno.exit(1);
  }
  console.log("layers: no cycle, every import points down");
}
