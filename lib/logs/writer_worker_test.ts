import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { SqliteStorage } from "../db/sqlite.ts";
import { LogStore } from "./store.ts";
import { chunkOf, type PackedRequest } from "./packed.ts";
import { appEntry, stamped } from "./entries.ts";

const app = (m: string) => stamped({ ...appEntry("info", m, undefined) });

/**
 * A test with a store whose writer thread has written once, and `lock`:
 * another connection holding the file's write lock, so that the writer's
 * next job waits in BEGIN IMMEDIATE and later ones queue behind it.
 */
function writerTest(
  name: string,
  fn: (store: LogStore, lock: DatabaseSync) => Promise<void>,
): void {
  Deno.test({
    name,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const dir = await Deno.makeTempDir();
      const file = `${dir}/logs.db`;
      const store = new LogStore(new SqliteStorage(file), file);
      const lock = new DatabaseSync(file);
      try {
        await store.init();
        await store.insert([app("warm")]);
        lock.exec("PRAGMA busy_timeout=5000; BEGIN IMMEDIATE");
        await fn(store, lock);
      } finally {
        if (lock.isTransaction) lock.exec("ROLLBACK");
        lock.close();
        store.close();
        await store.storage.close();
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

writerTest(
  "the writer runs a queued prune and insert one after the other",
  async (store, lock) => {
    const req = (i: number): PackedRequest => [
      Date.now(),
      1_000_000 + i,
      2,
      "GET",
      "/x",
      200,
      1,
      null,
      null,
      null,
      "r" + i,
    ];
    const first = store.insert([app("first")]);
    await new Promise((r) => setTimeout(r, 50));
    const prune = store.prune(7, 1_000_000);
    const batch = store.insert(
      [app("last")],
      chunkOf(Array.from({ length: 100 }, (_, i) => req(i))),
    );
    await new Promise((r) => setTimeout(r, 200));
    lock.exec("COMMIT");
    const settled = await Promise.allSettled([first, prune, batch]);
    assert.deepEqual(settled.map((r) => r.status), [
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    const page = await store.query({ limit: 1000 });
    assert.equal(page.items.length, 103, "3 app entries and 100 requests");
  },
);

writerTest(
  "closing the store answers the jobs still queued: never a hang",
  async (store) => {
    const queued = store.insert([app("queued")]);
    await new Promise((r) => setTimeout(r, 50));
    store.close();
    await assert.rejects(queued, /the log store is closed/);
  },
);
