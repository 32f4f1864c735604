/**
 * The SQLite connection and its statements (sqlite_statements.ts): prepared
 * once and cached, rows as plain objects, SQLite's errors mapped (a full
 * disk remembered for health until a commit), a transaction's statements
 * reporting their writes, opening and closing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { MoonbaseError, StorageUnavailableError } from "../errors.ts";
import { SqliteConnection } from "./sqlite_statements.ts";

/** A connection on a fresh file with table "t", closed and removed after. */
function connTest(
  name: string,
  fn: (conn: SqliteConnection) => Promise<void> | void,
): void {
  Deno.test(`sqlite statements: ${name}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mb_statements_" });
    const conn = new SqliteConnection(`${dir}/t.db`);
    try {
      conn.db.exec(`CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "v" TEXT)`);
      await fn(conn);
    } finally {
      conn.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

const code = (err: unknown) =>
  err instanceof MoonbaseError ? err.code : String(err);

connTest("a statement is prepared once, until forgotten", (conn) => {
  const sql = `SELECT "v" FROM "t"`;
  const first = conn.statement(sql);
  assert.equal(conn.statement(sql), first, "from the cache");
  conn.forget();
  assert.notEqual(conn.statement(sql), first, "prepared again");
});

connTest("a statement knows whether it writes", (conn) => {
  assert.equal(conn.statement(`SELECT 1`).writes, false);
  assert.equal(conn.statement(`INSERT INTO "t" VALUES (1, 'a')`).writes, true);
  const returning = `UPDATE "t" SET "v" = 'b' RETURNING "v"`;
  assert.equal(conn.statement(returning).writes, true);
});

connTest("rows are plain objects; booleans bind as 1 and 0", (conn) => {
  assert.equal(conn.run(`INSERT INTO "t" VALUES (?, ?)`, [1, "a"]), 1);
  assert.equal(conn.run(`INSERT INTO "t" VALUES (?, ?)`, [2, "b"]), 1);
  const rows = conn.all(`SELECT "id", "v" FROM "t" WHERE ("id" = 1) = ?`, [
    true,
  ]);
  assert.deepEqual(rows, [{ id: 1, v: "a" }]);
  assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype);
  const prepared = conn.statement(`SELECT count(*) AS "n" FROM "t"`);
  assert.deepEqual(conn.rows(prepared), [{ n: 2 }]);
});

connTest("a column a schema change removed is a conflict (409)", (conn) => {
  assert.throws(
    () => conn.all(`SELECT "gone" FROM "t"`),
    (err) => code(err) === "conflict",
  );
});

connTest("a busy write lock is unavailable (503), never a 500", (conn) => {
  const locked = Object.assign(new Error("database is locked"), {
    errcode: 5,
  });
  assert.equal(code(conn.error(locked)), "unavailable");
  assert.equal(conn.answered(), "ok", "a busy lock is not a full disk");
});

connTest("a full disk is 507 and health says full until a commit", (conn) => {
  assert.equal(conn.answered(), "ok");
  const full = Object.assign(new Error("database or disk is full"), {
    errcode: 13,
  });
  assert.equal(code(conn.error(full)), "insufficient_storage");
  assert.equal(conn.full, true);
  assert.equal(conn.answered(), "full");
  conn.committed();
  assert.equal(conn.full, false);
  assert.equal(conn.answered(), "ok");
});

connTest("a transaction's statements report each write", async (conn) => {
  let writes = 0;
  const tx = conn.queryable(() => writes++);
  await tx.query(`SELECT "v" FROM "t"`);
  assert.equal(writes, 0, "a read is not a write");
  await tx.query(`INSERT INTO "t" VALUES (1, 'a') RETURNING "id"`);
  assert.equal(writes, 1);
  assert.equal(await tx.run(`INSERT INTO "t" VALUES (2, 'b')`), 1);
  assert.equal(writes, 2);
  // A failure rejects (never throws) and is not a write.
  const dup = tx.run(`INSERT INTO "t" VALUES (2, 'again')`);
  await assert.rejects(dup, /UNIQUE/);
  assert.equal(writes, 2);
  const before = conn.statement(`SELECT "v" FROM "t"`);
  await tx.exec(`CREATE TABLE "u" ("x" INTEGER)`);
  assert.equal(writes, 3);
  assert.notEqual(conn.statement(`SELECT "v" FROM "t"`), before, "DDL forgets");
  await assert.rejects(tx.exec(`CREATE TABLE "u" ("x" INTEGER)`), /exists/);
  assert.equal(writes, 3);
});

connTest("columns name their origin table and column", async (conn) => {
  const cols = await conn.columns(`SELECT "v" AS "value", 1 AS "one" FROM "t"`);
  assert.deepEqual(cols.map((c) => [c.name, c.table, c.column]), [
    ["value", "t", "v"],
    ["one", null, null],
  ]);
  await assert.rejects(
    conn.columns(`SELECT "gone" FROM "t"`),
    (err) => code(err) === "conflict",
  );
});

connTest("closing twice is harmless", (conn) => {
  conn.close();
  conn.close();
  assert.equal(conn.db.isOpen, false);
});

Deno.test("sqlite statements: a file that cannot be opened is StorageUnavailableError", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_statements_" });
  try {
    assert.throws(
      () => new SqliteConnection(`${dir}/missing/t.db`),
      (err) =>
        err instanceof StorageUnavailableError &&
        /^Cannot open SQLite database /.test(err.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
