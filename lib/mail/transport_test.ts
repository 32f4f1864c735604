import assert from "node:assert/strict";

/** The dependencies of `mod.ts`'s module graph on an npm package. */
async function uses(pkg: string): Promise<{ dynamic: boolean }[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL("../../mod.ts", import.meta.url).href],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "deno info failed");
  const graph: {
    modules: {
      dependencies?: { specifier: string; isDynamic?: boolean }[];
    }[];
  } = JSON.parse(new TextDecoder().decode(out.stdout));
  return graph.modules.flatMap((m) => m.dependencies ?? [])
    .filter((d) => d.specifier.startsWith(`npm:${pkg}@`))
    .map((d) => ({ dynamic: d.isDynamic === true }));
}

Deno.test("nodemailer is loaded on the first send, not with the server", async () => {
  // ~15 MB of a server's idle memory (bench/results.md "idle RSS") is
  // nodemailer and the Node modules it pulls in; a server that sends no
  // mail should not hold them. Sending itself: tests/account_mail_test.ts.
  const deps = await uses("nodemailer");
  assert.ok(deps.length > 0, "nodemailer is no dependency of mod.ts");
  assert.deepEqual(deps.filter((d) => !d.dynamic), []);
});
