/**
 * The feed on PostgreSQL delivers in id order even when transactions commit
 * out of it: an event after a gap waits for the transaction still holding
 * the lower id; a gap left by a rollback is skipped once settled. On SQLite
 * it reads only ids known committed.
 *
 * @module
 */

import { assertEquals, DATABASES } from "../../tests/_server.ts";
import { startPostgres } from "../../tests/_pg.ts";
import { pause, poll } from "../../tests/_wait.ts";
import { PostgresStorage } from "../db/postgres.ts";
import { SqliteStorage } from "../db/sqlite.ts";
import type { Storage } from "../db/storage.ts";
import { ensureSystemTables } from "../schema/system.ts";
import { EventLog, type StoredEvent } from "./event_log.ts";
import { EventFeed } from "./feed.ts";

const change = (id: string) => ({
  entity: "posts",
  entityId: "posts",
  id,
  action: "create" as const,
  record: { id },
});

async function withFeed(
  store: Storage,
  fn: (log: EventLog, feed: EventFeed, got: StoredEvent[]) => Promise<void>,
): Promise<void> {
  await ensureSystemTables(store);
  const log = new EventLog(store, Date.now);
  const got: StoredEvent[] = [];
  const feed = new EventFeed(log, (events) => got.push(...events));
  await feed.init();
  await feed.start();
  try {
    await fn(log, feed, got);
  } finally {
    feed.stop();
    await store.close();
  }
}

Deno.test({
  name: "feed: PostgreSQL commits out of id order arrive in id order",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const pg = new PostgresStorage(
      await (await startPostgres()).createDatabase(),
      4,
    );
    await pg.connect();
    await withFeed(pg, async (log, feed, got) => {
      let release!: () => void;
      const held = new Promise<void>((r) => release = r);
      let firstId = 0;
      // A takes the lower id and stays open; B takes the next and commits.
      const a = pg.transaction(async (tx) => {
        firstId = await log.append(tx, change("a"));
        await held;
      });
      await poll("the first event", () => firstId > 0);
      await pg.transaction((tx) => log.append(tx, change("b")));
      feed.poke();
      await pause(150);
      assertEquals(got.map((e) => e.recordId), []);
      release();
      await a;
      feed.poke();
      await poll("two events", () => got.length === 2);
      assertEquals(got.map((e) => e.recordId), ["a", "b"]);
      // A rolled-back id leaves a gap that is settled, not waited on forever.
      await pg.transaction(async (tx) => {
        await log.append(tx, change("lost"));
        throw new Error("rollback");
      }).catch(() => {});
      await pg.transaction((tx) => log.append(tx, change("c")));
      feed.poke();
      await poll("three events", () => got.length === 3);
      assertEquals(got.map((e) => e.recordId), ["a", "b", "c"]);
      assertEquals(feed.position, got[2].id);
    });
  },
});

Deno.test("feed: SQLite reads only ids known committed", async () => {
  const db = new SqliteStorage(":memory:");
  await withFeed(db, async (log, feed, got) => {
    const id = await db.transaction((tx) => log.append(tx, change("a")));
    feed.poke();
    await pause(50);
    assertEquals(got.length, 0);
    feed.committed(id);
    await poll("one event", () => got.length === 1);
    assertEquals(got[0].recordId, "a");
  });
});

Deno.test("feed: starts again after it stopped (SQLite)", async () => {
  const db = new SqliteStorage(":memory:");
  await withFeed(db, async (log, feed, got) => {
    feed.stop();
    await feed.start();
    const id = await db.transaction((tx) => log.append(tx, change("a")));
    feed.committed(id);
    await poll("one event", () => got.length === 1);
  });
});
