/**
 * Storage contract cases: values round-trip through the dialect's encode and
 * decode, and query, run and exec do what they promise.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { ColumnKind, SqlValue } from "../lib/db/storage.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { type Case, count, rejection, table } from "./_storage_contract_kit.ts";

// ---------------------------------------------------------------------------
// Values: what is bound comes back, through the dialect's encode/decode.

/** Values of each column kind that must survive a write and a read. */
const VALUES: { kind: ColumnKind; values: unknown[] }[] = [
  {
    kind: "text",
    values: [
      "",
      "plain",
      `quotes ' " \\ ; -- /* */`,
      "unicode é ß ✓ 😀 𝄞",
      "  padded  ",
      "line\nbreak\ttab\r",
      "a ? b $1 :x @y",
      "x".repeat(100_000),
      null,
    ],
  },
  {
    kind: "int",
    values: [
      0,
      1,
      -1,
      2 ** 31,
      -(2 ** 31) - 1,
      Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER,
      null,
    ],
  },
  {
    kind: "double",
    values: [0, 1.5, -0.25, Math.PI, 1e300, 1e-300, 2 ** 53 + 2, null],
  },
  { kind: "bool", values: [true, false, null] },
  {
    kind: "json",
    values: [
      {},
      [],
      { a: 1, b: [true, null, "x"], c: { d: 1.5, e: "é 😀" } },
      [1, "a", null, [false]],
      "text",
      "",
      0,
      42,
      -1.5,
      true,
      false,
      null,
    ],
  },
];

export const valueCases: Case[] = VALUES.map(({ kind, values }) => ({
  name: `a ${kind} column keeps every value (encode, write, read, decode)`,
  async run(c) {
    const t = await table(c, `"v" ${c.d.columnType(kind)}`);
    for (const [i, v] of values.entries()) {
      await c.s.run(`INSERT INTO ${t} ("id", "v") VALUES (?, ?)`, [
        i,
        c.d.encode(kind, v),
      ]);
    }
    const rows = await c.s.query(`SELECT "id", "v" FROM ${t} ORDER BY "id"`);
    assert.deepEqual(
      rows.map((r) => c.d.decode(kind, r.v)),
      values,
      kind,
    );
    // And as a parameter of a comparison (what a filter does).
    for (const [i, v] of values.entries()) {
      if (v === null || kind === "json") continue;
      const hit = await c.s.query(`SELECT "id" FROM ${t} WHERE "v" = ?`, [
        c.d.encode(kind, v),
      ]);
      assert.ok(hit.some((r) => r.id === i), `${kind} ${String(v)} found`);
    }
  },
}));

export const rawValueCases: Case[] = [
  {
    name: "a Uint8Array comes back as the same bytes",
    async run(c) {
      const t = await table(
        c,
        `"v" ${c.d.name === "postgres" ? "BYTEA" : "BLOB"}`,
      );
      const values = [
        new Uint8Array([0, 1, 2, 127, 128, 255]),
        new Uint8Array(),
        crypto.getRandomValues(new Uint8Array(4096)),
      ];
      for (const [i, v] of values.entries()) {
        await c.s.run(`INSERT INTO ${t} VALUES (?, ?)`, [i, v]);
      }
      const rows = await c.s.query(`SELECT "v" FROM ${t} ORDER BY "id"`);
      for (const [i, r] of rows.entries()) {
        assert.ok(r.v instanceof Uint8Array, `row ${i} is a Uint8Array`);
        assert.deepEqual(new Uint8Array(r.v), values[i]);
      }
    },
  },
  {
    name: "a boolean binds as a parameter (it is a SqlValue)",
    async run(c) {
      const t = await table(c, `"v" ${c.d.columnType("bool")}`);
      const vals: SqlValue[] = [true, false];
      await c.s.run(`INSERT INTO ${t} VALUES (1, ?), (2, ?)`, vals);
      const rows = await c.s.query(`SELECT "v" FROM ${t} ORDER BY "id"`);
      assert.deepEqual(rows.map((r) => c.d.decode("bool", r.v)), vals);
    },
  },
  {
    name: "text with a NUL character is kept whole or refused as invalid",
    async run(c) {
      const t = await table(c);
      const err = await c.s.run(`INSERT INTO ${t} VALUES (1, ?)`, ["a\0b"])
        .then(() => undefined, (e: unknown) => e);
      if (err === undefined) {
        assert.deepEqual(await c.s.query(`SELECT "v" FROM ${t}`), [{
          v: "a\0b",
        }]);
      } else {
        assert.ok(err instanceof MoonbaseError, String(err));
        assert.equal(err.code, "invalid");
        assert.equal(await count(c.s, t), 0);
      }
    },
  },
  {
    name: "numbers computed by the database come back as JS numbers",
    async run(c) {
      const t = await table(c, `"n" ${c.d.columnType("int")}`);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 40), (2, 2)`);
      const [row] = await c.s.query(
        `SELECT count(*) AS n, sum("n") AS total, max("n") AS top, 1 AS one, 1.5 AS half FROM ${t}`,
      );
      assert.deepEqual(row, { n: 2, total: 42, top: 40, one: 1, half: 1.5 });
    },
  },
];

// ---------------------------------------------------------------------------
// Statements: query, run, exec, placeholders.

export const statementCases: Case[] = [
  {
    name: "run returns the number of changed rows",
    async run(c) {
      const t = await table(c);
      const insert = `INSERT INTO ${t} VALUES (?, ?), (?, ?), (?, ?)`;
      assert.equal(await c.s.run(insert, [1, "a", 2, "b", 3, "b"]), 3);
      const set = `UPDATE ${t} SET "v" = ? WHERE "v" = ?`;
      assert.equal(await c.s.run(set, ["c", "b"]), 2);
      assert.equal(await c.s.run(set, ["c", "nothing"]), 0);
      const upsert =
        `INSERT INTO ${t} VALUES (?, ?) ON CONFLICT ("id") DO NOTHING`;
      assert.equal(await c.s.run(upsert, [1, "again"]), 0);
      assert.equal(await c.s.run(`DELETE FROM ${t} WHERE "v" = 'c'`), 2);
      assert.deepEqual(await c.s.query(`SELECT "id", "v" FROM ${t}`), [{
        id: 1,
        v: "a",
      }]);
    },
  },
  {
    name: "query returns plain objects keyed by column, in select order",
    async run(c) {
      const t = await table(c, `"b" TEXT, "a" TEXT`);
      assert.deepEqual(await c.s.query(`SELECT "a", "b" FROM ${t}`), []);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 'B', 'A')`);
      const [row] = await c.s.query(
        `SELECT "a", "b", "id" AS "Renamed_1" FROM ${t}`,
      );
      assert.deepEqual(Object.keys(row), ["a", "b", "Renamed_1"]);
      assert.equal(Object.getPrototypeOf(row), Object.prototype);
      assert.deepEqual(row, { a: "A", b: "B", Renamed_1: 1 });
    },
  },
  {
    name: "query runs a write: RETURNING rows come back and the write is kept",
    async run(c) {
      const t = await table(c);
      const rows = await c.s.query(
        `INSERT INTO ${t} VALUES (?, ?), (?, ?) RETURNING "id", "v"`,
        [1, "a", 2, "b"],
      );
      assert.deepEqual(rows, [{ id: 1, v: "a" }, { id: 2, v: "b" }]);
      assert.deepEqual(await c.s.query(`UPDATE ${t} SET "v" = 'c'`), []);
      assert.deepEqual(
        await c.s.query(`SELECT DISTINCT "v" FROM ${t}`),
        [{ v: "c" }],
      );
    },
  },
  {
    name: "exec runs DDL: create, alter, index, drop",
    async run(c) {
      const t = await table(c);
      await c.s.exec(`ALTER TABLE ${t} ADD COLUMN "w" TEXT`);
      await c.s.exec(`CREATE INDEX ${c.fresh("ix")} ON ${t} ("w")`);
      await c.s.run(`INSERT INTO ${t} VALUES (1, 'v', 'w')`);
      assert.deepEqual(await c.s.query(`SELECT "w" FROM ${t}`), [{ w: "w" }]);
      await c.s.exec(`DROP TABLE ${t}`);
      const err = await rejection(c.s.query(`SELECT "w" FROM ${t}`));
      assert.ok(err instanceof MoonbaseError && err.code === "conflict");
    },
  },
  {
    name: "? placeholders bind in order, a thousand at once",
    async run(c) {
      const t = await table(c);
      const n = 1000;
      const ids = Array.from({ length: n }, (_, i) => i);
      await c.s.run(
        `INSERT INTO ${t} VALUES ${ids.map(() => "(?, ?)").join(", ")}`,
        ids.flatMap((i) => [i, `v${i}`]),
      );
      const rows = await c.s.query(
        `SELECT "id", "v" FROM ${t} WHERE "id" IN (${
          ids.map(() => "?").join(", ")
        }) AND "v" <> ? ORDER BY "id"`,
        [...ids, "v7"],
      );
      assert.equal(rows.length, n - 1);
      assert.deepEqual(rows[7], { id: 8, v: "v8" });
      const [pair] = await c.s.query(
        `SELECT CAST(? AS TEXT) AS a, CAST(? AS TEXT) AS b`,
        ["first", "second"],
      );
      assert.deepEqual(pair, { a: "first", b: "second" });
    },
  },
  {
    name: "a parameter is a value, never SQL",
    async run(c) {
      const t = await table(c);
      const evil = `x'); DROP TABLE ${t}; --`;
      await c.s.run(`INSERT INTO ${t} VALUES (1, ?)`, [evil]);
      assert.deepEqual(
        await c.s.query(`SELECT "v" FROM ${t} WHERE "v" = ?`, [
          evil,
        ]),
        [{ v: evil }],
      );
    },
  },
];
