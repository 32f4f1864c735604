/**
 * The reads of one event-loop turn share one read transaction: it never
 * outlives the turn, ends before any write of this connection, and leaves
 * nothing open that would keep the WAL from being checkpointed. First
 * `ReadTurn` (sqlite_read_turn.ts) on its own, then through `SqliteStorage`.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import { SqliteStorage } from "./sqlite.ts";
import { SqliteConnection } from "./sqlite_statements.ts";
import { ReadTurn } from "./sqlite_read_turn.ts";

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** A `ReadTurn` on a file with one row, and a plain connection that writes. */
function readTurnTest(
  name: string,
  fn: (
    t: { conn: SqliteConnection; reads: ReadTurn; other: DatabaseSync },
  ) => Promise<void> | void,
): void {
  Deno.test(`sqlite read turn, unit: ${name}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mb_read_turn_" });
    const conn = new SqliteConnection(`${dir}/db.sqlite`);
    conn.db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
    conn.db.exec(`INSERT INTO t (id, v) VALUES (1, 'old')`);
    const other = new DatabaseSync(`${dir}/db.sqlite`);
    try {
      await fn({ conn, reads: new ReadTurn(conn), other });
    } finally {
      other.close();
      conn.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

const read = (conn: SqliteConnection) =>
  conn.all(`SELECT v FROM t WHERE id = 1`)[0]?.v;

readTurnTest("the snapshot is released at the end of the turn", async (t) => {
  const { conn, reads, other } = t;
  assert.equal(reads.open, false);
  reads.begin();
  assert.equal(reads.open, true);
  assert.equal(conn.db.isTransaction, true, "a read transaction is open");
  assert.equal(read(conn), "old");
  other.exec(`UPDATE t SET v = 'new' WHERE id = 1`);
  reads.begin(); // the turn's second read shares the snapshot
  assert.equal(read(conn), "old");
  await nextTurn();
  assert.equal(reads.open, false);
  assert.equal(conn.db.isTransaction, false, "released with the turn");
  assert.equal(read(conn), "new");
});

readTurnTest("end() releases it before the turn ends", (t) => {
  const { conn, reads, other } = t;
  reads.begin();
  assert.equal(read(conn), "old");
  other.exec(`UPDATE t SET v = 'new' WHERE id = 1`);
  reads.end();
  assert.equal(conn.db.isTransaction, false);
  reads.begin(); // a new snapshot in the same turn
  assert.equal(read(conn), "new");
  reads.end();
  reads.end(); // ending twice is harmless
  assert.equal(conn.db.isTransaction, false);
});

readTurnTest(
  "inside another transaction it neither opens nor ends one",
  async (t) => {
    const { conn, reads } = t;
    conn.db.exec("BEGIN IMMEDIATE");
    conn.db.exec(`UPDATE t SET v = 'mine' WHERE id = 1`);
    reads.begin();
    assert.equal(reads.open, false, "the reads share the open transaction");
    reads.end();
    await nextTurn();
    assert.equal(conn.db.isTransaction, true, "not committed by the read turn");
    conn.db.exec("ROLLBACK");
    assert.equal(read(conn), "old");
  },
);

async function pair(): Promise<
  { a: SqliteStorage; b: SqliteStorage; close: () => Promise<void> }
> {
  const dir = await Deno.makeTempDir({ prefix: "mb_read_turn_" });
  const file = `${dir}/db.sqlite`;
  const a = new SqliteStorage(file);
  await a.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
  await a.run(`INSERT INTO t (id, v) VALUES (1, 'old')`);
  const b = new SqliteStorage(file);
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const value = async (s: SqliteStorage) =>
  (await s.query(`SELECT v FROM t WHERE id = 1`))[0]?.v;

Deno.test("sqlite read turn: a commit of another connection of this thread is read at once", async () => {
  const { a, b, close } = await pair();
  try {
    assert.equal(await value(b), "old"); // opens b's read transaction
    await a.run(`UPDATE t SET v = 'new' WHERE id = 1`);
    // Same thread, after the commit: b's turn snapshot was ended by it
    // (another isolate's commits are read from its next turn on, or at once
    // after `fresh()`: tests/workers_reads_test.ts).
    assert.equal(await value(b), "new");
    await a.transaction(async (tx) => {
      await tx.run(`UPDATE t SET v = 'tx' WHERE id = 1`);
    });
    assert.equal(await value(b), "tx");
  } finally {
    await close();
  }
});

Deno.test("sqlite read turn: fresh() ends the turn's read transaction", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_read_turn_" });
  const file = `${dir}/db.sqlite`;
  const a = new SqliteStorage(file);
  try {
    await a.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
    await a.run(`INSERT INTO t (id, v) VALUES (1, 'old')`);
    assert.equal((await a.query(`SELECT v FROM t`))[0].v, "old");
    // Another process (a plain connection) commits meanwhile.
    const { DatabaseSync } = await import("node:sqlite");
    const other = new DatabaseSync(file);
    other.exec(`UPDATE t SET v = 'other' WHERE id = 1`);
    other.close();
    assert.equal((await a.query(`SELECT v FROM t`))[0].v, "old");
    a.fresh();
    assert.equal((await a.query(`SELECT v FROM t`))[0].v, "other");
  } finally {
    await a.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sqlite read turn: this connection's own write ends the read transaction first", async () => {
  const { a, close } = await pair();
  try {
    assert.equal(await value(a), "old");
    await a.run(`UPDATE t SET v = 'mine' WHERE id = 1`);
    assert.equal(await value(a), "mine");
    // A transaction and DDL right after a read, in the same turn.
    assert.equal(await value(a), "mine");
    await a.transaction(async (tx) => {
      await tx.run(`UPDATE t SET v = 'tx' WHERE id = 1`);
    });
    assert.equal(await value(a), "tx");
    await a.exec(`CREATE TABLE u (x INTEGER)`);
    assert.deepEqual(await a.query(`SELECT count(*) AS n FROM u`), [{ n: 0 }]);
    // A write returning rows (… RETURNING) after a read.
    assert.equal(await value(a), "tx");
    const back = await a.query(
      `UPDATE t SET v = 'ret' WHERE id = 1 RETURNING v`,
    );
    assert.deepEqual(back, [{ v: "ret" }]);
    assert.equal(await value(a), "ret");
  } finally {
    await close();
  }
});

Deno.test("sqlite read turn: nothing stays open after the turn (the WAL checkpoints fully)", async () => {
  const { a, b, close } = await pair();
  try {
    for (let i = 0; i < 20; i++) await b.query(`SELECT v FROM t`);
    await a.run(`UPDATE t SET v = 'w' WHERE id = 1`);
    await nextTurn();
    // busy = 0: no reader of b holds an old snapshot.
    const [row] = await a.query(`PRAGMA wal_checkpoint(TRUNCATE)`);
    assert.equal(row.busy, 0, JSON.stringify(row));
    // And another connection can take the write lock at once.
    await b.run(`UPDATE t SET v = 'b' WHERE id = 1`);
    await nextTurn();
    assert.equal(await value(a), "b");
  } finally {
    await close();
  }
});

Deno.test("sqlite read turn: many reads of one turn see one snapshot, then the next", async () => {
  const { a, b, close } = await pair();
  try {
    const first = await Promise.all(
      Array.from({ length: 10 }, () => value(b)),
    );
    assert.deepEqual(new Set(first), new Set(["old"]));
    await a.run(`UPDATE t SET v = 'next' WHERE id = 1`);
    await nextTurn();
    const second = await Promise.all(
      Array.from({ length: 10 }, () => value(b)),
    );
    assert.deepEqual(new Set(second), new Set(["next"]));
  } finally {
    await close();
  }
});
