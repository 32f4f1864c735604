/**
 * Group commit on its own (sqlite_write_group.ts): the turn's first write
 * commits at once, later ones settle only after their group's commit, a
 * group that cannot be committed fails every write of it (none stays), a
 * lean transaction failing after it wrote loses its group as documented,
 * and two write groups on one file take the write lock in turn. The same
 * behaviour through `SqliteStorage`: sqlite_test.ts and
 * tests/sqlite_lean_transaction_test.ts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { setImmediate } from "node:timers";
import { MoonbaseError } from "../errors.ts";
import { SqliteConnection } from "./sqlite_statements.ts";
import { ReadTurn } from "./sqlite_read_turn.ts";
import { GroupCommit } from "./sqlite_write_group.ts";

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** One connection's pieces on `file`. */
interface Writer {
  conn: SqliteConnection;
  reads: ReadTurn;
  writes: GroupCommit;
  /** Inserts (id, v) through the write group. */
  insert(id: number, v: string): Promise<number>;
}

function writer(file: string): Writer {
  const conn = new SqliteConnection(file);
  const reads = new ReadTurn(conn);
  const writes = new GroupCommit(conn, reads, file);
  return {
    conn,
    reads,
    writes,
    insert: (id, v) =>
      writes.write(() => conn.run(`INSERT INTO "t" VALUES (?, ?)`, [id, v])),
  };
}

/** The values another connection sees (committed data only). */
function committed(file: string): string[] {
  const db = new DatabaseSync(file);
  try {
    return db.prepare(`SELECT "v" FROM "t" ORDER BY "id"`).all()
      .map((r) => String(r.v));
  } finally {
    db.close();
  }
}

/** "ok", a MoonbaseError's code, or the error's text. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return err instanceof MoonbaseError ? err.code : String(err);
  }
}

/** A test with a writer on a fresh file (table "t"), closed after. */
function groupTest(
  name: string,
  fn: (w: Writer, file: string) => Promise<void>,
): void {
  Deno.test(`sqlite write group: ${name}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mb_write_group_" });
    const file = `${dir}/t.db`;
    const w = writer(file);
    try {
      w.conn.db.exec(
        `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "v" TEXT UNIQUE)`,
      );
      await nextTurn();
      await fn(w, file);
    } finally {
      w.writes.leave();
      w.writes.commitNow();
      w.conn.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

groupTest("the first write of a turn commits at once", async (w, file) => {
  const first = w.insert(1, "a");
  assert.equal(w.conn.db.isTransaction, false, "no group open");
  assert.deepEqual(committed(file), ["a"], "committed before it settles");
  assert.equal(await first, 1);
});

groupTest("a grouped write resolves only after its commit", async (w, file) => {
  await w.insert(1, "a"); // the turn's first, alone
  let seen: string[] = [];
  const second = w.insert(2, "b").then((n) => {
    seen = committed(file);
    return n;
  });
  assert.equal(w.conn.db.isTransaction, true, "the group is open");
  assert.deepEqual(committed(file), ["a"], "not committed yet");
  assert.equal(await second, 1);
  assert.deepEqual(seen, ["a", "b"], "committed when it resolved");
});

groupTest("a failed statement in a group fails alone", async (w, file) => {
  await w.insert(1, "a");
  const got = await Promise.all([
    outcome(w.insert(2, "b")),
    outcome(w.insert(3, "a")), // unique
    outcome(w.insert(4, "d")),
  ]);
  assert.equal(got[0], "ok");
  assert.match(got[1], /UNIQUE/);
  assert.equal(got[2], "ok");
  assert.deepEqual(committed(file), ["a", "b", "d"]);
});

groupTest(
  "a group whose commit fails fails every write of it",
  async (w, file) => {
    // A deferred foreign key is checked at COMMIT, which then fails.
    w.conn.db.exec(`CREATE TABLE "p" ("id" INTEGER PRIMARY KEY)`);
    w.conn.db.exec(`CREATE TABLE "c" ("p" INTEGER
    REFERENCES "p" ("id") DEFERRABLE INITIALLY DEFERRED)`);
    w.conn.forget();
    await w.insert(1, "a"); // alone
    const got = await Promise.all([
      outcome(w.insert(2, "b")),
      outcome(w.writes.write(() => w.conn.run(`INSERT INTO "c" VALUES (9)`))),
    ]);
    assert.deepEqual(got, ["unavailable", "unavailable"]);
    assert.deepEqual(committed(file), ["a"], "none of the group stays");
    assert.equal(w.conn.db.isTransaction, false);
    assert.equal(await w.insert(3, "c"), 1, "writes go on");
    assert.deepEqual(committed(file), ["a", "c"]);
  },
);

groupTest("a group SQLite rolled back is not joined", async (w, file) => {
  await w.insert(1, "a"); // alone
  const lost = outcome(w.insert(2, "b"));
  w.conn.db.exec("ROLLBACK"); // as SQLite does after some errors
  const next = outcome(w.insert(3, "c"));
  assert.deepEqual([await lost, await next], ["unavailable", "ok"]);
  assert.deepEqual(committed(file), ["a", "c"]);
});

groupTest("a transaction of the group is a savepoint", async (w, file) => {
  await w.insert(1, "a");
  const got = await Promise.all([
    outcome(w.insert(2, "b")),
    outcome(w.writes.transaction(async (tx) => {
      await tx.run(`INSERT INTO "t" VALUES (3, 'c')`);
      await tx.run(`INSERT INTO "t" VALUES (4, 'a')`); // unique
    }, false)),
    outcome(w.insert(5, "e")),
  ]);
  assert.deepEqual([got[0], got[2]], ["ok", "ok"]);
  assert.match(got[1], /UNIQUE/);
  assert.deepEqual(committed(file), ["a", "b", "e"], "only it is undone");
});

groupTest(
  "a lean transaction failing after it wrote loses its group",
  async (w, file) => {
    await w.insert(1, "a");
    const boom = new Error("Cannot go on: test");
    const got = await Promise.all([
      outcome(w.insert(2, "b")),
      outcome(w.writes.transaction(async (tx) => {
        await tx.run(`INSERT INTO "t" VALUES (3, 'c')`);
        throw boom;
      }, true)),
    ]);
    assert.deepEqual(got, ["unavailable", String(boom)]);
    assert.deepEqual(committed(file), ["a"]);
  },
);

groupTest(
  "a lean transaction failing before it wrote leaves its group",
  async (w, file) => {
    await w.insert(1, "a");
    const got = await Promise.all([
      outcome(w.insert(2, "b")),
      outcome(w.writes.transaction(async (tx) => {
        await tx.query(`SELECT "v" FROM "t"`);
        throw new Error("no");
      }, true)),
      outcome(w.insert(3, "c")),
    ]);
    assert.deepEqual(got, ["ok", "Error: no", "ok"]);
    assert.deepEqual(committed(file), ["a", "b", "c"]);
  },
);

groupTest("statements wait for the running transaction", async (w) => {
  let inside!: () => void;
  const entered = new Promise<void>((r) => inside = r);
  let go!: () => void;
  const gate = new Promise<void>((r) => go = r);
  const tx = w.writes.transaction(async (q) => {
    inside();
    await gate;
    return await q.run(`INSERT INTO "t" VALUES (1, 'a')`);
  }, false);
  await entered;
  assert.ok(w.writes.running, "a transaction runs");
  const order: string[] = [];
  const after = w.writes.later(() => order.push("later"));
  const write = w.insert(2, "b").then(() => order.push("write"));
  await nextTurn();
  assert.deepEqual(order, [], "both wait");
  go();
  assert.equal(await tx, 1);
  await Promise.all([after, write]);
  assert.deepEqual(order, ["later", "write"]);
  assert.equal(w.writes.running, undefined);
});

groupTest(
  "two write groups on one file take the lock in turn",
  async (a, file) => {
    const b = writer(file);
    try {
      b.reads.begin();
      assert.deepEqual(b.conn.all(`SELECT "v" FROM "t"`), []);
      await a.insert(1, "a"); // alone
      assert.equal(b.reads.open, false, "a's commit ended b's snapshot");
      assert.deepEqual(b.conn.all(`SELECT "v" FROM "t"`), [{ v: "a" }]);
      const grouped = a.insert(2, "b"); // a holds the write lock
      // b commits a's group first instead of waiting out the busy timeout.
      assert.equal(await b.insert(3, "c"), 1);
      assert.equal(await grouped, 1);
      assert.deepEqual(committed(file), ["a", "b", "c"]);
    } finally {
      b.writes.leave();
      b.conn.close();
    }
  },
);

groupTest(
  "commitNow commits the open group and ends the reads",
  async (w, file) => {
    await w.insert(1, "a");
    const grouped = w.insert(2, "b");
    w.writes.commitNow();
    assert.deepEqual(committed(file), ["a", "b"]);
    assert.equal(await grouped, 1);
    w.reads.begin();
    w.writes.commitNow();
    assert.equal(w.reads.open, false);
  },
);
