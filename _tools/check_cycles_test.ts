import assert from "node:assert/strict";
import {
  findCycles,
  importsOf,
  layerOf,
  nodeOf,
  problems,
} from "./check_cycles.ts";

Deno.test("check_cycles: finds type imports, re-exports and dynamic imports", () => {
  const text = `import type { A } from "../db/storage.ts";
export { b } from "./b.ts";
import {
  c,
  type D,
} from "../schema/types.ts";
const e = await import("./e.ts");
import "npm:x";
const s = "./not_an_import.ts";`;
  assert.deepEqual(importsOf("lib/records/x.ts", text).sort(), [
    "lib/db/storage.ts",
    "lib/records/b.ts",
    "lib/records/e.ts",
    "lib/schema/types.ts",
  ]);
});

Deno.test("check_cycles: folders, layers and cycles", () => {
  assert.equal(nodeOf("lib/records/entity.ts"), "lib/records");
  assert.equal(nodeOf("lib/core.ts"), "lib/core.ts");
  assert.equal(nodeOf("routes/auth.ts"), "routes");
  assert.ok(layerOf("lib/db") < layerOf("lib/records"));
  const g = new Map([["a", new Set(["b"])], ["b", new Set(["a"])]]);
  assert.deepEqual(findCycles(g), [["a", "b", "a"]]);
});

Deno.test("check_cycles: an upward import and a route cycle are problems", () => {
  assert.deepEqual(
    problems([
      { path: "lib/db/x.ts", imports: ["lib/records/y.ts"] },
      { path: "lib/records/y.ts", imports: [] },
      { path: "routes/a.ts", imports: ["routes/b.ts"] },
      { path: "routes/b.ts", imports: ["routes/a.ts"] },
    ]),
    [
      "lib/db/x.ts imports lib/records/y.ts: lib/records is above lib/db",
      "file cycle: routes/a.ts → routes/b.ts → routes/a.ts",
    ],
  );
});

Deno.test("check_cycles: the repository passes", async () => {
  const { readSources } = await import("./check_cycles.ts");
  const root = new URL("..", import.meta.url).pathname;
  assert.deepEqual(problems(await readSources(root)), []);
});
