/**
 * `SqliteStorage.leanTransaction` (record writes without a before-hook run
 * in it): it joins the turn's write group even as the turn's first write,
 * settles after the group's commit, and has no savepoint of its own. So a
 * failure before its first write leaves the group alone, and one after it
 * rolls the whole group back: every write of that group fails (503 for the
 * others) and none of them stays.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SqliteStorage } from "../lib/db/sqlite.ts";
import { MoonbaseError } from "../lib/errors.ts";

async function open(): Promise<{ db: SqliteStorage; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "mb_lean_" });
  const db = new SqliteStorage(`${dir}/t.db`);
  await db.exec(`CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "v" TEXT UNIQUE)`);
  return { db, dir };
}

async function values(db: SqliteStorage): Promise<string[]> {
  const rows = await db.query(`SELECT "v" FROM "t" ORDER BY "id"`);
  return rows.map((r) => String(r.v));
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    if (err instanceof MoonbaseError) return err.code;
    return /UNIQUE constraint/.test(String(err)) ? "unique" : String(err);
  }
}

/** Lets the event loop's turn end (its write group commits). */
function nextTurn(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}

Deno.test("a lean transaction commits with its group", async () => {
  const { db, dir } = await open();
  try {
    const [a, b, c] = await Promise.all([
      db.leanTransaction((tx) => tx.run(`INSERT INTO "t" VALUES (1, 'a')`)),
      db.run(`INSERT INTO "t" VALUES (2, 'b')`),
      db.leanTransaction(async (tx) => {
        await tx.query(`SELECT "v" FROM "t"`);
        return await tx.run(`INSERT INTO "t" VALUES (3, 'c')`);
      }),
    ]);
    assert.deepEqual([a, b, c], [1, 1, 1]);
    assert.deepEqual(await values(db), ["a", "b", "c"]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a lean transaction failing before it wrote leaves its group alone", async () => {
  const { db, dir } = await open();
  try {
    await db.run(`INSERT INTO "t" VALUES (1, 'a')`);
    await nextTurn();
    const got = await Promise.all([
      outcome(db.run(`INSERT INTO "t" VALUES (2, 'b')`)),
      outcome(db.leanTransaction(async (tx) => {
        await tx.query(`SELECT "v" FROM "t"`);
        await tx.run(`INSERT INTO "t" VALUES (3, 'a')`); // unique: refused
      })),
      outcome(
        db.transaction((tx) => tx.run(`INSERT INTO "t" VALUES (4, 'd')`)),
      ),
      outcome(db.leanTransaction(() => Promise.reject(new Error("no")))),
      outcome(
        db.leanTransaction((tx) => tx.run(`INSERT INTO "t" VALUES (5, 'e')`)),
      ),
    ]);
    assert.deepEqual(got, ["ok", "unique", "ok", "Error: no", "ok"]);
    assert.deepEqual(await values(db), ["a", "b", "d", "e"]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a lean transaction failing after it wrote rolls its group back", async () => {
  const { db, dir } = await open();
  try {
    await db.run(`INSERT INTO "t" VALUES (1, 'a')`);
    await nextTurn();
    const boom = new Error("Cannot go on: test");
    const got = await Promise.all([
      outcome(db.run(`INSERT INTO "t" VALUES (2, 'b')`)),
      outcome(
        db.leanTransaction((tx) => tx.run(`INSERT INTO "t" VALUES (3, 'c')`)),
      ),
      outcome(db.leanTransaction(async (tx) => {
        await tx.run(`INSERT INTO "t" VALUES (4, 'd')`);
        throw boom;
      })),
    ]);
    // The first write of the turn committed on its own; the group after it
    // (c, then d) is lost: c fails with 503, d with its own error.
    assert.deepEqual(got, ["ok", "unavailable", `Error: ${boom.message}`]);
    assert.deepEqual(await values(db), ["a", "b"]);
    await db.leanTransaction((tx) => tx.run(`INSERT INTO "t" VALUES (5, 'e')`));
    assert.deepEqual(await values(db), ["a", "b", "e"], "writes go on");
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
