/**
 * The log store: entries reach it within a second without a flush, it lives
 * in `<dataDir>/logs.db` on SQLite (not in moonbase.db) and in the data
 * database on PostgreSQL, retention by row count and by age (also at
 * start-up), and `logLevel: "warn"` keeps 2xx requests and info entries out.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  ADMIN_EMAIL,
  countRows,
  daysAgo,
  entry,
  getLogs,
  login,
  nextIp,
  page,
  put,
  storeRows,
  WRONG_PASSWORD,
} from "./_logs_fixtures.ts";
import { poll } from "./_wait.ts";

forEachDb("logs store: background writes and where it lives", async (t, db) => {
  // One server: the first step writes and reads one entry by its own request
  // id; the second reads the store's place and that the fixture's twelve
  // requests are in it.
  const s = await startServer(db);
  try {
    for (let i = 0; i < 12; i++) {
      assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
    }

    await t.step(
      "entries reach the store by the background flush",
      async () => {
        const r = await s.request("GET", "/api/v1/health", {
          headers: { "x-request-id": "logtest-batched" },
        });
        assertStatus(r, 200, "health");
        // No flush is asked for: the writer's own batching writes it (how
        // soon is a timing claim, for the bench).
        const found = await poll("the entry in the store", async () => {
          const rows = await s.app.logs.storage.query(
            `SELECT "id" FROM "mb_logs" WHERE "request_id" = ?`,
            ["logtest-batched"],
          );
          return rows.length === 1;
        }, { every: 100 }).catch(() => false);
        assert(found, "the entry was written by the background flush");
      },
    );

    await t.step("where the log store lives", async () => {
      await s.app.log.flush();
      if (db === "sqlite") {
        const logsDb = join(s.dataDir, "logs.db");
        assert((await Deno.stat(logsDb)).isFile, "<dataDir>/logs.db exists");
        assert(
          s.app.logs.storage !== s.app.storage,
          "log storage is not the data storage",
        );
        const data = await s.app.storage.query(
          `SELECT name FROM sqlite_master WHERE name = 'mb_logs'`,
        );
        assertEquals(data.length, 0, "moonbase.db has no mb_logs table");
        const raw = new DatabaseSync(logsDb, { readOnly: true });
        try {
          const row = raw.prepare(`SELECT COUNT(*) AS n FROM "mb_logs"`)
            .get() as { n: number };
          assert(Number(row.n) > 10, `logs.db holds the entries: ${row.n}`);
        } finally {
          raw.close();
        }
        const main = new DatabaseSync(join(s.dataDir, "moonbase.db"), {
          readOnly: true,
        });
        try {
          const tables = main.prepare(
            `SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'mb_logs'`,
          ).all();
          assertEquals(tables.length, 0, "no mb_logs in moonbase.db (file)");
        } finally {
          main.close();
        }
      } else {
        const rows = await s.app.storage.query(
          `SELECT COUNT(*) AS n FROM "mb_logs"`,
        );
        assert(Number(rows[0].n) > 10, "mb_logs holds entries on PostgreSQL");
      }
    });
  } finally {
    await s.close();
  }
});

forEachDb("logs store: logMaxRows keeps the newest ~100", async (_t, db) => {
  const s = await startServer(db, { logMaxRows: 100 });
  try {
    for (let i = 0; i < 4; i++) {
      await Promise.all(
        Array.from({ length: 10 }, () => s.request("GET", "/api/v1/health")),
      );
    }
    const bulk = Array.from(
      { length: 120 },
      (_, i) => entry({ message: `rt bulk ${i}` }),
    );
    await put(s, bulk);
    await s.app.log.flush();
    const before = await countRows(s);
    assert(before >= 160, `more than 100 entries before pruning: ${before}`);
    await s.app.logs.prune(7, 100);
    const after = await countRows(s);
    assert(after <= 100 && after >= 90, `about 100 remain: ${after}`);
    const rows = await storeRows(s);
    const msgs = new Set(rows.map((r) => String(r.message)));
    assert(msgs.has("rt bulk 119"), "the newest entry is kept");
    assert(msgs.has("rt bulk 30"), "the newest 90 bulk entries are kept");
    assert(!msgs.has("rt bulk 0"), "the oldest bulk entry is pruned");
    assert(
      !rows.some((r) => r.type === "request"),
      "the older request entries are pruned",
    );
  } finally {
    await s.close();
  }
});

forEachDb("logs store: retention by age", async (t, db) => {
  // One server: each step writes entries with messages of its own and reads
  // only those (the restart's prune may remove the other step's old entries,
  // which that step no longer reads).
  const s = await startServer(db, { logMaxRows: 100_000 });
  try {
    await t.step("entries older than the retention are pruned", async () => {
      await put(s, [
        entry({ message: "rt old 1", time: daysAgo(10) }),
        entry({ message: "rt old 2", time: daysAgo(30), level: "error" }),
        entry({ message: "rt recent 6d", time: daysAgo(6) }),
        entry({ message: "rt now" }),
      ]);
      let msgs = (await storeRows(s)).map((r) => String(r.message));
      assert(msgs.includes("rt old 1"), "old entry inserted");
      // Age only here: the row cap keeps the newest entries by time, which
      // would also drop the 6-day-old one among 100+ newer rows.
      await s.app.logs.prune(7, 100_000);
      msgs = (await storeRows(s)).map((r) => String(r.message));
      assert(!msgs.includes("rt old 1"), "10 days old: pruned");
      assert(!msgs.includes("rt old 2"), "30 days old: pruned");
      assert(msgs.includes("rt recent 6d"), "6 days old: kept");
      assert(msgs.includes("rt now"), "new: kept");
      // Through the API as well.
      const r = await getLogs(s, await s.adminToken(), { search: "rt old" });
      assertEquals(page(r, "api").length, 0, "the API shows no pruned entry");
    });

    await t.step("a restart prunes old entries", async () => {
      await put(s, [
        entry({ message: "rs stale", time: daysAgo(9) }),
        entry({ message: "rs recent 6d", time: daysAgo(6) }),
      ]);
      assert(
        (await storeRows(s)).some((r) => r.message === "rs stale"),
        "stale entry inserted",
      );
      let reopened: TestServer | undefined;
      const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
      try {
        reopened = await startServer(db, {
          logMaxRows: 100_000,
          ...(db === "sqlite"
            ? { dataDir: s.dataDir }
            : { connection: s.connection, dataDir }),
        });
        // Both instances now share the store (PostgreSQL) or the file
        // (SQLite).
        const rows = await storeRows(reopened);
        assert(
          !rows.some((r) => r.message === "rs stale"),
          "start-up prune removed the stale entry",
        );
        assert(
          rows.some((r) => r.message === "rs recent 6d"),
          "start-up prune kept the recent entry",
        );
      } finally {
        await reopened?.close();
        await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      }
    });
  } finally {
    await s.close();
  }
});

forEachDb(
  "logs store: logLevel warn keeps 2xx requests out",
  async (_t, db) => {
    const s = await startServer(db, { logLevel: "warn", trustProxy: true });
    try {
      const admin = await s.adminToken();
      for (let i = 0; i < 5; i++) {
        assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
      }
      let r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: { name: "lvl_posts", type: "base", fields: [] },
      });
      assertStatus(r, 201, "schema created");
      r = await s.request("GET", "/api/v1/entities/lvl_missing", {
        headers: { "x-request-id": "lvl-404" },
      });
      assertStatus(r, 404, "404");
      r = await login(
        s,
        "/api/v1/sys/admins/login",
        ADMIN_EMAIL,
        WRONG_PASSWORD,
        nextIp(),
      );
      assertStatus(r, 401, "failed login");
      r = await getLogs(s, admin, { limit: "1000" });
      const items = page(r, "warn server");
      const rows = await storeRows(s);
      assertEquals(rows.length, items.length, "API shows the whole store");
      assert(
        !rows.some((x) => x.status !== null && Number(x.status) < 400),
        "no 2xx/3xx request entry stored",
      );
      assert(
        // Stored ranks (request rows store no level name): warn 3, error 4.
        rows.every((x) => Number(x.level_n) >= 3),
        `only warn/error: ${rows.map((x) => x.level_n)}`,
      );
      assert(
        !rows.some((x) => x.message === "schema created"),
        "info app entries are not stored",
      );
      const e404 = items.find((e) => e.request_id === "lvl-404");
      assert(e404, "the 404 is stored");
      assertEquals([e404.level, e404.status], ["warn", 404], "404 entry");
      assert(
        items.some((e) => e.message === "failed login"),
        "a failed login (warn) is stored",
      );
    } finally {
      await s.close();
    }
  },
);
