/**
 * `--dev` reload of extension scripts: a change in `--scriptsDir` (a file
 * created, edited, removed; a helper module the scripts import) swaps the
 * whole set without a restart; a script that fails to load is logged and
 * the last good set keeps serving; outside `--dev` nothing reloads and a
 * broken script stops start-up with one line.
 *
 * The `--dev` links live in a directory no other local user can enter.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../mod.ts";
import {
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { pause, poll } from "./_wait.ts";
import { withScripts } from "./_extend_fixtures.ts";

/** A script whose route answers `value` at `path`. */
const routeScript = (path: string, value: string) =>
  `export default (app) => app.route("GET", ${
    JSON.stringify(path)
  }, () => ({ v: ${JSON.stringify(value)} }));\n`;

/** The `v` a script route answers (or the status when it is not 200). */
async function answer(s: TestServer, path: string): Promise<unknown> {
  const r = await s.request("GET", path);
  return r.status === 200 ? r.data?.v : r.status;
}

/** Waits until `path` answers `expected`. */
function answers(s: TestServer, path: string, expected: unknown) {
  return poll(
    `${path} to answer ${expected}`,
    async () => (await answer(s, path)) === expected,
  );
}

/** Error lines of the system logs. */
async function errors(s: TestServer): Promise<string[]> {
  await s.app.log.flush();
  const rows = await s.app.logs.storage.query(
    `SELECT "message" FROM "mb_logs" WHERE "level" = ? ORDER BY "id"`,
    ["error"],
  );
  return rows.map((r) => String(r.message));
}

/** A dev server on a fresh scripts directory holding `files`. */
async function devServer(
  db: "sqlite" | "postgres",
  files: Record<string, string>,
  dev = true,
): Promise<{ s: TestServer; dir: string; done: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "mb_reload_" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(join(dir, name), text);
  }
  const s = await startServer(db, { scriptsDir: dir, dev });
  return {
    s,
    dir,
    done: async () => {
      await s.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

forEachDb(
  "reload: edits, new files, removals and helper modules",
  async (t, db) => {
    const { s, dir, done } = await devServer(db, {
      "a.js": routeScript("/api/x/a", "a1"),
      "_shared.ts": `export const word: string = "s1";\n`,
      "b.ts": `import { word } from "./_shared.ts";\n` +
        `export default (app: { route: (m: string, p: string, h: () => unknown) => void }) =>\n` +
        `  app.route("GET", "/api/x/b", () => ({ v: word }));\n`,
    });
    try {
      assert.equal(await answer(s, "/api/x/a"), "a1");
      assert.equal(await answer(s, "/api/x/b"), "s1");

      await t.step("an edited script answers anew", async () => {
        await Deno.writeTextFile(
          join(dir, "a.js"),
          routeScript("/api/x/a", "a2"),
        );
        await answers(s, "/api/x/a", "a2");
      });

      await t.step(
        "an edited helper module reaches the script importing it",
        async () => {
          await Deno.writeTextFile(
            join(dir, "_shared.ts"),
            `export const word: string = "s2";\n`,
          );
          await answers(s, "/api/x/b", "s2");
        },
      );

      await t.step("a new script's route appears", async () => {
        assert.equal(await answer(s, "/api/x/c"), 404);
        await Deno.writeTextFile(
          join(dir, "c.mjs"),
          routeScript("/api/x/c", "c1"),
        );
        await answers(s, "/api/x/c", "c1");
      });

      await t.step("a removed script's route disappears", async () => {
        await Deno.remove(join(dir, "c.mjs"));
        await answers(s, "/api/x/c", 404);
        assert.equal(await answer(s, "/api/x/a"), "a2", "the others stay");
      });

      await t.step("record hooks swap with the set", async () => {
        const token = await s.adminToken();
        assertStatus(
          await s.request("POST", "/api/v1/schemas", {
            token,
            body: {
              name: "notes",
              type: "base",
              fields: [{ name: "tag", type: "string" }],
              rules: { add: { mode: "public", expr: "" } },
            },
          }),
          201,
        );
        const hook = (tag: string) =>
          `export default (app) => app.onRecord("beforeCreate", "notes", (e) => { e.record.tag = ${
            JSON.stringify(tag)
          }; });\n`;
        await Deno.writeTextFile(join(dir, "hook.js"), hook("h1"));
        await Deno.writeTextFile(
          join(dir, "probe.js"),
          routeScript("/api/x/p", "p1"),
        );
        await answers(s, "/api/x/p", "p1");
        const tagOf = async () => {
          const r = await s.request("POST", "/api/v1/entities/notes", {
            body: { tag: "none" },
          });
          assertStatus(r, 201);
          return r.data.tag;
        };
        assert.equal(await tagOf(), "h1");
        await Deno.writeTextFile(join(dir, "hook.js"), hook("h2"));
        await Deno.writeTextFile(
          join(dir, "probe.js"),
          routeScript("/api/x/p", "p2"),
        );
        await answers(s, "/api/x/p", "p2");
        assert.equal(await tagOf(), "h2");
        await Deno.remove(join(dir, "hook.js"));
        await Deno.writeTextFile(
          join(dir, "probe.js"),
          routeScript("/api/x/p", "p3"),
        );
        await answers(s, "/api/x/p", "p3");
        assert.equal(await tagOf(), "none", "a removed hook no longer runs");
      });
      assert.deepEqual(await errors(s), []);
    } finally {
      await done();
    }
  },
);

/** Ways a script can fail to load, each with what its log line says. */
const BROKEN: { what: string; text: string; says: RegExp }[] = [
  {
    what: "a syntax error",
    text:
      `export default (app) => { app.route("GET", "/api/x/a", () => ({ v: "bad" }); \n`,
    says: /^Cannot load script .*a\.js: .*SyntaxError/,
  },
  {
    what: "a throw in its default export",
    text: `export default () => { throw new Error("no luck"); };\n`,
    says: /^Cannot load script a\.js: no luck/,
  },
  {
    what: "a route that replaces a built-in one",
    text:
      `export default (app) => app.route("GET", "/api/v1/health", () => 1);\n`,
    says: /^Cannot load script a\.js: route GET \/api\/v1\/health is built in/,
  },
];

forEachDb(
  "reload: a broken script is logged, the last good set serves, a fix comes in",
  async (t, db) => {
    const { s, dir, done } = await devServer(db, {
      "a.js": routeScript("/api/x/a", "good"),
      "b.js": routeScript("/api/x/b", "b1"),
    });
    try {
      let version = 1;
      for (const { what, text, says } of BROKEN) {
        await t.step(what, async () => {
          const before = (await errors(s)).length;
          await Deno.writeTextFile(join(dir, "a.js"), text);
          await poll(
            "the error line",
            async () => (await errors(s)).length > before,
          );
          const lines = (await errors(s)).slice(before);
          assert.equal(lines.length, 1, lines.join("\n"));
          assert.match(lines[0], says);
          assert.ok(!lines[0].includes("\n"), "one line");
          assert.equal(
            await answer(s, "/api/x/a"),
            `good`,
            "the old set serves",
          );
          assert.equal(await answer(s, "/api/x/b"), `b${version}`);
          version++;
          await Deno.writeTextFile(
            join(dir, "b.js"),
            routeScript("/api/x/b", `b${version}`),
          );
          await Deno.writeTextFile(
            join(dir, "a.js"),
            routeScript("/api/x/a", "good"),
          );
          await answers(s, "/api/x/b", `b${version}`);
          assert.equal(await answer(s, "/api/x/a"), "good");
        });
      }
    } finally {
      await done();
    }
  },
);

// Issue 28 item 7: a dev start-up with a broken script used to serve with no
// scripts at all, so a guard in another file (a middleware refusing
// requests) was off. It now fails as outside --dev; a failed reload keeps
// the last good set (the test above).
Deno.test("reload: dev start-up with a broken script fails with one line, as outside --dev", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_reload_" });
  const dataDir = await Deno.makeTempDir({ prefix: "mb_reload_data_" });
  try {
    await Deno.writeTextFile(
      join(dir, "guard.js"),
      `export default (app) => app.use(() => { throw app.error(403, "Cannot pass: guarded"); });\n`,
    );
    await Deno.writeTextFile(
      join(dir, "zz.ts"),
      `export default (app: unknown) => { const x: number = ; };\n`,
    );
    const app = await createApp({
      dataDir,
      scriptsDir: dir,
      dev: true,
      quiet: true,
    })
      .then((a) => a, (e: unknown) => e);
    if (!(app instanceof Error)) {
      await (app as { close(): Promise<void> }).close();
      assert.fail("a dev server started without its guard script");
    }
    assert.match(app.message, /^Cannot load script \S*zz\.ts: SyntaxError/);
    assert.ok(!app.message.includes("\n"), "one line");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(dataDir, { recursive: true });
  }
});

forEachDb("reload: outside --dev nothing is watched", async (_t, db) => {
  const { s, dir, done } = await devServer(
    db,
    { "a.js": routeScript("/api/x/a", "one") },
    false,
  );
  try {
    await Deno.writeTextFile(join(dir, "a.js"), routeScript("/api/x/a", "two"));
    await Deno.writeTextFile(join(dir, "b.js"), routeScript("/api/x/b", "new"));
    // Several times the settle delay of a dev reload: the absence of a
    // reload has nothing to poll for.
    await pause(1000);
    assert.equal(await answer(s, "/api/x/a"), "one");
    assert.equal(await answer(s, "/api/x/b"), 404);
  } finally {
    await done();
  }
});

Deno.test("reload: start-up with a syntax error (not dev) fails with one line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_reload_" });
  const dataDir = await Deno.makeTempDir({ prefix: "mb_reload_data_" });
  try {
    await Deno.writeTextFile(join(dir, "ok.js"), routeScript("/api/x/ok", "1"));
    await Deno.writeTextFile(join(dir, "zz.ts"), `export const = 1;\n`);
    const err = await createApp({ dataDir, scriptsDir: dir, quiet: true })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof Error, "start-up fails");
    assert.match(
      err.message,
      /^Cannot load script \S*zz\.ts: SyntaxError: .*\(file:\/\/\S*zz\.ts:1:\d+\)$/,
    );
    assert.ok(!err.message.includes("\n"), "one line");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("reload: a dev server's links to the scripts go away on close", async () => {
  // The links live in the OS temp directory; other test files run at the
  // same time, so only the ones leading to this test's own directory count
  // (the process's TMPDIR is never changed: other files would see it).
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  const dir = await Deno.makeTempDir({ prefix: "mb_reload_" });
  const dataDir = await Deno.makeTempDir({ prefix: "mb_reload_data_" });
  const links = async () => {
    const out: string[] = [];
    for await (const e of Deno.readDir(tmp)) {
      if (!e.name.startsWith("moonbase_scripts_")) continue;
      try {
        for await (const l of Deno.readDir(join(tmp, e.name))) {
          const to = await Deno.readLink(join(tmp, e.name, l.name)).catch(
            () => "",
          );
          if (to === dir) out.push(e.name);
        }
      } catch { /* another test's directory, gone meanwhile */ }
    }
    return [...new Set(out)];
  };
  try {
    await Deno.writeTextFile(join(dir, "a.js"), routeScript("/api/x/a", "1"));
    const s = await startServer("sqlite", {
      scriptsDir: dir,
      dev: true,
      dataDir,
    });
    await Deno.writeTextFile(join(dir, "a.js"), routeScript("/api/x/a", "2"));
    await answers(s, "/api/x/a", "2");
    assert.equal((await links()).length, 1, "one directory of links");
    await s.close();
    assert.deepEqual(await links(), [], "removed on close");
    assert.ok((await Deno.stat(join(dir, "a.js"))).isFile, "scripts untouched");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(dataDir, { recursive: true });
  }
});

function tmpDir(): string {
  return Deno.env.get("TMPDIR") ?? "/tmp";
}

forEachDb(
  "reload: the --dev links live in a directory only this user can enter",
  async (t, db) => {
    const before = new Set<string>();
    for await (const e of Deno.readDir(tmpDir())) before.add(e.name);
    await withScripts(db, { "a.js": "export default () => {};" }, async () => {
      await t.step("owner-only, links to the scripts directory", async () => {
        let found = 0;
        for await (const e of Deno.readDir(tmpDir())) {
          if (!e.name.startsWith("moonbase_scripts_") || before.has(e.name)) {
            continue;
          }
          const st = await Deno.lstat(`${tmpDir()}/${e.name}`);
          assert.ok(st.isDirectory);
          assert.equal(
            (st.mode ?? 0) & 0o077,
            0,
            `mode ${(st.mode ?? 0).toString(8)}`,
          );
          found++;
        }
        assert.ok(found >= 1, "a link directory exists in --dev");
      });
    }, { dev: true });
  },
);
