import {
  deepStrictEqual as assertEquals,
  match as assertMatch,
  ok as assert,
} from "node:assert/strict";
import {
  DUMMY_HASH,
  hashPassword,
  PARAMS,
  verifyDummy,
  verifyPassword,
} from "./password.ts";

const FORMAT =
  /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/;

Deno.test("password: hash format is scrypt$32768$8$1$salt$key", async () => {
  const h = await hashPassword("correct horse battery");
  assertMatch(h, FORMAT);
  const [, , , , salt, key] = h.split("$");
  assert(atob(salt).length >= 16, "salt of at least 128 bits");
  assertEquals(atob(key).length, 32);
  assert(!h.includes("correct horse"));
});

Deno.test("password: two hashes of one password differ (per-password salt)", async () => {
  const [a, b] = await Promise.all([
    hashPassword("same-password"),
    hashPassword("same-password"),
  ]);
  assert(a !== b);
  assert(a.split("$")[4] !== b.split("$")[4], "salts differ");
  assert(await verifyPassword("same-password", a));
  assert(await verifyPassword("same-password", b));
});

Deno.test("password: verify true for the password, false otherwise", async () => {
  const h = await hashPassword("s3cret-password");
  assertEquals(await verifyPassword("s3cret-password", h), true);
  assertEquals(await verifyPassword("s3cret-passworD", h), false);
  assertEquals(await verifyPassword("s3cret-password ", h), false);
  assertEquals(await verifyPassword("", h), false);
  assertEquals(await verifyPassword("s3cret-passwor", h), false);
});

Deno.test("password: a malformed stored hash verifies as false", async () => {
  const good = await hashPassword("pw-12345678");
  const [, , , , salt, key] = good.split("$");
  const malformed = [
    "",
    "not-a-hash",
    "$$$$$",
    "scrypt",
    `scrypt$32768$8$1$${salt}`,
    `scrypt$32768$8$1$${salt}$${key}$extra`,
    `bcrypt$32768$8$1$${salt}$${key}`,
    `scrypt$abc$8$1$${salt}$${key}`,
    `scrypt$32768$x$1$${salt}$${key}`,
    `scrypt$1.5$8$1$${salt}$${key}`,
    `scrypt$${2 ** 21}$8$1$${salt}$${key}`,
    `scrypt$32768$64$1$${salt}$${key}`,
    `scrypt$32768$8$16$${salt}$${key}`,
    `scrypt$32768$8$1$${salt}$`,
    `scrypt$32768$8$1$${salt}$${key.slice(0, 10)}`,
    `scrypt$32768$8$1$$${key}`,
  ];
  for (const stored of malformed) {
    assertEquals(
      await verifyPassword("pw-12345678", stored),
      false,
      JSON.stringify(stored),
    );
  }
});

Deno.test("password: stored scrypt parameters that are invalid verify as false (no throw)", async () => {
  // N must be a power of two > 1; r and p must be positive. A stored hash
  // with such parameters is malformed and must verify as false, not throw.
  const good = await hashPassword("pw-12345678");
  const [, , , , salt, key] = good.split("$");
  const badParams = [
    `scrypt$1000$8$1$${salt}$${key}`,
    `scrypt$0$8$1$${salt}$${key}`,
    `scrypt$1$8$1$${salt}$${key}`,
    `scrypt$-2$8$1$${salt}$${key}`,
    `scrypt$32768$0$1$${salt}$${key}`,
    `scrypt$32768$8$0$${salt}$${key}`,
  ];
  const failures: string[] = [];
  for (const stored of badParams) {
    try {
      const ok = await verifyPassword("pw-12345678", stored);
      if (ok !== false) {
        failures.push(`${stored.split("$", 4).join("$")}: verified ${ok}`);
      }
    } catch (err) {
      failures.push(
        `${stored.split("$", 4).join("$")}: threw ${
          err instanceof Error ? err.message : err
        }`,
      );
    }
  }
  assertEquals(failures, []);
});

Deno.test("password: other parameters in a stored hash are honoured", async () => {
  // A hash made with other (valid) parameters still verifies: N/r/p come
  // from the stored string. Build one by hand with node:crypto.
  const { scryptSync } = await import("node:crypto");
  const { Buffer } = await import("node:buffer");
  const salt = Buffer.from("0123456789abcdef");
  const key = scryptSync("legacy-password", salt, 32, { N: 1024, r: 8, p: 1 });
  const stored = `scrypt$1024$8$1$${salt.toString("base64")}$${
    key.toString("base64")
  }`;
  assertEquals(await verifyPassword("legacy-password", stored), true);
  assertEquals(await verifyPassword("legacy-passwore", stored), false);
});

Deno.test("password: unicode passwords", async () => {
  const pw = "pässwörd 🔑 密码 пароль";
  const h = await hashPassword(pw);
  assertMatch(h, FORMAT);
  assertEquals(await verifyPassword(pw, h), true);
  assertEquals(await verifyPassword("passwort 🔑 密码 пароль", h), false);
  assertEquals(await verifyPassword("pässwörd 🔒 密码 пароль", h), false);
  // Composed and decomposed forms of the same text are the same password.
  const composed = "caf\u00e9-cr\u00e8me";
  const decomposed = "cafe\u0301-cre\u0300me";
  const hc = await hashPassword(composed);
  assertEquals(await verifyPassword(decomposed, hc), true);
  const hd = await hashPassword(decomposed);
  assertEquals(await verifyPassword(composed, hd), true);
  // A lone surrogate does not crash.
  const lone = "abc\ud800def-12";
  const hl = await hashPassword(lone);
  assertEquals(typeof (await verifyPassword(lone, hl)), "boolean");
});

Deno.test("password: verifyDummy is always false", async () => {
  assertEquals(await verifyDummy("moonbase-dummy-password"), false);
  assertEquals(await verifyDummy("anything"), false);
});

Deno.test("password: the dummy hash has the parameters of new hashes", async () => {
  assertMatch(DUMMY_HASH, FORMAT);
  assertEquals(DUMMY_HASH.split("$").slice(1, 4).join("$"), PARAMS);
  const fresh = await hashPassword("x-unused-password");
  assertEquals(fresh.split("$").slice(1, 4).join("$"), PARAMS);
  assertEquals(
    await verifyPassword("moonbase-dummy-password", DUMMY_HASH),
    true,
  );
});
