import assert from "node:assert/strict";
import { join } from "node:path";
import { resolveSecret } from "./secret.ts";

Deno.test("secret: a file's secret is used, generated once when missing, never overwritten", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mb_secret_" });
  const path = join(dir, ".jwt_secret");
  try {
    await t.step("missing: generated and kept", async () => {
      const a = await resolveSecret(dir, undefined);
      assert.equal(a.source, "generated");
      const b = await resolveSecret(dir, undefined);
      assert.deepEqual(b, { value: a.value, source: "file" });
    });
    await t.step("too short: refused, the file untouched", async () => {
      await Deno.writeTextFile(path, "short-secret\n");
      await assert.rejects(
        resolveSecret(dir, undefined),
        /Cannot use the JWT secret in .*fewer than 32 characters/,
      );
      assert.equal(await Deno.readTextFile(path), "short-secret\n");
    });
    await t.step("empty: replaced", async () => {
      await Deno.writeTextFile(path, "");
      const s = await resolveSecret(dir, undefined);
      assert.equal(s.source, "generated");
      assert.equal((await Deno.readTextFile(path)).trim(), s.value);
    });
    await t.step("two starts at once: one secret", async () => {
      await Deno.remove(path);
      const [a, b] = await Promise.all([
        resolveSecret(dir, undefined),
        resolveSecret(dir, undefined),
      ]);
      assert.equal(a.value, b.value);
      assert.equal((await Deno.readTextFile(path)).trim(), a.value);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
