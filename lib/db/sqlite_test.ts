/**
 * SQLite write groups: the first write of a turn commits alone, later writes
 * of the turn share one commit, each settles only once it is committed
 * (another connection sees it), and a failed statement or transaction undoes
 * only itself. What every storage promises (rollback, errors, values, …) is
 * checked by tests/storage_contract_test.ts.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../../tests/_server.ts";
import { rejection } from "../../tests/_checks.ts";
import { SqliteStorage } from "./sqlite.ts";

async function open(): Promise<{ s: SqliteStorage; file: string }> {
  const file = `${await Deno.makeTempDir({ prefix: "mb_sqlite_" })}/t.db`;
  const s = new SqliteStorage(file);
  await s.exec(
    `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "v" TEXT NOT NULL UNIQUE)`,
  );
  return { s, file };
}

/** Rows as another connection sees them (committed data only). */
function committed(file: string): unknown[] {
  const db = new DatabaseSync(file);
  try {
    return db.prepare(`SELECT "id", "v" FROM "t" ORDER BY "id"`).all()
      .map((r) => ({ ...r }));
  } finally {
    db.close();
  }
}

/** A test on a fresh store (table "t"), closed after. */
function storeTest(
  name: string,
  fn: (t: { s: SqliteStorage; file: string }) => Promise<void>,
): void {
  Deno.test(name, async () => {
    const t = await open();
    try {
      await fn(t);
    } finally {
      await t.s.close();
    }
  });
}

storeTest(
  "sqlite groups: a write is committed before it settles",
  async ({ s, file }) => {
    assertEquals(await s.run(`INSERT INTO "t" VALUES (1, 'a')`), 1);
    assertEquals(committed(file), [{ id: 1, v: "a" }]);
  },
);

storeTest(
  "sqlite groups: a write through query (RETURNING) settles after its commit",
  async ({ s, file }) => {
    const insert = `INSERT INTO "t" VALUES (?, ?) RETURNING "id", "v"`;
    // The first write commits alone; the second opens the turn's group,
    // which the third (through query) joins.
    const first = s.run(`INSERT INTO "t" VALUES (1, 'r1')`);
    const second = s.run(`INSERT INTO "t" VALUES (2, 'r2')`);
    const third = s.query(insert, [3, "r3"]);
    const dup = rejection(s.query(insert, [4, "r1"]));
    assertEquals(await third, [{ id: 3, v: "r3" }]);
    const want = [1, 2, 3].map((id) => ({ id, v: `r${id}` }));
    assertEquals(committed(file), want, "committed when it settles");
    assert(/UNIQUE/.test(String(await dup)));
    assertEquals([await first, await second], [1, 1]);
    assertEquals(committed(file), want);
    // Reads are not writes: a SELECT and a WITH … SELECT answer at once.
    assertEquals(
      (await s.query(`WITH x AS (SELECT 2 AS n) SELECT "v" FROM "t", x
        WHERE "id" = x.n`))[0],
      { v: "r2" },
    );
  },
);

storeTest(
  "sqlite groups: concurrent writes all land, a failed one alone fails",
  async ({ s, file }) => {
    const writes = Array.from(
      { length: 50 },
      (_, i) => s.run(`INSERT INTO "t" VALUES (?, ?)`, [i + 1, `v${i + 1}`]),
    );
    // Same value as row 1: the unique constraint fails this statement only.
    const dup = s.run(`INSERT INTO "t" VALUES (?, ?)`, [99, "v1"]);
    const err = await rejection(dup);
    assert(/UNIQUE/.test(String(err)), String(err));
    assertEquals(await Promise.all(writes), Array(50).fill(1));
    const rows = committed(file);
    assertEquals(rows.length, 50);
    assertEquals(rows[49], { id: 50, v: "v50" });
  },
);

storeTest(
  "sqlite groups: a failed transaction undoes only itself",
  async ({ s, file }) => {
    const before = s.run(`INSERT INTO "t" VALUES (1, 'kept 1')`);
    const failed = s.transaction(async (tx) => {
      await tx.run(`INSERT INTO "t" VALUES (2, 'undone')`);
      await tx.run(`INSERT INTO "t" VALUES (3, 'kept 1')`); // unique: fails
    });
    const ok = s.transaction(async (tx) => {
      await tx.run(`INSERT INTO "t" VALUES (4, 'kept 2')`);
      return (await tx.query(`SELECT count(*) AS n FROM "t" WHERE "id" <= 3`))[
        0
      ]
        .n;
    });
    const after = s.run(`INSERT INTO "t" VALUES (5, 'kept 3')`);
    assert(/UNIQUE/.test(String(await rejection(failed))));
    assertEquals(await before, 1);
    assertEquals(await ok, 1, "the failed transaction's row is gone");
    assertEquals(await after, 1);
    assertEquals(committed(file), [
      { id: 1, v: "kept 1" },
      { id: 4, v: "kept 2" },
      { id: 5, v: "kept 3" },
    ]);
  },
);

storeTest(
  "sqlite groups: a stream of transactions does not hold a commit back",
  async ({ s, file }) => {
    let stop = false, n = 0;
    // Back-to-back transactions, each yielding to the event loop.
    const stream = (async () => {
      while (!stop) {
        const id = 1000 + ++n;
        await s.transaction(async (tx) => {
          await new Promise((r) => setTimeout(r, 1));
          await tx.run(`INSERT INTO "t" VALUES (?, ?)`, [id, `s${id}`]);
        });
      }
    })();
    await new Promise((r) => setTimeout(r, 20));
    await s.run(`INSERT INTO "t" VALUES (1, 'single')`);
    assert(
      committed(file).some((r) => (r as { v: string }).v === "single"),
      "the single write is committed while transactions keep coming",
    );
    stop = true;
    await stream;
  },
);

storeTest(
  "sqlite groups: DDL commits the open group first",
  async ({ s, file }) => {
    const w1 = s.run(`INSERT INTO "t" VALUES (1, 'a')`); // alone
    const w2 = s.run(`INSERT INTO "t" VALUES (2, 'b')`); // grouped
    await s.exec(`CREATE TABLE "u" ("id" INTEGER PRIMARY KEY)`);
    assertEquals(committed(file), [{ id: 1, v: "a" }, { id: 2, v: "b" }]);
    assertEquals([await w1, await w2], [1, 1]);
    assertEquals(await s.run(`INSERT INTO "u" VALUES (1)`), 1);
  },
);

storeTest(
  "sqlite groups: a transaction alone in its turn commits on its own",
  async ({ s, file }) => {
    await new Promise((r) => setTimeout(r, 5)); // a fresh turn
    const err = await rejection(s.transaction(async (tx) => {
      await tx.run(`INSERT INTO "t" VALUES (1, 'x')`);
      throw new Error("Cannot go on: test");
    }));
    assertEquals((err as Error).message, "Cannot go on: test");
    assertEquals(committed(file), []);
    await new Promise((r) => setTimeout(r, 5));
    const n = await s.transaction(async (tx) =>
      await tx.run(`INSERT INTO "t" VALUES (2, 'y')`)
    );
    assertEquals(n, 1);
    assertEquals(committed(file), [{ id: 2, v: "y" }]);
  },
);

storeTest(
  "sqlite groups: a full database settles every write and recovers",
  async ({ s, file }) => {
    await s.exec("PRAGMA max_page_count = 40");
    // Many writes in one turn: some fit, then the file is full. Every promise
    // must settle (no hang), and what settled ok must be committed.
    const big = "x".repeat(3000);
    const writes = Array.from(
      { length: 60 },
      (_, i) => s.run(`INSERT INTO "t" VALUES (?, ?)`, [i + 1, `${i}${big}`]),
    );
    const settled = await Promise.race([
      Promise.allSettled(writes),
      new Promise<"hang">((r) => setTimeout(() => r("hang"), 5000)),
    ]);
    assert(settled !== "hang", "every write settled");
    const ok = settled.filter((r) => r.status === "fulfilled").length;
    const failed = settled.filter((r) => r.status === "rejected");
    assert(failed.length > 0, "the database filled up");
    for (const f of failed) {
      const msg = String((f as PromiseRejectedResult).reason);
      assert(/full|could not commit/.test(msg), msg);
    }
    assertEquals(committed(file).length, ok, "acknowledged writes are kept");
    // After room is made, writing works again.
    await s.exec("PRAGMA max_page_count = 100000");
    assertEquals(await s.run(`INSERT INTO "t" VALUES (1000, 'after')`), 1);
    const rows = committed(file) as { v: string }[];
    assertEquals(rows[rows.length - 1].v, "after");
  },
);
