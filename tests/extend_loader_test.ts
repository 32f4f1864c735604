/**
 * The source loader (what a `deno compile` binary uses: read, transpile,
 * import from a `data:` URL), chosen here with `MB_SCRIPT_LOADER=source`:
 * `.ts` (with types), `.js` and `.mjs` scripts and the local modules they
 * import load through it and register routes, hooks and middleware that
 * work; its failures are one line naming the script.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { importScripts, scriptLoader } from "../lib/extend/load.ts";
import { localImports } from "../lib/extend/source_loader.ts";
import {
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { poll } from "./_wait.ts";

/** A fresh directory holding `files`. */
async function scriptsDir(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mb_loader_" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(join(dir, name), text);
  }
  return dir;
}

const SHARED_TS = `
export type Slug = string;
/** One instance per load: every script importing this sees the same id. */
export const instance: string = crypto.randomUUID();
export function slugify(title: string): Slug {
  return title.toLowerCase().trim().replace(/[^a-z0-9]+/g, "-");
}
`;

const TS_SCRIPT = `#!/usr/bin/env -S deno run
// A TypeScript script: types, an enum, generics, a type-only import.
import type { ScriptApp } from "moonbase/mod.ts";
import {
  instance, // shared
  slugify,
  type Slug,
} from "./_shared.ts";
import { basename } from "node:path";

enum Kind { Note = "note" }
interface Answer<T> { kind: Kind; value: T; file: string; instance: string }

function answer<T>(value: T): Answer<T> {
  return { kind: Kind.Note, value, file: basename("/x/a.ts"), instance };
}

export default function (app: ScriptApp): void {
  app.route("GET", "/api/src/ts/:name", (ctx) => answer<Slug>(slugify(ctx.params.name)));
  app.onRecord("beforeCreate", "items", (e) => {
    e.record.slug = slugify(String(e.record.title));
  });
}
`;

const JS_SCRIPT = `import { instance } from "./_shared.ts"
export default function (app) {
  app.route("GET", "/api/src/js", () => ({ instance, url: import.meta.url.slice(0, 5) }));
}
`;

const MJS_SCRIPT = `export default (app) => {
  app.use(async (ctx, next) => {
    const res = await next();
    res.headers.set("x-mjs", "yes");
    return res;
  });
};
`;

forEachDb(
  "source loader: .ts, .js and .mjs scripts register what works",
  async (_t, db) => {
    const dir = await scriptsDir({
      "_shared.ts": SHARED_TS,
      "_broken.ts": "export const = ;\n",
      "a.ts": TS_SCRIPT,
      "b.js": JS_SCRIPT,
      "c.mjs": MJS_SCRIPT,
    });
    let s: TestServer | undefined;
    try {
      s = await startServer(db, { scriptsDir: dir, scriptLoader: "source" });
      let r = await s.request("GET", "/api/src/ts/Hello%20World");
      assertStatus(r, 200);
      assert.equal(r.data.value, "hello-world");
      assert.equal(r.data.kind, "note");
      assert.equal(r.data.file, "a.ts");
      const shared = r.data.instance;

      r = await s.request("GET", "/api/src/js");
      assertStatus(r, 200);
      assert.equal(r.data.url, "data:", "loaded from a data: URL");
      assert.equal(r.data.instance, shared, "one _shared.ts module for both");
      assert.equal(r.headers.get("x-mjs"), "yes");

      r = await s.request("GET", "/api/v1/health");
      assertStatus(r, 200);
      assert.equal(
        r.headers.get("x-mjs"),
        "yes",
        "middleware on built-in routes",
      );

      const token = await s.adminToken();
      assertStatus(
        await s.request("POST", "/api/v1/schemas", {
          token,
          body: {
            name: "items",
            type: "base",
            fields: [
              { name: "title", type: "string" },
              { name: "slug", type: "string" },
            ],
            rules: { add: { mode: "public", expr: "" } },
          },
        }),
        201,
      );
      r = await s.request("POST", "/api/v1/entities/items", {
        body: { title: "Moon Base" },
      });
      assertStatus(r, 201);
      assert.equal(r.data.slug, "moon-base", "the hook ran");
    } finally {
      await s?.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

forEachDb(
  "source loader: --dev reloads scripts and the modules they import",
  async (_t, db) => {
    const dir = await scriptsDir({
      "_word.ts": `export const word: string = "w1";\n`,
      "a.ts": `import { word } from "./_word.ts";\n` +
        `export default (app: { route(m: string, p: string, h: () => unknown): void }) =>\n` +
        `  app.route("GET", "/api/src/word", () => ({ word }));\n`,
    });
    let s: TestServer | undefined;
    try {
      s = await (async () => {
        const server = await startServer(db, {
          scriptsDir: dir,
          dev: true,
          scriptLoader: "source",
        });
        const first = await server.request("GET", "/api/src/word");
        assert.equal(first.data?.word, "w1");
        await Deno.writeTextFile(
          join(dir, "_word.ts"),
          `export const word: string = "w2";\n`,
        );
        await poll(
          "the reload",
          async () =>
            (await server.request("GET", "/api/src/word")).data?.word === "w2",
        )
          .catch(() => {/* the assertion below says what it answers */});
        return server;
      })();
      assert.equal((await s.request("GET", "/api/src/word")).data.word, "w2");
    } finally {
      await s?.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

/** Scripts the source loader refuses, and the one line it says. */
const REFUSED: { what: string; files: Record<string, string>; says: RegExp }[] =
  [
    {
      what: "a TypeScript syntax error",
      files: { "a.ts": "const ok = 1;\nexport const x: number = ;\n" },
      says:
        /^Cannot load script \S+a\.ts: SyntaxError: .*\(file:\/\/\S+a\.ts:2:\d+\)$/,
    },
    {
      what: "a JavaScript syntax error",
      files: { "a.js": "export default () => {\n" },
      says: /^Cannot load script \S+a\.js: SyntaxError: .*\S+a\.js/,
    },
    {
      what: "an import cycle",
      files: {
        "a.ts": `import "./_b.ts";\n`,
        "_b.ts": `import "./_c.ts";\n`,
        "_c.ts": `import "./_b.ts";\n`,
      },
      says:
        /^Cannot load script \S+a\.ts: import cycle a\.ts → _b\.ts → _c\.ts → _b\.ts/,
    },
    {
      what: "a missing local module",
      files: { "a.ts": `import { x } from "./_gone.ts";\nconsole.log(x);\n` },
      says: /^Cannot load script \S+a\.ts: cannot read \S+_gone\.ts: /,
    },
    {
      what: "a local module of another kind",
      files: {
        "a.js":
          `import data from "./_data.json" with { type: "json" };\nexport default () => data;\n`,
        "_data.json": "{}",
      },
      says: /^Cannot load script \S+a\.js: cannot import \S+_data\.json: /,
    },
    {
      what: "a throw while the module runs",
      files: { "a.mjs": `throw new Error("not today");\n` },
      says: /^Cannot load script \S+a\.mjs: not today$/,
    },
  ];

Deno.test("source loader: refusals are one line naming the script", async (t) => {
  for (const { what, files, says } of REFUSED) {
    await t.step(what, async () => {
      const dir = await scriptsDir(files);
      try {
        const err = await importScripts(dir, { loader: "source" }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof Error, "the load fails");
        assert.match(err.message, says);
        assert.ok(!err.message.includes("\n"), "one line");
        assert.ok(!err.message.includes("data:text"), "no data: URL");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  }
});

Deno.test("source loader: the import declarations it rewrites", async (t) => {
  const cases: { what: string; code: string; found: string[] }[] = [
    {
      what: "declarations at the top, across lines and comments",
      code:
        `#!/usr/bin/env deno\n// c\n/* b\n */\nimport a from "./a.js";\nimport {\n  b, // x\n  c as d,\n} from './b.ts'\nimport * as e from "../e.mjs";\nimport "./side.js";\nexport * from "./f.ts";\nexport { g } from "/abs/g.js";\nimport h from "./h.json" with { type: "json" };\n`,
      found: [
        "./a.js",
        "./b.ts",
        "../e.mjs",
        "./side.js",
        "./f.ts",
        "/abs/g.js",
        "./h.json",
      ],
    },
    {
      what: "nothing after the first other statement",
      code:
        `import a from "./a.js";\nconst t = \`\nimport z from "./z.js";\n\`;\nimport b from "./b.js";\n`,
      found: ["./a.js"],
    },
    {
      what: "import.meta and dynamic imports are not declarations",
      code: `import.meta.url;\nimport a from "./a.js";\n`,
      found: [],
    },
    {
      what: "bare specifiers are found (and later left alone)",
      code:
        `import pg from "npm:postgres@3";\nimport { join } from "node:path";\n`,
      found: ["npm:postgres@3", "node:path"],
    },
  ];
  for (const { what, code, found } of cases) {
    await t.step(what, () => {
      const spans = localImports(code);
      assert.deepEqual(spans.map((s) => s.specifier), found);
      for (const s of spans) {
        assert.equal(code.slice(s.start, s.end), s.specifier, "exact span");
      }
    });
  }
});

Deno.test("source loader: MB_SCRIPT_LOADER chooses the loader", async (t) => {
  const cases: [string | undefined, string][] = [
    [undefined, "file"],
    ["file", "file"],
    ["source", "source"],
    [
      "bundle",
      "Cannot load scripts: MB_SCRIPT_LOADER=bundle (use file or source)",
    ],
  ];
  for (const [env, expected] of cases) {
    await t.step(`MB_SCRIPT_LOADER=${env ?? "(unset)"}`, () => {
      // The value is passed in: tests never change the process's
      // environment (other test files run at the same time).
      let got: string;
      try {
        got = scriptLoader(env);
      } catch (err) {
        got = (err as Error).message;
      }
      assert.equal(got, expected);
    });
  }
});
