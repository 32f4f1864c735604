/**
 * TOTP enrolments below HTTP: a `setup` that lands between a `confirm`'s
 * check of the code and its write (the user's second tab, or a second
 * request) must not leave the user enrolled with a secret no code was
 * proved for. The interleaving is forced by a storage that runs the setup
 * right before the confirm's write.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { SqlValue, Storage } from "../db/storage.ts";
import { SqliteStorage } from "../db/sqlite.ts";
import type { Entity } from "../records/entity.ts";
import { deriveKey } from "./code_hash.ts";
import { ensureSignInTables } from "./sign_in_tables.ts";
import { base32Decode, totpAt } from "./totp.ts";
import { TotpEnrollments } from "./totp_enrollment.ts";

const NOW = 1_700_000_005_000;
const ENTITY = { id: "e1", name: "people" } as unknown as Entity;

/** `db` with `before` run once right before its first `UPDATE`. */
function withHook(db: Storage, before: () => Promise<void>): Storage {
  let pending: (() => Promise<void>) | undefined = before;
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "run") {
        return async (sql: string, params?: readonly SqlValue[]) => {
          if (pending && sql.startsWith("UPDATE")) {
            const f = pending;
            pending = undefined;
            await f();
          }
          return await target.run(sql, params);
        };
      }
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

Deno.test("a setup racing a confirm never enrols an unproved secret", async () => {
  const db = new SqliteStorage(":memory:");
  try {
    await ensureSignInTables(db);
    const key = deriveKey("test-secret", "totp");
    const plain = new TotpEnrollments(db, key, () => NOW);
    const first = await plain.setup(ENTITY, "u1", "a@x.test", "App");
    const racing = new TotpEnrollments(
      withHook(db, async () => {
        await plain.setup(ENTITY, "u1", "a@x.test", "App");
      }),
      key,
      () => NOW,
    );
    const proved = base32Decode(first.secret)!;
    // Refused or enrolled, both are fine: enrolled with another secret is not.
    await racing.confirm(ENTITY, "u1", totpAt(proved, NOW)).catch(() => {});
    if (await plain.enrolled(ENTITY, "u1")) {
      assert.ok(
        await plain.accept(ENTITY, "u1", totpAt(proved, NOW + 30_000)),
        "enrolled with the secret whose code confirmed it",
      );
    }
  } finally {
    await db.close();
  }
});
