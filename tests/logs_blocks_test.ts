/**
 * Request log blocks (lib/logs/block.ts): a burst of 64 or more request
 * entries is stored as one block, and every reader sees its entries as it
 * sees rows: the logs page with each filter and the cursor across rows and
 * blocks, one entry by id, the stats, pruning by age and count; a damaged
 * block is skipped, never a 500.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  blockSizes,
  burst,
  countRows,
  entry,
  getLogs,
  type LogEntry,
  LOGS,
  page,
  put,
  walk,
} from "./_logs_fixtures.ts";
import { BLOCK_INSERT_SQL } from "../lib/logs/block.ts";

/** The entries of one burst, as the API returns them (newest first). */
async function burstEntries(
  s: TestServer,
  token: string,
  prefix: string,
): Promise<LogEntry[]> {
  const r = await getLogs(s, token, { search: prefix + "/", limit: "1000" });
  return page(r, prefix).filter((e) => e.request_id?.startsWith(prefix));
}

forEachDb(
  "logs blocks: a burst is one block, read like rows",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await put(s, [entry({ message: "before the burst" })]);
      const before = await blockSizes(s);
      await burst(s, "/bk", 300);
      const after = await blockSizes(s);
      assertEquals(after.length, before.length + 1, "one block more");
      assert(after[after.length - 1] >= 300, `block of ${after.at(-1)}`);
      await put(s, [entry({ message: "after the burst" })]);

      await t.step("every field reads back", async () => {
        const items = await burstEntries(s, admin, "/bk");
        assertEquals(items.length, 300, "all 300 entries");
        const byRid = new Map(items.map((e) => [e.request_id, e]));
        for (const i of [0, 1, 2, 5, 299]) {
          const e = byRid.get(`/bk-${i}`)!;
          const status = [200, 404, 500][i % 3];
          const method = i % 2 ? "POST" : "GET";
          assertEquals(
            {
              type: e.type,
              level: e.level,
              method: e.method,
              path: e.path,
              status: e.status,
              message: e.message,
              duration_ms: e.duration_ms,
              ip: e.ip,
              auth_id: e.auth_id,
              auth_entity: e.auth_entity,
              data: e.data,
            },
            {
              type: "request",
              level: status === 500
                ? "error"
                : status === 404
                ? "warn"
                : "info",
              method,
              path: `/bk/${i % 7}`,
              status,
              message: `${method} /bk/${i % 7} ${status}`,
              duration_ms: i + 0.25,
              ip: i % 5 ? "203.0.113.9" : null,
              auth_id: i % 2 ? null : `u${i}`,
              auth_entity: i % 2 ? null : "users",
              data: null,
            },
            `entry ${i}`,
          );
          assert(Math.abs(Date.parse(e.time) - Date.now()) < 60_000, "time");
        }
      });

      await t.step("the cursor walks rows and blocks in id order", async () => {
        const { items, pages } = await walk(s, admin, {}, 7);
        assert(pages > 40, `${pages} pages`);
        const ids = items.map((e) => e.id);
        assertEquals(new Set(ids).size, ids.length, "no entry twice");
        assert(
          ids.every((id, i) => i === 0 || ids[i - 1] > id),
          "newest first",
        );
        const msgs = items.map((e) => e.message);
        const first = msgs.indexOf("after the burst");
        const last = msgs.indexOf("before the burst");
        assert(first >= 0 && last > first, "app rows around the block");
        const between = items.slice(first + 1, last)
          .filter((e) => e.request_id?.startsWith("/bk-"));
        assertEquals(between.length, 300, "the burst lies between them");
      });

      await t.step("filters apply to block entries", async () => {
        const count = async (q: Record<string, string>) =>
          page(await getLogs(s, admin, { limit: "1000", ...q }), "filter")
            .filter((e) => e.request_id?.startsWith("/bk-")).length;
        assertEquals(await count({ search: "/bk/" }), 300, "search");
        assertEquals(await count({ search: "POST /BK/3 404" }), 7, "search");
        assertEquals(await count({ level: "warn" }), 100, "level");
        assertEquals(await count({ min_level: "warn" }), 200, "min_level");
        assertEquals(await count({ type: "request" }), 300, "type request");
        assertEquals(await count({ type: "app" }), 0, "type app");
        const future = new Date(Date.now() + 60_000).toISOString();
        assertEquals(await count({ start_date: future }), 0, "start_date");
        const past = new Date(Date.now() - 60_000).toISOString();
        assertEquals(await count({ end_date: past }), 0, "end_date");
        assertEquals(
          await count({ start_date: past, end_date: future }),
          300,
          "inside the range",
        );
      });

      await t.step(
        "one block entry by id; its neighbours' ids 404",
        async () => {
          const items = await burstEntries(s, admin, "/bk");
          const one = items[150];
          const r = await s.request("GET", `${LOGS}/${one.id}`, {
            token: admin,
          });
          assertStatus(r, 200, "by id");
          assertEquals(r.data, one, "the same entry as in the page");
          const none = one.id.slice(0, -6) + "zzzzzz";
          const r2 = await s.request("GET", `${LOGS}/${none}`, {
            token: admin,
          });
          assertStatus(r2, 404, "an id no entry has");
        },
      );

      await t.step("the stats count block entries", async () => {
        const from = new Date(Date.now() - 600_000).toISOString();
        const r = await s.request(
          "GET",
          `${LOGS}/stats?start_date=${from}&buckets=10`,
          { token: admin },
        );
        assertStatus(r, 200, "stats");
        const buckets = (r.data as {
          buckets: { requests: number; errors: number; warnings: number }[];
        }).buckets;
        const sum = (k: "requests" | "errors" | "warnings") =>
          buckets.reduce((a, b) => a + b[k], 0);
        assert(sum("requests") >= 300, `requests ${sum("requests")}`);
        assert(sum("errors") >= 100, `errors ${sum("errors")}`);
        assert(sum("warnings") >= 100, `warnings ${sum("warnings")}`);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb("logs blocks: pruning by count and age", async (t, db) => {
  const s = await startServer(db, { logMaxRows: 100_000 });
  try {
    await t.step("the newest entries are kept, whole blocks go", async () => {
      await burst(s, "/p1", 100);
      await burst(s, "/p2", 100);
      await burst(s, "/p3", 100);
      await put(
        s,
        Array.from({ length: 50 }, (_, i) => entry({ message: `p4 ${i}` })),
      );
      await s.app.logs.prune(7, 120);
      const n = await countRows(s);
      assert(n >= 120 && n <= 250, `about 120 remain: ${n}`);
      const admin = await s.adminToken();
      const items = page(await getLogs(s, admin, { limit: "1000" }), "after");
      assert(items.some((e) => e.message === "p4 49"), "the newest row kept");
      assert(items.some((e) => e.request_id === "/p3-99"), "newest block kept");
      assert(!items.some((e) => e.request_id === "/p1-0"), "oldest block gone");
      assert(!items.some((e) => e.request_id === "/p2-0"), "older block gone");
    });

    await t.step("a block older than the retention goes", async () => {
      await burst(s, "/old", 80);
      assert((await blockSizes(s)).length > 0, "blocks stored");
      // A retention floor one day in the future: every entry is older.
      await s.app.logs.prune(-1, 100_000);
      assertEquals(await countRows(s), 0, "nothing left");
      assertEquals(await blockSizes(s), [], "no block left");
    });
  } finally {
    await s.close();
  }
});

forEachDb("logs blocks: a damaged block is skipped", async (_t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    await burst(s, "/dm", 70);
    const now = Date.now().toString(16).padStart(12, "0");
    await s.app.logs.storage.run(
      BLOCK_INSERT_SQL,
      [
        `${now}-00000000-aaaaaa`,
        `${now}-ffffffff-zzzzzz`,
        5,
        new Uint8Array(64),
      ],
    );
    const items = await burstEntries(s, admin, "/dm");
    assertEquals(items.length, 70, "the good block reads whole");
    const r = await s.request("GET", `${LOGS}/${now}-00000001-aaaaaa`, {
      token: admin,
    });
    assertStatus(r, 404, "an id in the damaged block's range");
    const st = await s.request("GET", `${LOGS}/stats`, { token: admin });
    assertStatus(st, 200, "stats");
  } finally {
    await s.close();
  }
});

forEachDb(
  "logs blocks: rows newer than a kept block are kept",
  async (_t, db) => {
    const s = await startServer(db, { logMaxRows: 100_000 });
    try {
      await burst(s, "/kb", 100);
      await put(
        s,
        Array.from(
          { length: 200 },
          (_, i) => entry({ message: `kb row ${i}` }),
        ),
      );
      // The newest 250: all 200 rows and 50 of the block, kept whole.
      await s.app.logs.prune(7, 250);
      const admin = await s.adminToken();
      const items = page(await getLogs(s, admin, { limit: "1000" }), "after");
      const rows = items.filter((e) => e.message.startsWith("kb row "));
      assertEquals(rows.length, 200, "every row newer than the block");
      assertEquals(await blockSizes(s), [100], "the block the limit falls in");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "logs blocks: search folds case and accents (fold), as rows do",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      const log = (n: number, path: string) => {
        for (let i = 0; i < n; i++) {
          s.app.log.request(
            "info",
            "GET",
            path,
            200,
            1,
            null,
            null,
            null,
            `u-${n}-${i}`,
          );
        }
      };
      log(70, "/Über/Block"); // one chunk: a block
      await s.app.log.flush();
      log(3, "/Über/Row"); // rows
      await s.app.log.flush();
      const count = async (search: string) => {
        const items = page(
          await getLogs(s, admin, { search, limit: "1000" }),
          search,
        );
        return [
          items.filter((e) => e.path === "/Über/Block").length,
          items.filter((e) => e.path === "/Über/Row").length,
        ];
      };
      assertEquals(await count("Über/BLOCK"), [70, 0], "case folds");
      assertEquals(await count("Über/"), [70, 3], "the same text matches");
      assertEquals(await count("ÜBER/"), [70, 3], "case folds");
      assertEquals(await count("über/"), [70, 3], "Ü folds as ü, on both");
      assertEquals(await count("UBER/ROW"), [0, 3], "accents fold");
      assertEquals(await count("ǖber/"), [70, 3], "marks fold");
    } finally {
      await s.close();
    }
  },
);
