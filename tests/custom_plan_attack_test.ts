/**
 * PostgreSQL: lists under a caller's filter run on each lane's twin
 * connection (`plan_cache_mode = force_custom_plan`, lib/db/postgres.ts
 * `queryCustomPlan`). Attacks on it: the twins are counted and closed with
 * the app, a runaway filtered read is cancelled by the statement timeout,
 * the twin answers as the pool does (search, count, text functions), and a
 * twin the server refuses (a connection limit) leaves the list to the lane's
 * own connection instead of a 500.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "postgres";
import { hasPostgres, startPostgres } from "./_pg.ts";
import {
  DATABASES,
  insertSeries,
  padded,
  startServer,
  type TestServer,
} from "./_server.ts";
import { allRules, createEntity } from "./_scenarios.ts";
import { poll, within } from "./_wait.ts";

const PG = DATABASES.includes("postgres") && hasPostgres();
/** How long an answer may take before it counts as a hang (no speed claim). */
const DEADLINE = 60_000;

const filtered = (entity: string, filter: string, more = "") =>
  `/api/v1/entities/${entity}?filter=${encodeURIComponent(filter)}${more}`;

/** The server's connections to `db` (the app's pool, twins and probe). */
async function connections(admin: postgres.Sql, db: string): Promise<number> {
  const [row] =
    await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db} AND pid <> pg_backend_pid()`;
  return Number(row.n);
}

Deno.test({
  name:
    "custom-plan twins: counted, closed, cancelled, same answers [postgres]",
  ignore: !PG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const pg = await startPostgres();
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
    let s: TestServer | undefined;
    try {
      s = await startServer("postgres", { poolSize: 2, statementTimeout: 1 });
      const db = new URL(s.connection!).pathname.slice(1);
      await createEntity(s, {
        name: "cells",
        fields: [
          { name: "n", type: "int" },
          { name: "word", type: "string", searchable: true },
        ],
        rules: allRules("public"),
      });
      await insertSeries(s, "cells", 300, {
        id: padded("c", 6),
        n: "i",
        word: `CASE WHEN i % 3 = 0 THEN 'ÉTÉ ' || i ELSE 'été ' || i END`,
      });

      // The app's connections before any filtered list (pool, probe, logs,
      // notifications).
      assert.equal(
        (await s.request("GET", "/api/v1/entities/cells?limit=1")).status,
        200,
      );
      const baseline = await connections(admin, db);

      await t.step("a filtered list answers as the pool does", async () => {
        const all = await s!.request(
          "GET",
          "/api/v1/entities/cells?limit=500&sort=n",
        );
        assert.equal(all.status, 200, all.text);
        const items = all.data.items as { n: number; word: string }[];
        // Ranges, text comparisons and search: the same rows as a filter in
        // JS over the unfiltered list (read on the pool's own connections).
        const cases: [
          string,
          string,
          (r: { n: number; word: string }) => boolean,
        ][] = [
          ["n >= 100 && n < 200", "", (r) => r.n >= 100 && r.n < 200],
          [
            'fold(word).startsWith(fold("ete 1"))',
            "",
            (r) => r.word.toLowerCase().startsWith("été 1"),
          ],
          ['word.includes("TÉ 2")', "", (r) => r.word.includes("TÉ 2")],
          ["n < 50", "&search=ete", (r) => r.n < 50],
        ];
        for (const [filter, more, keep] of cases) {
          const r = await s!.request(
            "GET",
            filtered("cells", filter, `&limit=500&sort=n&count=true${more}`),
          );
          assert.equal(r.status, 200, `${filter}: ${r.text}`);
          const want = items.filter(keep).map((x) => x.n);
          assert.deepEqual(
            (r.data.items as { n: number }[]).map((x) => x.n),
            want,
            filter,
          );
          assert.equal(r.data.total ?? r.data.count, want.length, r.text);
        }
      });

      await t.step(
        "twins count as connections: at most two per lane",
        async () => {
          const rs = await Promise.all(
            Array.from(
              { length: 12 },
              (_, i) => s!.request("GET", filtered("cells", `n > ${i}`)),
            ),
          );
          assert.deepEqual(
            rs.map((r) => r.status),
            rs.map(() => 200),
          );
          // 2 lanes, 2 twins, the breaker's probe.
          // Each lane opens one twin (2 lanes), whatever the number of lists.
          assert.ok((await connections(admin, db)) - baseline <= 2);
          await Promise.all(
            Array.from(
              { length: 6 },
              () => s!.request("GET", filtered("cells", "n > 1")),
            ),
          );
          assert.ok((await connections(admin, db)) - baseline <= 2);
        },
      );

      await t.step("a runaway filtered read is cancelled: 503", async () => {
        await createEntity(s!, {
          name: "huge",
          type: "view",
          view_query:
            `SELECT a.id || b.id || c.id || d.id AS id FROM cells a, cells b, cells c, cells d`,
          rules: allRules("public"),
        });
        const r = await within(
          "the cancelled filtered read",
          DEADLINE,
          s!.request("GET", filtered("huge", 'id == "nope"', "&limit=1")),
        );
        assert.equal(r.status, 503, r.text);
        assert.match(r.error, /^Cannot answer in time: /);
        const again = await s!.request("GET", filtered("cells", "n == 7"));
        assert.equal(again.status, 200, again.text);
        assert.equal(again.data.items[0].n, 7);
      });

      await t.step("closing the app closes its twins", async () => {
        await s!.close();
        s = undefined;
        await poll(
          "no connection left",
          async () => (await connections(admin, db)) === 0,
        );
      });
    } finally {
      await s?.close();
      await admin.end({ timeout: 5 });
    }
  },
});

Deno.test({
  name:
    "custom-plan twins: a twin the server refuses: the list is served on the lane [postgres]",
  ignore: !PG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const pg = await startPostgres();
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
    const role = `mb_twin_${crypto.randomUUID().slice(0, 8)}`;
    await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
    await admin.unsafe(`CREATE DATABASE ${role} OWNER ${role}`);
    let s: TestServer | undefined;
    try {
      s = await startServer("postgres", {
        poolSize: 2,
        connection: pg.url.replace(/postgres@/, `${role}@`).replace(
          /\/postgres$/,
          `/${role}`,
        ),
      });
      await createEntity(s, {
        name: "cells",
        fields: [{ name: "n", type: "int" }],
        rules: allRules("public"),
      });
      await insertSeries(s, "cells", 20, { id: padded("c", 6), n: "i" });
      assert.equal(
        (await s.request("GET", "/api/v1/entities/cells?limit=1")).status,
        200,
      );
      // The role may hold the connections it has now, no more: a twin's
      // connection is refused ("too many connections for role").
      const held = await connections(admin, role);
      await admin.unsafe(`ALTER ROLE ${role} CONNECTION LIMIT ${held}`);
      const r = await within(
        "the filtered list",
        DEADLINE,
        s.request("GET", filtered("cells", "n == 7")),
      );
      assert.notEqual(r.status, 500, r.text);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.items[0].n, 7);
      // Later lists too, without a twin over the limit.
      const rs = await Promise.all(
        [3, 4, 5].map((n) => s!.request("GET", filtered("cells", `n == ${n}`))),
      );
      assert.deepEqual(rs.map((x) => x.data?.items?.[0]?.n), [3, 4, 5]);
      assert.ok((await connections(admin, role)) <= held);
    } finally {
      await s?.close();
      await admin.unsafe(`ALTER ROLE ${role} CONNECTION LIMIT -1`);
      await admin.unsafe(`DROP DATABASE ${role} WITH (FORCE)`);
      await admin.unsafe(`DROP ROLE ${role}`);
      await admin.end({ timeout: 5 });
    }
  },
});
