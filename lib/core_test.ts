import assert from "node:assert/strict";
import { join } from "node:path";

/**
 * A start that fails after its logs started (the secret is read after them)
 * must leave nothing running (log writer, pruning timer): the process of an
 * app embedding Moonbase could otherwise never exit.
 */
Deno.test("core: a start that fails late leaves nothing running", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_core_" });
  try {
    await Deno.mkdir(join(dataDir, ".jwt_secret"));
    const core = new URL("./core.ts", import.meta.url).href;
    const code = `import { createCore } from ${JSON.stringify(core)};
try {
  await createCore({ dataDir: ${JSON.stringify(dataDir)}, quiet: true });
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", code],
      cwd: new URL("..", import.meta.url).pathname,
      stdout: "null",
      stderr: "piped",
    }).spawn();
    // A deadline only to report a hang instead of waiting for ever.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), 60_000);
    });
    const output = child.output();
    const out = await Promise.race([output, hung]);
    clearTimeout(timer);
    if (out === "hung") {
      child.kill();
      await output;
      assert.fail("the process did not exit after the failed start");
    }
    const stderr = new TextDecoder().decode(out.stderr);
    assert.match(
      stderr,
      /^Cannot read the JWT secret in .*: it is a directory/,
    );
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
