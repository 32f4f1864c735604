/**
 * Log blocks on a PostgreSQL database whose collation is not "C" (ICU
 * en-US, as many servers are): ids written by two processes with the same
 * millisecond and sequence differ only in their tags' case, and the cursor
 * still walks rows and blocks in one order, every entry once; a log table
 * made before ids were declared `COLLATE "C"` is altered at start, and a
 * session holding it fails the start after `lock_timeout` instead of
 * holding it up.
 *
 * @module
 */

import postgres from "postgres";
import { assert, assertEquals, startServer } from "./_server.ts";
import { within } from "./_wait.ts";
import { rejection } from "./_checks.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { chunkOf, type PackedRequest } from "../lib/logs/packed.ts";
import { BLOCK_INSERT_SQL, encodeBlock } from "../lib/logs/block.ts";
import { LOG_COLUMNS, type LogRow, unpackRequests } from "../lib/logs/rows.ts";
import { parseLogQuery } from "../lib/logs/store.ts";
import type { SqlValue } from "../lib/db/storage.ts";

Deno.test({
  name: "logs blocks: one order on an ICU-collated PostgreSQL database",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const c = await startPostgres();
    const name = `mb_icu_${Deno.pid}`;
    const admin = postgres(c.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(
      `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`,
    );
    await admin.end();
    const url = c.url.replace(/\/postgres$/, `/${name}`);
    // A log table of an older Moonbase: ids in the database's collation.
    const old = postgres(url, { max: 1, onnotice: () => {} });
    await old.unsafe(
      `CREATE TABLE "mb_logs" (${
        LOG_COLUMNS.map((col) =>
          `"${col}" ${
            col === "level_n" || col === "status"
              ? "BIGINT"
              : col === "duration_ms"
              ? "DOUBLE PRECISION"
              : "TEXT"
          }${col === "id" ? " PRIMARY KEY" : ""}`
        ).join(", ")
      })`,
    );
    await old.end();
    const s = await startServer("postgres", {
      connection: url,
      logLevel: "error",
    });
    try {
      const st = s.app.logs.storage;
      const coll = await st.query(
        `SELECT "collation_name" FROM information_schema.columns WHERE "table_name" = 'mb_logs' AND "column_name" = 'id'`,
      );
      assertEquals(coll[0].collation_name, "C", "the old id column is altered");
      const ms = Date.now() - 60_000;
      const mk = (
        seq: number,
        p: string,
      ): PackedRequest => [
        ms,
        seq,
        2,
        "GET",
        p,
        200,
        1,
        null,
        null,
        null,
        "r" + seq,
      ];
      const entries = Array.from({ length: 64 }, (_, i) => mk(100 + i, "/blk"));
      // A block by "aaaaaa", rows by "BBBBBB": the same milliseconds and sequences.
      const b = encodeBlock(chunkOf(entries), "aaaaaa")!;
      await st.run(
        BLOCK_INSERT_SQL,
        [b.lo, b.hi, b.rows, b.data],
      );
      const rows: LogRow[] = [];
      unpackRequests(chunkOf(entries), rows, "BBBBBB");
      const one = `(${LOG_COLUMNS.map(() => "?").join(", ")})`;
      await st.run(
        `INSERT INTO "mb_logs" VALUES ${rows.map(() => one).join(", ")}`,
        rows.flat() as SqlValue[],
      );
      const got: string[] = [];
      let after: string | undefined;
      for (let i = 0; i < 100; i++) {
        const p = new URLSearchParams({ limit: "5" });
        if (after) p.set("after", after);
        const page = await s.app.logs.query(parseLogQuery(p));
        got.push(...page.items.map((e) => e.id));
        if (!page.has_more) break;
        after = page.cursor!;
      }
      const want = [...rows.map((r) => String(r[0]))];
      assertEquals(got.length, 128, "every entry once");
      assertEquals(new Set(got).size, 128, "no entry twice");
      assertEquals(got, [...got].sort().reverse(), "in code-unit order");
      for (const id of want) assertEquals(got.includes(id), true, id);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "logs: the start-up ALTER of an old log table waits a bounded time for a session holding it",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const url = await (await startPostgres()).createDatabase();
    const other = postgres(url, { max: 1, onnotice: () => {} });
    // A log table of an older Moonbase (ids without COLLATE "C"): the start
    // alters it, which needs the table to itself.
    await other.unsafe(
      `CREATE TABLE "mb_logs" (${
        LOG_COLUMNS.map((col) =>
          `"${col}" ${
            col === "level_n" || col === "status"
              ? "BIGINT"
              : col === "duration_ms"
              ? "DOUBLE PRECISION"
              : "TEXT"
          }${col === "id" ? " PRIMARY KEY" : ""}`
        ).join(", ")
      })`,
    );
    // Another session reads the table in a transaction left open.
    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    let locked = () => {};
    const isLocked = new Promise<void>((r) => locked = r);
    const session = other.begin(async (tx) => {
      await tx.unsafe(`SELECT COUNT(*) FROM "mb_logs"`);
      locked();
      await held;
    });
    await isLocked;
    try {
      // The deadline only turns the hang this replaced into a failure.
      const err = await within(
        "the start to give up on the lock",
        30_000,
        rejection(startServer("postgres", { connection: url })),
      );
      assert(
        /Cannot start: another session holds a lock on mb_logs/.test(
          String((err as Error)?.message),
        ),
        String(err),
      );
    } finally {
      release();
      await session;
    }
    const s = await startServer("postgres", { connection: url });
    try {
      const coll = await s.app.logs.storage.query(
        `SELECT "collation_name" FROM information_schema.columns WHERE "table_name" = 'mb_logs' AND "column_name" = 'id'`,
      );
      assertEquals(coll[0].collation_name, "C", "altered once free");
    } finally {
      await s.close();
      await other.end();
    }
  },
});
