/**
 * Storage contract cases: transactions commit, roll back, and stay apart from
 * the storage and from each other.
 *
 * @module
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../lib/errors.ts";
import {
  type Case,
  count,
  ids,
  rejection,
  table,
} from "./_storage_contract_kit.ts";
import { pause } from "./_wait.ts";

// ---------------------------------------------------------------------------
// Transactions.

export const transactionCases: Case[] = [
  {
    name: "transaction commits when fn resolves, and resolves to its value",
    async run(c) {
      const t = await table(c);
      const made = c.fresh("made");
      const out = await c.s.transaction(async (tx) => {
        await tx.run(`INSERT INTO ${t} VALUES (1, 'a'), (2, 'b')`);
        await tx.exec(`CREATE TABLE ${made} ("id" TEXT)`);
        assert.equal(await count(tx, t), 2, "tx sees its own writes");
        return { done: true };
      });
      assert.deepEqual(out, { done: true });
      assert.deepEqual(await ids(c.s, t), [1, 2]);
      assert.equal(await count(c.s, made), 0, "its DDL is kept too");
    },
  },
  {
    name: "transaction rolls back everything when fn throws, with that error",
    async run(c) {
      const t = await table(c);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 'kept')`);
      const made = c.fresh("made");
      const boom = new Error("Cannot go on: test");
      const err = await rejection(c.s.transaction(async (tx) => {
        await tx.run(`INSERT INTO ${t} VALUES (2, 'undone')`);
        await tx.run(`UPDATE ${t} SET "v" = 'changed'`);
        await tx.exec(`CREATE TABLE ${made} ("id" TEXT)`);
        throw boom;
      }));
      assert.equal(err, boom);
      assert.deepEqual(await c.s.query(`SELECT "id", "v" FROM ${t}`), [{
        id: 1,
        v: "kept",
      }]);
      const gone = await rejection(c.s.query(`SELECT * FROM ${made}`));
      assert.ok(gone instanceof MoonbaseError && gone.code === "conflict");
    },
  },
  {
    name: "a failed statement fn lets through rolls the transaction back",
    async run(c) {
      const t = await table(c, `"v" TEXT UNIQUE`);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 'a')`);
      const err = await rejection(c.s.transaction(async (tx) => {
        await tx.run(`INSERT INTO ${t} VALUES (2, 'b')`);
        await tx.run(`INSERT INTO ${t} VALUES (3, 'a')`);
      }));
      assert.equal(c.d.constraintFailure(err)?.kind, "unique");
      assert.deepEqual(await ids(c.s, t), [1]);
      assert.equal(await c.s.run(`INSERT INTO ${t} VALUES (2, 'b')`), 1);
    },
  },
  {
    name: "a failed statement fn catches does not undo the transaction",
    bug: {
      postgres:
        "documented in Storage.transaction: a failed statement fails the whole PostgreSQL transaction even when fn catches it (no savepoint per statement: it would cost every write)",
    },
    async run(c) {
      const t = await table(c, `"v" TEXT UNIQUE`);
      const out = await c.s.transaction(async (tx) => {
        await tx.run(`INSERT INTO ${t} VALUES (1, 'a')`);
        // try/await: also catches a statement that throws at once.
        try {
          await tx.run(`INSERT INTO ${t} VALUES (2, 'a')`);
          assert.fail("the duplicate was written");
        } catch (err) {
          assert.equal(c.d.constraintFailure(err)?.kind, "unique");
        }
        await tx.run(`INSERT INTO ${t} VALUES (3, 'c')`);
        return "resolved";
      });
      assert.equal(out, "resolved");
      assert.deepEqual(await ids(c.s, t), [1, 3]);
    },
  },
  {
    name: "a transaction without statements resolves to fn's value",
    async run(c) {
      assert.equal(await c.s.transaction(() => Promise.resolve(42)), 42);
    },
  },
  {
    name: "the storage never shows a running transaction's writes",
    async run(c) {
      const t = await table(c);
      for (const commit of [false, true]) {
        let leaving = false;
        let wrote!: () => void;
        const written = new Promise<void>((r) => wrote = r);
        const tx = c.s.transaction(async (q) => {
          await q.run(`INSERT INTO ${t} VALUES (1, 'in tx')`);
          wrote();
          await pause(30);
          leaving = true;
          if (!commit) throw new Error("Cannot go on: test");
        }).catch(() => "rolled back");
        await written;
        // May run at once (another connection) or wait for the transaction
        // to end: never does it see an uncommitted row.
        const seen = await count(c.s, t);
        if (!leaving || !commit) assert.equal(seen, 0, `commit=${commit}`);
        await tx;
        assert.equal(await count(c.s, t), commit ? 1 : 0);
      }
    },
  },
  {
    name: "concurrent transactions commit or roll back each on its own",
    async run(c) {
      const t = await table(c);
      const all = Array.from(
        { length: 10 },
        (_, i) =>
          c.s.transaction(async (tx) => {
            await tx.run(`INSERT INTO ${t} VALUES (?, ?)`, [i, `tx${i}`]);
            await pause(i % 3);
            await tx.run(`INSERT INTO ${t} VALUES (?, ?)`, [100 + i, `tx${i}`]);
            if (i % 2 === 1) throw new Error(`Cannot go on: ${i}`);
            return i;
          }),
      );
      const plain = c.s.run(`INSERT INTO ${t} VALUES (50, 'plain')`);
      const settled = await Promise.allSettled(all);
      assert.deepEqual(
        settled.map((r) => r.status),
        settled.map((_, i) => i % 2 ? "rejected" : "fulfilled"),
      );
      assert.equal(await plain, 1);
      assert.deepEqual(
        await ids(c.s, t),
        [0, 2, 4, 6, 8, 50, 100, 102, 104, 106, 108],
      );
    },
  },
  {
    name: "rows read with dialect.forUpdate stay locked: no lost update",
    async run(c) {
      const t = await table(c, `"n" ${c.d.columnType("int")}`);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 0)`);
      await Promise.all(
        Array.from({ length: 8 }, () =>
          c.s.transaction(async (tx) => {
            const [row] = await tx.query(
              `SELECT "n" FROM ${t} WHERE "id" = 1${c.d.forUpdate}`,
            );
            await pause(2);
            await tx.run(`UPDATE ${t} SET "n" = ? WHERE "id" = 1`, [
              (row.n as number) + 1,
            ]);
          })),
      );
      assert.deepEqual(await c.s.query(`SELECT "n" FROM ${t}`), [{ n: 8 }]);
    },
  },
];
