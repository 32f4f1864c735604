/**
 * Attacks on the view guard (issue 13, item 3) that got through: each case
 * is a way an admin could publish what views may never read.
 *
 * Each step creates its own entities (names carry the step's letter), so no
 * step depends on another.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { allRules, asAdmin, createEntity, createRecord } from "./_scenarios.ts";
import { physicalName } from "../lib/db/storage.ts";

const HASH = "scrypt$";

/** An auth entity with a 64-character name (stored under a hashed physical name) and one user. */
async function longAuth(s: TestServer, letter: string): Promise<string> {
  const name = letter.repeat(63) + "u";
  await createEntity(s, { name, type: "auth", fields: [] });
  await createRecord(s, name, {
    email: "u@example.com",
    password: "secret-pass-1",
  });
  return name;
}

/** The view is refused, or if it exists it serves no hash and no email. */
async function noLeak(s: TestServer, name: string, query: string) {
  const a = await asAdmin(s);
  const r = await a.post("schemas", {
    name,
    type: "view",
    view_query: query,
    rules: allRules("public"),
  });
  const served = await s.request("GET", `/api/v1/entities/${name}`);
  assert.ok(!served.text.includes(HASH), `hash served: ${served.text}`);
  assert.ok(!served.text.includes("u@example.com"), `email: ${served.text}`);
  assert.equal(r.status, 400, r.text);
}

forEachDb("attack: views and physical-name twins", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await t.step(
      "a base entity named like an auth table in other case -> refused",
      async () => {
        // PostgreSQL tables are case-sensitive: "AAA…_HASH" is another table
        // than "aaa…_hash", but the view rule matched tables ignoring case,
        // so the base twin vouched for the auth table and its hashes.
        const auth = await longAuth(s, "a");
        const table = physicalName(auth);
        const twin = await a.post("schemas", {
          name: table.toUpperCase(),
          type: "base",
          fields: [],
        });
        await noLeak(
          s,
          "a_leak",
          `SELECT id, email, password AS h FROM "${table}"`,
        );
        assert.equal(twin.status, 409, twin.text);
      },
    );
    await t.step(
      "renaming a base entity to such a twin -> refused",
      async () => {
        const auth = await longAuth(s, "b");
        const table = physicalName(auth);
        await createEntity(s, { name: "b_base", fields: [] });
        const r = await a.patch("schemas/b_base", {
          name: table.toUpperCase(),
        });
        await noLeak(
          s,
          "b_leak",
          `SELECT id, email, password AS h FROM "${table}"`,
        );
        assert.equal(r.status, 409, r.text);
      },
    );
  } finally {
    await s.close();
  }
});
