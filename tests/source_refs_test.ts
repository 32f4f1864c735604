/**
 * Comments explain themselves: no source file cites documents that are not
 * in the repository (the specification's sections, design or pitfall notes
 * kept elsewhere). README.md and docs/ are in the repository and may be cited.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const DIRS = ["lib", "routes", "tests", "dashboard/src", "bench"];
// Built from parts so that this file does not match itself.
const CITES = new RegExp(
  ["spec \\u00a7", "\\u00a7\\d", "DES" + "IGN", "PIT" + "FALLS"].join("|"),
);

async function* sources(dir: URL): AsyncGenerator<URL> {
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) yield* sources(url);
    else if (/\.(ts|tsx)$/.test(e.name)) yield url;
  }
}

Deno.test("source comments cite no document outside the repository", async () => {
  const found: string[] = [];
  const files = [new URL("main.ts", ROOT), new URL("mod.ts", ROOT)];
  for (const d of DIRS) {
    for await (const f of sources(new URL(d + "/", ROOT))) files.push(f);
  }
  for (const f of files) {
    const lines = (await Deno.readTextFile(f)).split("\n");
    lines.forEach((line, i) => {
      if (CITES.test(line)) {
        found.push(
          `${f.pathname.slice(ROOT.pathname.length)}:${i + 1}: ${line.trim()}`,
        );
      }
    });
  }
  assert.deepEqual(found, []);
});
