/**
 * The event log by bytes: reads hold at most `READ_BYTES` of bodies (one
 * event at least) and parse a body only when it is used; a read that
 * settles (`final`) never claims ids it left out; the feed reads on past a
 * byte-bounded batch; a resume's bytes are counted from the stored sizes;
 * a log written before sizes were stored gets them.
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "../../tests/_server.ts";
import { startPostgres } from "../../tests/_pg.ts";
import { poll } from "../../tests/_wait.ts";
import { PostgresStorage } from "../db/postgres.ts";
import { SqliteStorage } from "../db/sqlite.ts";
import type { Storage } from "../db/storage.ts";
import { ensureSystemTables } from "../schema/system.ts";
import { EventLog, READ_BYTES, type StoredEvent } from "./event_log.ts";
import { EventFeed } from "./feed.ts";

const BIG = 400_000;

const change = (id: string, size = 10, entity = "posts") => ({
  entity,
  entityId: entity,
  id,
  action: "create" as const,
  record: { id, body: "x".repeat(size) },
});

async function storage(db: "sqlite" | "postgres"): Promise<Storage> {
  if (db === "sqlite") return new SqliteStorage(":memory:");
  const pg = new PostgresStorage(
    await (await startPostgres()).createDatabase(),
    4,
  );
  await pg.connect();
  return pg;
}

for (const db of DATABASES) {
  Deno.test({
    name: `event log: reads bounded by bytes, bodies parsed on use [${db}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      const store = await storage(db);
      try {
        await ensureSystemTables(store);
        const log = new EventLog(store, Date.now, {
          resumeBytes: 2 * BIG + 1000,
        });
        const ids: number[] = [];
        for (let i = 0; i < 6; i++) {
          ids.push(
            await store.transaction((tx) =>
              log.append(tx, change(`b${i}`, BIG))
            ),
          );
        }
        await t.step("a read stops at its byte bound", async () => {
          const first = (await log.read(0)).events;
          assert(first.length > 0 && first.length < 6, `${first.length}`);
          assert((first.length - 1) * BIG < READ_BYTES);
          const all: StoredEvent[] = [...first];
          while (all.length < 6) {
            all.push(...(await log.read(all.at(-1)!.id)).events);
          }
          assertEquals(all.map((e) => e.id), ids);
          assertEquals(all.map((e) => e.record.id), ids.map((_, i) => `b${i}`));
        });
        await t.step("final: settles only the ids it read", async () => {
          const got = await log.final(0);
          assert(got, "no writer holds the lock");
          assert(got.events.length < 6);
          assertEquals(got.max, got.events.at(-1)!.id);
          const rest = await log.final(got.max);
          assertEquals(rest!.events[0].id, ids[got.events.length]);
        });
        await t.step("a resume's bytes: by entity, from sizes", async () => {
          const top = ids.at(-1)!;
          assertEquals(await log.resumable(ids[2], top, ["posts"]), false);
          assertEquals(await log.resumable(ids[3], top, ["posts"]), true);
          assertEquals(await log.resumable(ids[0], top, ["others"]), true);
        });
        await t.step("a body is parsed only when used", async () => {
          await store.run(
            `INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "record") VALUES ('posts', 'posts', 'bad', 'create', 0, '{not json')`,
          );
          const [ev] = (await log.read(ids.at(-1)!)).events;
          assertEquals(ev.recordId, "bad");
          let threw = false;
          try {
            ev.record;
          } catch {
            threw = true;
          }
          assert(threw, "parsed when used");
        });
      } finally {
        await store.close();
      }
    },
  });
}

Deno.test("feed: reads on past a byte-bounded batch (SQLite)", async () => {
  const db = new SqliteStorage(":memory:");
  await ensureSystemTables(db);
  const log = new EventLog(db, Date.now);
  const got: StoredEvent[] = [];
  const feed = new EventFeed(log, (events) => got.push(...events));
  await feed.init();
  await feed.start();
  try {
    let last = 0;
    await db.transaction(async (tx) => {
      for (let i = 0; i < 6; i++) last = await log.append(tx, change("a", BIG));
    });
    feed.committed(last);
    await poll("six events", () => got.length === 6);
    assertEquals(feed.position, last);
  } finally {
    feed.stop();
    await db.close();
  }
});

Deno.test("system tables: a log written before sizes gets them", async () => {
  const db = new SqliteStorage(":memory:");
  try {
    await db.exec(
      `CREATE TABLE "mb_events" ("id" INTEGER PRIMARY KEY, "entity" TEXT NOT NULL, "entity_id" TEXT NOT NULL, "record_id" TEXT NOT NULL, "action" TEXT NOT NULL, "at" INTEGER NOT NULL, "record" TEXT NOT NULL, "previous" TEXT)`,
    );
    await db.run(
      `INSERT INTO "mb_events" ("entity", "entity_id", "record_id", "action", "at", "record", "previous") VALUES ('p', 'p', '1', 'update', 0, '{"a":"é"}', '{}')`,
    );
    await ensureSystemTables(db);
    await ensureSystemTables(db);
    const rows = await db.query(`SELECT "size" FROM "mb_events"`);
    assertEquals(rows.map((r) => Number(r.size)), [10 + 2]);
  } finally {
    await db.close();
  }
});

Deno.test("event log: a full log is pruned once per eighth written, not per write (SQLite)", async () => {
  const store = new SqliteStorage(":memory:");
  try {
    await ensureSystemTables(store);
    let prunes = 0;
    class Counted extends EventLog {
      override prune(): Promise<number> {
        prunes++;
        return super.prune();
      }
    }
    const cap = 20_000;
    const log = new Counted(store, Date.now, { retainBytes: cap });
    let written = 0;
    let size = 0;
    for (let i = 0; i < 400; i++) {
      await store.transaction((tx) => log.append(tx, change(`e${i}`, 100)));
      log.committed();
      if (i === 0) {
        const [r] = await store.query(`SELECT "size" FROM "mb_events"`);
        size = Number(r.size);
      }
      written += size;
      // Let a prune the write started run (as requests would).
      await new Promise((r) => setTimeout(r, 0));
    }
    await poll("the last prune", async () => {
      const [r] = await store.query(
        `SELECT COALESCE(SUM("size"), 0) AS "n" FROM "mb_events"`,
      );
      return Number(r.n) <= cap;
    });
    // Each prune by bytes frees an eighth of the cap: about
    // (written - cap) / (cap / 8) of them, not one per write past the cap.
    const expected = Math.ceil((written - cap) / (cap / 8));
    assert(prunes <= expected + 2, `${prunes} prunes for ${written} bytes`);
    assert(prunes >= 1, "the log was pruned");
  } finally {
    await store.close();
  }
});
