/**
 * The PostgreSQL pool: statements spread over its connections, pipelined
 * results reach their own callers, a transaction holds one connection without
 * blocking the others (statements wait when every one is held), and an
 * unreachable server is a clear error.
 * Runs on the throwaway cluster; skipped when PostgreSQL is not tested.
 * What every storage promises (rollback, errors, values, …) is checked by
 * tests/storage_contract_test.ts, on a pool of one connection too.
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "../../tests/_server.ts";
import { rejection } from "../../tests/_checks.ts";
import { startPostgres } from "../../tests/_pg.ts";
import { ANSWER_FRESH_MS, PostgresStorage } from "./postgres.ts";

const ignore = !DATABASES.includes("postgres");

/** A test on a fresh database with a connected pool of `size`, closed after. */
function poolTest(
  name: string,
  size: number,
  fn: (s: PostgresStorage) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const s = new PostgresStorage(
        await (await startPostgres()).createDatabase(),
        size,
      );
      await s.connect();
      try {
        await fn(s);
      } finally {
        await s.close();
      }
    },
  });
}

poolTest(
  "postgres pool: concurrent statements use every connection",
  3,
  async (s) => {
    const pids = await Promise.all(
      Array.from(
        { length: 60 },
        () => s.query("SELECT pg_backend_pid() AS pid, pg_sleep(0.01)"),
      ),
    );
    assertEquals(new Set(pids.map((r) => r[0].pid)).size, 3);
  },
);

poolTest(
  "postgres pool: 2000 pipelined queries each get their own result",
  2,
  async (s) => {
    // Twice: the pool must stay right after a first burst has drained.
    for (let round = 0; round < 2; round++) {
      const ns = Array.from({ length: 2000 }, (_, i) => i * 7 + round);
      const rows = await Promise.all(
        ns.map((n) => s.query("SELECT ?::bigint AS n", [n])),
      );
      assertEquals(rows.map((r) => r[0].n), ns);
    }
  },
);

poolTest(
  "postgres pool: queryCustomPlan plans each call for its values; query keeps a generic plan",
  1,
  async (s) => {
    // Prepared statements: PostgreSQL plans the first five calls for their
    // values, then may keep one generic plan (pg_prepared_statements counts
    // both, per connection).
    const text = "SELECT ?::bigint + 1 AS n";
    const numbered = "SELECT $1::bigint + 1 AS n";
    const counts =
      "SELECT generic_plans::bigint AS generic, custom_plans::bigint AS custom FROM pg_prepared_statements WHERE statement = ?";
    for (let i = 0; i < 8; i++) {
      assertEquals((await s.queryCustomPlan(text, [i]))[0].n, i + 1);
      assertEquals((await s.query(text, [i]))[0].n, i + 1);
    }
    const [custom] = await s.queryCustomPlan(counts, [numbered]);
    assertEquals(custom, { generic: 0, custom: 8 });
    const [pooled] = await s.query(counts, [numbered]);
    assert(Number(pooled.generic) > 0, JSON.stringify(pooled));
  },
);

poolTest(
  "postgres pool: a transaction holds one connection, others go on",
  2,
  async (s) => {
    await s.exec(`CREATE TABLE "t" ("id" BIGINT PRIMARY KEY, "v" TEXT)`);
    let release!: () => void;
    const held = new Promise<void>((r) => release = r);
    let inserted!: () => void;
    const ready = new Promise<void>((r) => inserted = r);
    const tx = s.transaction(async (q) => {
      await q.run(`INSERT INTO "t" VALUES (1, 'in tx')`);
      inserted();
      await held;
      return "done";
    });
    await ready;
    // Plain statements complete while the transaction is still open, and
    // do not see its row.
    for (let i = 0; i < 20; i++) {
      assertEquals((await s.query("SELECT 1 AS one"))[0].one, 1);
    }
    const outside = await s.query(`SELECT count(*)::bigint AS n FROM "t"`);
    assertEquals(outside[0].n, 0, "uncommitted row seen outside");
    release();
    assertEquals(await tx, "done");
    const rows = await s.query(`SELECT "v" FROM "t"`);
    assertEquals(rows, [{ v: "in tx" }]);
  },
);

poolTest(
  "postgres pool: with every connection held, statements wait for one",
  2,
  async (s) => {
    const gates = [0, 1].map(() => {
      let open!: () => void;
      const p = new Promise<void>((r) => open = r);
      return { p, open };
    });
    const order: string[] = [];
    const txs = gates.map((g, i) =>
      s.transaction(async (q) => {
        await q.query("SELECT 1 AS one");
        await g.p;
        order.push(`tx${i}`);
      })
    );
    await new Promise((r) => setTimeout(r, 50));
    const plain = s.query("SELECT 2 AS two").then((r) => {
      order.push("plain");
      return r[0].two;
    });
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(order, [], "nothing ran while both were held");
    gates[1].open(); // the second transaction ends first
    assertEquals(await plain, 2);
    assertEquals(order, ["tx1", "plain"]);
    gates[0].open();
    await Promise.all(txs);
  },
);

Deno.test({
  name: "postgres pool: an unreachable server is a clear error",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = new PostgresStorage("postgres://postgres@127.0.0.1:1/none", 2);
    const err = await rejection(s.connect());
    assert(
      String((err as Error).message).startsWith(
        "Cannot connect to PostgreSQL:",
      ),
      String(err),
    );
  },
});

Deno.test({
  name:
    "postgres pool: an answer vouches for the database for ANSWER_FRESH_MS, then state() pings once for all",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    let now = 0;
    const s = new PostgresStorage(
      await (await startPostgres()).createDatabase(),
      2,
      0,
      () => now,
    );
    await s.connect();
    try {
      assertEquals(s.stateNow(), undefined, "no answer yet: ask state()");
      await s.query("SELECT 1 AS ok");
      assertEquals(s.stateNow(), "ok", "just answered");
      now += ANSWER_FRESH_MS - 1;
      assertEquals(s.stateNow(), "ok", "still within the window");
      now += 1;
      assertEquals(
        s.stateNow(),
        undefined,
        "an answer that old vouches for nothing",
      );
      // Checks arriving together share one ping.
      const pings = [s.state(), s.state(), s.state()];
      assert(pings[0] === pings[1] && pings[1] === pings[2], "one ping");
      assertEquals(await Promise.all(pings), ["ok", "ok", "ok"]);
      assertEquals(s.stateNow(), "ok", "the ping's answer counts");
      assert(s.state() !== pings[0], "a later check pings anew");
    } finally {
      await s.close();
    }
  },
});
