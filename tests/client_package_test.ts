/**
 * `@moonbase/client` as a package: `deno publish --dry-run` and
 * `npm pack --dry-run` pass offline with the right files, the two
 * manifests agree, the npm bundle runs in Node, the example app
 * (examples/client_app) runs against a server on both databases, and a
 * misspelled field fails `deno check` (the negative type test).
 *
 * @module
 */

import { assert, assertEquals, forEachDb, startServer } from "./_server.ts";
import { tour } from "../examples/client_app/app.ts";
import { exampleEntities } from "./_client_fixtures.ts";
import { denoCheck } from "./_deno_check.ts";

const root = new URL("../", import.meta.url);
const client = new URL("client/", root);

async function run(
  cmd: string,
  args: string[],
  cwd: URL = root,
): Promise<{ ok: boolean; out: string }> {
  const o = await new Deno.Command(cmd, {
    args,
    cwd: cwd.pathname,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { ok: o.success, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

function has(cmd: string): boolean {
  try {
    return new Deno.Command(cmd, { args: ["--version"] }).outputSync().success;
  } catch {
    return false;
  }
}

/** The npm bundle, built when missing (`deno task build` makes it). */
async function built(): Promise<URL> {
  const js = new URL("dist/moonbase.js", client);
  try {
    await Deno.stat(new URL("dist/types/mod.d.ts", client));
    await Deno.stat(js);
  } catch {
    const b = await run(Deno.execPath(), ["run", "-A", "client/build.ts"]);
    assert(b.ok, b.out);
  }
  return js;
}

Deno.test("client package: manifests agree; deno publish --dry-run", async () => {
  const deno = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", client)),
  );
  const npm = JSON.parse(
    await Deno.readTextFile(new URL("package.json", client)),
  );
  assertEquals([deno.name, deno.version, deno.license], [
    npm.name,
    npm.version,
    npm.license,
  ]);
  const r = await run(Deno.execPath(), [
    "publish",
    "--dry-run",
    "--allow-dirty",
  ], client);
  assert(r.ok, r.out);
  assert(/Success Dry run complete/.test(r.out), r.out);
  for (const f of ["mod.ts", "src/client.ts", "src/realtime.ts", "README.md"]) {
    assert(r.out.includes(`/client/${f}`), `${f} is published: ${r.out}`);
  }
  assert(!r.out.includes("/dist/"), "the npm build is not published to JSR");
});

Deno.test({
  name: "client package: npm pack --dry-run; the bundle runs in Node",
  ignore: !has("npm") || !has("node"),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const js = await built();
    const r = await run(
      "npm",
      ["pack", "--dry-run", "--json", "--offline"],
      client,
    );
    assert(r.ok, r.out);
    const [pack] = JSON.parse(r.out.slice(r.out.indexOf("[")));
    const files = pack.files.map((f: { path: string }) => f.path).sort();
    for (
      const f of [
        "README.md",
        "dist/moonbase.js",
        "dist/types/mod.d.ts",
        "package.json",
      ]
    ) {
      assert(files.includes(f), `${f} is packed: ${files}`);
    }
    assert(
      !files.some((f: string) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
      `no sources: ${files}`,
    );

    const s = await startServer("sqlite", { trustProxy: true });
    try {
      await exampleEntities(s);
      const script = `
        import { Moonbase, MoonbaseError } from ${JSON.stringify(js.href)};
        const mb = new Moonbase(${JSON.stringify(s.url)});
        const health = await mb.health();
        await mb.entity("users").create({ email: "node@example.com", password: "correct-horse-1" });
        const { user } = await mb.auth("users").login("node@example.com", "correct-horse-1");
        const got = [];
        const stop = await mb.entity("posts").subscribe("*", (e) => got.push(e.record.title));
        await mb.entity("posts").create({ title: "from node" });
        while (got.length === 0) await new Promise((r) => setTimeout(r, 20));
        stop();
        let status = 0;
        try { await mb.entity("posts").get("00000000-0000-7000-8000-000000000000"); }
        catch (e) { status = e instanceof MoonbaseError ? e.status : -1; }
        mb.close();
        console.log(JSON.stringify({ health: health.status, user: user.email, got, status }));
      `;
      const n = await run("node", ["--input-type=module", "-e", script]);
      assert(n.ok, n.out);
      assertEquals(JSON.parse(n.out.trim().split("\n").at(-1)!), {
        health: "ok",
        user: "node@example.com",
        got: ["from node"],
        status: 404,
      });
    } finally {
      await s.close();
    }
  },
});

Deno.test("client package: a misspelled field fails deno check", async () => {
  // One `deno check` for both programs; each diagnostic names its file.
  const checked = await denoCheck(root.pathname, [
    "--no-config",
    "examples/client_app/app.ts",
    "examples/client_app/must_fail/misspelled_field.ts",
  ]);
  const bad = { ok: checked.code === 0, out: checked.out };
  const elsewhere = checked.diagnostics.filter((d) =>
    d.file !== "misspelled_field.ts"
  );
  assert(
    elsewhere.length === 0,
    `the example app checks: ${elsewhere.map((d) => d.text).join("\n")}`,
  );
  assert(!bad.ok, "deno check must fail");
  assert(/'titel' does not exist in type/.test(bad.out), bad.out);
  assert(
    /Property 'vews' does not exist on type 'PostsRecord'/.test(bad.out),
    bad.out,
  );
  assert(/'"post"' is not assignable/.test(bad.out), bad.out);
  assert(/Found 3 errors/.test(bad.out), bad.out);
});

forEachDb("client package: the example app runs", async (_t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    await exampleEntities(s);
    const r = await tour(s.url, `ada-${db}@example.com`);
    assertEquals(r, {
      user: `ada-${db}@example.com`,
      titles: ["Hello", "Draft"],
      authorNames: ["Ada", "Ada"],
      live: ["Hello", "Draft"],
      refused: "title",
    });
  } finally {
    await s.close();
  }
});
