/**
 * `AccountTokens` below HTTP, with a fake clock: spent once even when two
 * callers found the token first, refused past its lifetime, bound to its
 * purpose and entity, replaced by a newer one of its purpose.
 */

import assert from "node:assert/strict";
import { SqliteStorage } from "../db/sqlite.ts";
import {
  type AccountToken,
  AccountTokens,
  TOKEN_TTL_MS,
  type TokenSubject,
} from "./account_tokens.ts";

const SUBJECT: TokenSubject = {
  purpose: "password_reset",
  entityId: "e1",
  userId: "u1",
  email: "a@example.com",
  stamp: "s1",
};

async function withTokens(
  fn: (t: AccountTokens, clock: { now: number }) => Promise<void>,
): Promise<void> {
  const db = new SqliteStorage(":memory:");
  const clock = { now: 1_700_000_000_000 };
  const tokens = new AccountTokens(db, () => clock.now);
  try {
    await tokens.start();
    await fn(tokens, clock);
  } finally {
    await db.close();
  }
}

Deno.test("account tokens: spent once, even when found twice first", async () => {
  await withTokens(async (tokens) => {
    const token = await tokens.issue(SUBJECT);
    const a = await tokens.find(token, "password_reset", "e1");
    const b = await tokens.find(token, "password_reset", "e1");
    assert.ok(a && b);
    assert.deepEqual(
      [await tokens.spend(a), await tokens.spend(b as AccountToken)],
      [true, false],
    );
    assert.equal(await tokens.find(token, "password_reset", "e1"), undefined);
  });
});

Deno.test("account tokens: live until their lifetime ends, by the clock given", async () => {
  await withTokens(async (tokens, clock) => {
    const token = await tokens.issue(SUBJECT);
    clock.now += TOKEN_TTL_MS.password_reset - 1;
    assert.ok(await tokens.find(token, "password_reset", "e1"));
    clock.now += 1;
    assert.equal(await tokens.find(token, "password_reset", "e1"), undefined);
    const verify = await tokens.issue({ ...SUBJECT, purpose: "verification" });
    clock.now += 3 * 86_400_000 - 1;
    assert.ok(await tokens.find(verify, "verification", "e1"));
    clock.now += 1;
    assert.equal(await tokens.find(verify, "verification", "e1"), undefined);
  });
});

Deno.test("account tokens: bound to purpose and entity; a newer one replaces the older", async () => {
  await withTokens(async (tokens) => {
    const token = await tokens.issue(SUBJECT);
    assert.equal(await tokens.find(token, "verification", "e1"), undefined);
    assert.equal(await tokens.find(token, "password_reset", "e2"), undefined);
    const [id, secret] = [token.slice(0, 32), token.slice(33)];
    const other = secret[0] === "A" ? "B" : "A";
    assert.equal(
      await tokens.find(
        `${id}_${other}${secret.slice(1)}`,
        "password_reset",
        "e1",
      ),
      undefined,
    );
    const newer = await tokens.issue(SUBJECT);
    assert.equal(await tokens.find(token, "password_reset", "e1"), undefined);
    assert.ok(await tokens.find(newer, "password_reset", "e1"));
    // Another purpose of the same user stays.
    const verify = await tokens.issue({ ...SUBJECT, purpose: "verification" });
    assert.ok(await tokens.find(newer, "password_reset", "e1"));
    await tokens.forget("e1", "u1");
    assert.equal(await tokens.find(verify, "verification", "e1"), undefined);
  });
});
