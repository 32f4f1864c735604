/** The test harness's own promises. */

import assert from "node:assert/strict";
import { verifyPassword } from "../lib/auth/password.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_PASSWORD_HASH,
  assertEquals,
} from "./_server.ts";

Deno.test("harness: the precomputed admin hash verifies the admin password", async () => {
  assert.equal(await verifyPassword(ADMIN_PASSWORD, ADMIN_PASSWORD_HASH), true);
  assert.equal(await verifyPassword("other", ADMIN_PASSWORD_HASH), false);
});

Deno.test("harness: assertEquals is deep strict equality", () => {
  assertEquals({ a: 1, b: [2] }, { b: [2], a: 1 });
  assert.throws(() => assertEquals({ a: undefined }, {}));
  assert.throws(() => assertEquals([NaN], [null]));
  assert.throws(() => assertEquals(1, "1"));
});
