/**
 * Storage contract cases: constraint failures the dialect classifies, and the
 * errors statements fail with.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  ConstraintFailure,
  Queryable,
  Storage,
} from "../lib/db/storage.ts";
import { MoonbaseError } from "../lib/errors.ts";
import {
  type Case,
  type Ctx,
  rejection,
  table,
} from "./_storage_contract_kit.ts";

// ---------------------------------------------------------------------------
// Errors: constraint failures the dialect classifies, mapped driver errors.

/** Statements that break a constraint, and what the dialect must call it. */
const CONSTRAINTS: {
  name: string;
  kind: ConstraintFailure["kind"];
  /** Columns of the table (after "id"); `$p` is the parent table. */
  cols: string;
  seed: string[];
  /** The failing statement (it may take `RETURNING "id"`). */
  bad: string;
  /** A named unique index on "v" (its name is `$t_ix`). */
  index?: boolean;
}[] = [
  {
    name: "a duplicate in a UNIQUE column",
    kind: "unique",
    cols: `"v" TEXT UNIQUE`,
    seed: [`INSERT INTO $t VALUES (1, 'a')`],
    bad: `INSERT INTO $t VALUES (2, 'a')`,
  },
  {
    name: "a duplicate primary key",
    kind: "unique",
    cols: `"v" TEXT`,
    seed: [`INSERT INTO $t VALUES (1, 'a')`],
    bad: `INSERT INTO $t VALUES (1, 'b')`,
  },
  {
    name: "a duplicate under a named unique index",
    kind: "unique",
    cols: `"v" TEXT`,
    index: true,
    seed: [`INSERT INTO $t VALUES (1, 'a'), (2, 'b')`],
    bad: `UPDATE $t SET "v" = 'a' WHERE "id" = 2`,
  },
  {
    name: "a NULL in a NOT NULL column",
    kind: "not_null",
    cols: `"v" TEXT NOT NULL`,
    seed: [],
    bad: `INSERT INTO $t VALUES (1, NULL)`,
  },
  {
    name: "a value a CHECK refuses",
    kind: "check",
    cols: `"v" TEXT CHECK ("v" <> 'bad')`,
    seed: [],
    bad: `INSERT INTO $t VALUES (1, 'bad')`,
  },
  {
    name: "a reference to a missing row",
    kind: "foreign_key",
    cols: `"p" INTEGER REFERENCES $p ("id")`,
    seed: [`INSERT INTO $p VALUES (1)`],
    bad: `INSERT INTO $t VALUES (1, 2)`,
  },
  {
    name: "deleting a referenced row",
    kind: "foreign_key",
    cols: `"p" INTEGER REFERENCES $p ("id")`,
    seed: [`INSERT INTO $p VALUES (1)`, `INSERT INTO $t VALUES (1, 1)`],
    bad: `DELETE FROM $p WHERE "id" = 1`,
  },
];

const VIA: Record<string, (s: Storage, sql: string) => Promise<unknown>> = {
  run: (s, sql) => s.run(sql),
  "query … RETURNING": (s, sql) => s.query(`${sql} RETURNING "id"`),
  transaction: (s, sql) => s.transaction((tx) => tx.run(sql)),
};

export const constraintCases: Case[] = CONSTRAINTS.flatMap((k) =>
  Object.entries(VIA).map(([via, send]) => ({
    name: `${k.name} fails as ${k.kind} (through ${via})`,
    async run(c: Ctx) {
      const p = c.fresh("p"), t = c.fresh("t");
      const bare = t.slice(1, -1);
      const fill = (sql: string) => sql.replaceAll("$t", t).replaceAll("$p", p);
      await c.s.exec(`CREATE TABLE ${p} ("id" INTEGER PRIMARY KEY)`);
      await c.s.exec(
        `CREATE TABLE ${t} ("id" INTEGER PRIMARY KEY, ${fill(k.cols)})`,
      );
      if (k.index) {
        await c.s.exec(`CREATE UNIQUE INDEX "${bare}_ix" ON ${t} ("v")`);
      }
      for (const sql of k.seed) await c.s.run(fill(sql));
      const before = await c.s.query(
        `SELECT (SELECT count(*) FROM ${t}) AS t, (SELECT count(*) FROM ${p}) AS p`,
      );
      const err = await rejection(send(c.s, fill(k.bad)));
      assert.ok(!(err instanceof MoonbaseError), String(err));
      const failure = c.d.constraintFailure(err);
      assert.equal(failure?.kind, k.kind, String(err));
      if (k.index) {
        // What lib/records/crud.ts matches to name the field.
        assert.ok(
          failure?.constraint === `${bare}_ix` ||
            failure?.column === `${bare}.v`,
          JSON.stringify(failure),
        );
      }
      assert.deepEqual(
        await c.s.query(
          `SELECT (SELECT count(*) FROM ${t}) AS t, (SELECT count(*) FROM ${p}) AS p`,
        ),
        before,
        "nothing changed",
      );
    },
  }))
);

/** Failing calls of each Queryable method: each must return a rejected promise. */
function failingCalls(
  t: string,
): [string, (q: Queryable) => Promise<unknown>][] {
  return [
    ["query", (q) => q.query(`SELECT "nope" FROM ${t}`)],
    ["run", (q) => q.run(`INSERT INTO ${t} VALUES (1, 'a'), (1, 'a')`)],
    ["exec", (q) => q.exec(`CREATE TABLE ${t} ("id" TEXT)`)],
  ];
}

/** Calls `send` and awaits its rejection; fails when it throws at once. */
async function rejects(what: string, send: () => Promise<unknown>) {
  let p: Promise<unknown>;
  try {
    p = send();
  } catch (err) {
    return assert.fail(`${what} threw instead of rejecting: ${err}`);
  }
  await rejection(p);
}

export const errorCases: Case[] = [
  {
    name: "a failing statement rejects its promise (it never throws)",
    async run(c) {
      const t = await table(c);
      for (const [what, send] of failingCalls(t)) {
        await rejects(what, () => send(c.s));
      }
    },
  },
  {
    name: "a failing statement inside a transaction rejects its promise",
    async run(c) {
      const t = await table(c);
      for (const [what, send] of failingCalls(t)) {
        // Only the statement matters here (what the transaction does after a
        // failed statement is another case); its outcome is read after.
        let outcome = "not called";
        await c.s.transaction(async (tx) => {
          let p: Promise<unknown>;
          try {
            p = send(tx);
          } catch (err) {
            outcome = `threw instead of rejecting: ${err}`;
            return;
          }
          outcome = await p.then(() => "resolved", () => "rejected");
        }).catch(() => {});
        assert.equal(outcome, "rejected", `tx.${what}`);
      }
    },
  },
  {
    name: "a missing table or column fails as conflict (schema changed)",
    async run(c) {
      const t = await table(c);
      const missing = c.fresh("missing");
      const sends: [string, () => Promise<unknown>][] = [
        ["query column", () => c.s.query(`SELECT "nope" FROM ${t}`)],
        ["run column", () => c.s.run(`UPDATE ${t} SET "nope" = 1`)],
        ["query table", () => c.s.query(`SELECT * FROM ${missing}`)],
        ["run table", () => c.s.run(`DELETE FROM ${missing}`)],
        [
          "transaction",
          () => c.s.transaction((tx) => tx.query(`SELECT "nope" FROM ${t}`)),
        ],
      ];
      for (const [what, send] of sends) {
        const err = await rejection(send());
        assert.ok(err instanceof MoonbaseError, `${what}: ${err}`);
        assert.equal(err.code, "conflict", what);
      }
    },
  },
  {
    name: "a syntax error or a failed exec is the driver's error, unclassified",
    async run(c) {
      const missing = c.fresh("missing");
      const sends = [
        () => c.s.query(`SELEC 1`),
        () => c.s.run(`INSERT INTO`),
        () => c.s.exec(`DROP TABLE ${missing}`),
        () => c.s.exec(`CREATE TABLE`),
      ];
      for (const send of sends) {
        const err = await rejection(send());
        assert.ok(err instanceof Error, String(err));
        assert.ok(!(err instanceof MoonbaseError), String(err));
        assert.equal(c.d.constraintFailure(err), undefined);
      }
      assert.equal(c.d.constraintFailure(new Error("x")), undefined);
      // The storage still answers.
      assert.deepEqual(await c.s.query(`SELECT 1 AS one`), [{ one: 1 }]);
    },
  },
];
