/**
 * Loading scripts at start: a script that replaces a built-in route, takes
 * another script's route, registers something malformed, throws, or does
 * not parse stops start-up with one line naming the script (and the route);
 * `moonbase serve` prints that line and exits 2. Files starting with `_`
 * and files that are not scripts are skipped; `.mjs` loads; `helpers` and
 * `setup(app)` exports still work; scripts load in name order.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { forEachDb } from "./_server.ts";
import { scriptsDirOf, startupError, withScripts } from "./_extend_fixtures.ts";

const route = (method: string, path: string) =>
  `export default (app) => { app.route("${method}", "${path}", () => "mine"); };`;

/** Scripts that must stop start-up; `says` are parts of the one line. */
const REFUSED: {
  name: string;
  scripts: Record<string, string>;
  says: string[];
}[] = [
  {
    name: "replacing GET /api/v1/health",
    scripts: { "shadow.js": route("GET", "/api/v1/health") },
    says: ["shadow.js", "GET /api/v1/health"],
  },
  {
    name: "replacing the records list under another parameter name",
    scripts: { "shadow.ts": route("GET", "/api/v1/entities/:name") },
    says: ["shadow.ts", "GET /api/v1/entities/:name"],
  },
  {
    name: "replacing a record update",
    scripts: { "shadow.js": route("patch", "/api/v1/entities/:e/:id") },
    says: ["shadow.js", "PATCH /api/v1/entities/:e/:id"],
  },
  {
    name: "a route another script took",
    scripts: {
      "a.js": route("GET", "/api/mine/:x"),
      "b.js": route("GET", "/api/mine/:y"),
    },
    says: ["b.js", "GET /api/mine/:y", "a.js"],
  },
  {
    name: "a syntax error",
    scripts: { "broken.ts": "export default (app) => { app.route(;" },
    says: ["broken.ts"],
  },
  {
    name: "a throw in the default export",
    scripts: {
      "throws.js": 'export default () => { throw new Error("no config"); };',
    },
    says: ["throws.js", "no config"],
  },
  {
    name: "an unknown record event",
    scripts: {
      "event.js":
        'export default (app) => { app.onRecord("beforeSave", "x", () => {}); };',
    },
    says: ["event.js", "beforeSave"],
  },
  {
    name: "a helper with a reserved name",
    scripts: {
      "helper.js":
        'export default (app) => { app.helper("auth", () => true); };',
    },
    says: ["helper.js", "auth"],
  },
];

forEachDb(
  "start-up: a bad script stops it with one line naming the script",
  async (t, db) => {
    for (const c of REFUSED) {
      await t.step(c.name, async () => {
        const msg = await startupError(db, c.scripts);
        assert.ok(!msg.includes("\n"), `one line: ${msg}`);
        assert.ok(msg.startsWith("Cannot load script "), msg);
        for (const part of c.says) {
          assert.ok(msg.includes(part), `${part}: ${msg}`);
        }
      });
    }
  },
);

const GOOD = {
  "_draft.js": "this is not JavaScript (",
  "notes.md": "# not a script",
  "data.json": "{}",
  "b_second.mjs": `
export default (app) => {
  app.route("GET", "/api/order", () => globalThis.__mbOrder.splice(0));
  globalThis.__mbOrder.push("b_second.mjs");
};`,
  "a_first.ts": `
globalThis.__mbOrder = ["a_first.ts"];
export const helpers = { always: () => true };
export function setup(app) {
  app.route("GET", "/api/legacy/:x", (ctx) => Response.json({ legacy: ctx.params.x }));
}`,
};

forEachDb(
  "start-up: skipped files, name order, helpers and setup()",
  async (_t, db) => {
    await withScripts(db, GOOD, async (s) => {
      const order = await s.request("GET", "/api/order");
      assert.deepEqual(order.data, ["a_first.ts", "b_second.mjs"]);
      const legacy = await s.request("GET", "/api/legacy/yes");
      assert.deepEqual(JSON.parse(legacy.text), { legacy: "yes" });
      const r = await s.request("POST", "/api/v1/schemas", {
        token: await s.adminToken(),
        body: {
          name: "open",
          type: "base",
          fields: [],
          rules: { list: { mode: "custom", expr: "always()" } },
        },
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(
        (await s.request("GET", "/api/v1/entities/open")).status,
        200,
      );
    });
  },
);

Deno.test({
  name: "start-up: moonbase serve prints the one line and exits 2",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await scriptsDirOf({
      "shadow.js": route("GET", "/api/v1/health"),
    });
    const data = await Deno.makeTempDir({ prefix: "mb_ext_data_" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "main.ts",
          "--dataDir",
          data,
          "--scriptsDir",
          dir,
          "serve",
          "--port",
          "0",
        ],
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        env: { NO_COLOR: "1", MB_JWT_SECRET: "x".repeat(40) },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 2, stderr);
      const lines = stderr.split("\n").filter((l) => l.startsWith("moonbase:"));
      assert.equal(lines.length, 1, stderr);
      assert.match(
        lines[0],
        /^moonbase: Cannot load script shadow\.js: route GET \/api\/v1\/health is built in$/,
      );
      assert.ok(!/^\s+at /m.test(stderr), `no stack: ${stderr}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(data, { recursive: true });
    }
  },
});
