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
    await t.step("starts at once on an empty file: one secret", async () => {
      // Each round: several starts find the file empty (a write cut off).
      for (let round = 0; round < 5; round++) {
        await Deno.writeTextFile(path, "");
        const all = await Promise.all(
          Array.from({ length: 6 }, () => resolveSecret(dir, undefined)),
        );
        const kept = (await Deno.readTextFile(path)).trim();
        assert.equal(kept.length >= 32, true);
        for (const s of all) assert.equal(s.value, kept, `round ${round}`);
        assert.equal(
          all.filter((s) => s.source === "generated").length,
          1,
          "generated once",
        );
      }
    });
    await t.step(
      "a directory in its place: one line saying what to do",
      async () => {
        await Deno.remove(path);
        await Deno.mkdir(path);
        const err = await resolveSecret(dir, undefined).then(
          () => assert.fail("resolved"),
          (e: Error) => e,
        );
        assert.match(
          err.message,
          /^Cannot read the JWT secret in .*\.jwt_secret: it is a directory, not a file; move it away .* or set MB_JWT_SECRET$/,
        );
        assert.doesNotMatch(err.message, /\n|os error/);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
