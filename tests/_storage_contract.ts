/**
 * The Storage contract: what lib/db/storage.ts promises, checked the same way
 * against every implementation (like a router suite run against every
 * router). Storage only: no app is started.
 *
 * `runStorageContract(name, open)` registers two tests. One opens a storage
 * and runs every case of the tables (in the _storage_contract_*.ts files and
 * below) as a step; each step creates its own tables (names made fresh per
 * step), so no step reads what another wrote. The other opens a storage per
 * case for the cases that close it.
 *
 * A case the named implementation is known to break carries `bug`: the step
 * is registered but ignored there, and says why. Fixing the implementation
 * means deleting that entry.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ident, physicalName, type Storage } from "../lib/db/storage.ts";
import { type Case, rejection, table } from "./_storage_contract_kit.ts";
import { pause } from "./_wait.ts";
import {
  rawValueCases,
  statementCases,
  valueCases,
} from "./_storage_contract_statements.ts";
import { transactionCases } from "./_storage_contract_transactions.ts";
import { constraintCases, errorCases } from "./_storage_contract_errors.ts";

/** A storage to test and how to dispose of it (and whatever it runs on). */
export interface OpenedStorage {
  storage: Storage;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Identifiers and the dialect's SQL pieces.

const identifierCases: Case[] = [
  {
    name: "ident() quotes reserved words and keeps case",
    async run(c) {
      const cols = ["group", "CamelCase", "from", "x_1", "9lives"];
      const t = ident("order");
      await c.s.exec(
        `CREATE TABLE ${t} (${cols.map((n) => `${ident(n)} TEXT`).join(", ")})`,
      );
      await c.s.run(
        `INSERT INTO ${t} VALUES (${cols.map(() => "?").join(", ")})`,
        cols,
      );
      const [row] = await c.s.query(
        `SELECT ${cols.map(ident).join(", ")} FROM ${t} WHERE ${
          ident("CamelCase")
        } = ?`,
        ["CamelCase"],
      );
      assert.deepEqual(Object.entries(row), cols.map((n) => [n, n]));
    },
  },
  {
    name: "ident() refuses names it cannot quote safely",
    run() {
      for (
        const bad of ["", "a-b", 'a"b', "a b", "é", "a;b", "x".repeat(64)]
      ) {
        assert.throws(() => ident(bad), /Cannot quote identifier/, bad);
      }
      return Promise.resolve();
    },
  },
  {
    name: "physicalName() names of 64 characters stay distinct and usable",
    async run(c) {
      const base = "a".repeat(63);
      const names = [base, `${base}1`, `${base}2`];
      const phys = names.map(physicalName);
      assert.equal(phys[0], base, "63 characters are kept");
      assert.deepEqual(phys.slice(1).map((p) => p.length), [63, 63]);
      assert.notEqual(phys[1], phys[2]);
      const t = ident(physicalName(`t${"b".repeat(63)}`));
      await c.s.exec(
        `CREATE TABLE ${t} (${phys.map((p) => `${ident(p)} TEXT`).join(", ")})`,
      );
      await c.s.run(`INSERT INTO ${t} VALUES (?, ?, ?)`, names);
      const [row] = await c.s.query(
        `SELECT ${phys.map(ident).join(", ")} FROM ${t}`,
      );
      assert.deepEqual(Object.keys(row), phys);
      assert.deepEqual(Object.values(row), names);
    },
  },
  {
    name: "dialect.jsonArrayContains finds a string in a JSON array column",
    async run(c) {
      const t = await table(c, `"v" ${c.d.columnType("json")}`);
      const rows = [["a", "b"], ["b"], [], null, [1, "1x"], ["é 😀"]];
      for (const [i, v] of rows.entries()) {
        await c.s.run(`INSERT INTO ${t} VALUES (?, ?)`, [
          i,
          c.d.encode("json", v),
        ]);
      }
      const where = c.d.jsonArrayContains(`"v"`);
      const find = async (s: string) =>
        (await c.s.query(`SELECT "id" FROM ${t} WHERE ${where} ORDER BY "id"`, [
          s,
        ])).map((r) => r.id);
      assert.deepEqual(await find("b"), [0, 1]);
      assert.deepEqual(await find("a"), [0]);
      assert.deepEqual(await find("1"), [], "the number 1 is not the string");
      assert.deepEqual(await find("é 😀"), [5]);
      assert.deepEqual(await find("c"), []);
    },
  },
  {
    name: "ping resolves and state() is ok",
    async run(c) {
      await c.s.ping();
      assert.equal(await c.s.state(), "ok");
    },
  },
];

/** Every case that runs on the shared storage, in order. */
const CASES: Case[] = [
  ...valueCases,
  ...rawValueCases,
  ...statementCases,
  ...transactionCases,
  ...constraintCases,
  ...errorCases,
  ...identifierCases,
];

// ---------------------------------------------------------------------------
// Closing: each case on a storage of its own.

const closingCases: {
  name: string;
  run(s: Storage): Promise<void>;
}[] = [
  {
    name: "close() lets a running transaction finish and commit",
    async run(s) {
      await s.exec(`CREATE TABLE "t" ("id" INTEGER PRIMARY KEY)`);
      let wrote!: () => void;
      const written = new Promise<void>((r) => wrote = r);
      const tx = s.transaction(async (q) => {
        await q.run(`INSERT INTO "t" VALUES (1)`);
        wrote();
        await pause(20);
        await q.run(`INSERT INTO "t" VALUES (2)`);
        return (await q.query(`SELECT count(*) AS n FROM "t"`))[0].n;
      });
      await written;
      const closed = s.close();
      assert.equal(await tx, 2);
      await closed;
    },
  },
  {
    name:
      "after close() every call rejects, state() is unavailable, close() again resolves",
    async run(s) {
      await s.exec(`CREATE TABLE "t" ("id" INTEGER PRIMARY KEY)`);
      await s.close();
      for (
        const p of [
          s.query(`SELECT 1 AS one`),
          s.run(`INSERT INTO "t" VALUES (1)`),
          s.exec(`DROP TABLE "t"`),
          s.transaction((tx) => tx.query(`SELECT 1 AS one`)),
          s.ping(),
        ]
      ) {
        assert.ok((await rejection(p)) instanceof Error);
      }
      assert.equal(await s.state(), "unavailable");
      await s.close();
    },
  },
];

/**
 * Registers the contract for one implementation: `open` gives a fresh,
 * empty storage each call (and disposes of it on `close`).
 *
 * @example
 * ```ts ignore
 * runStorageContract("sqlite", async () => {
 *   const storage = new SqliteStorage(`${await Deno.makeTempDir()}/t.db`);
 *   return { storage, close: () => storage.close() };
 * });
 * ```
 */
export function runStorageContract(
  name: string,
  open: () => Promise<OpenedStorage>,
  options: {
    ignore?: boolean;
    /** Registers the closing cases too (default true). */
    closing?: boolean;
  } = {},
): void {
  const base = {
    ignore: options.ignore ?? false,
    // postgres.js keeps timers and sockets past close; SQLite's write turns
    // end on setImmediate.
    sanitizeOps: false,
    sanitizeResources: false,
  };
  Deno.test({
    ...base,
    name: `storage contract [${name}]`,
    async fn(t) {
      const { storage, close } = await open();
      try {
        assert.ok(name.startsWith(storage.dialect.name), storage.dialect.name);
        for (const [i, k] of CASES.entries()) {
          const bug = k.bug?.[storage.dialect.name];
          await t.step({
            name: bug ? `${k.name} — ignored, known bug: ${bug}` : k.name,
            ignore: bug !== undefined,
            fn: () =>
              k.run({
                s: storage,
                d: storage.dialect,
                fresh: (b) => `"c${i}_${b}"`,
              }),
          });
        }
      } finally {
        await close();
      }
    },
  });
  if (options.closing === false) return;
  Deno.test({
    ...base,
    name: `storage contract [${name}]: closing`,
    async fn(t) {
      for (const k of closingCases) {
        await t.step(k.name, async () => {
          const { storage, close } = await open();
          try {
            await k.run(storage);
          } finally {
            await close();
          }
        });
      }
    },
  });
}
