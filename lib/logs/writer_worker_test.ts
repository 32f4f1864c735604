import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { SqliteStorage } from "../db/sqlite.ts";
import { LogStore } from "./store.ts";
import { chunkOf, type PackedRequest } from "./packed.ts";
import { appEntry, stamped } from "./entries.ts";

Deno.test({
  name: "the writer runs a queued prune and insert one after the other",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/logs.db`;
    const store = new LogStore(new SqliteStorage(file), file);
    try {
      await store.init();
      const app = (m: string) => stamped({ ...appEntry("info", m, undefined) });
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
      await store.insert([app("warm")]);
      // Another connection holds the write lock: the writer's next job
      // waits in BEGIN IMMEDIATE while a prune and an insert queue behind it.
      const other = new DatabaseSync(file);
      other.exec("PRAGMA busy_timeout=5000; BEGIN IMMEDIATE");
      const first = store.insert([app("first")]);
      await new Promise((r) => setTimeout(r, 50));
      const prune = store.prune(7, 1_000_000);
      const batch = store.insert(
        [app("last")],
        chunkOf(Array.from({ length: 100 }, (_, i) => req(i))),
      );
      await new Promise((r) => setTimeout(r, 200));
      other.exec("COMMIT");
      other.close();
      const settled = await Promise.allSettled([first, prune, batch]);
      assert.deepEqual(settled.map((r) => r.status), [
        "fulfilled",
        "fulfilled",
        "fulfilled",
      ]);
      const page = await store.query({ limit: 1000 });
      assert.equal(page.items.length, 103, "3 app entries and 100 requests");
    } finally {
      store.close();
      await store.storage.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "closing the store answers the jobs still queued: never a hang",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/logs.db`;
    const store = new LogStore(new SqliteStorage(file), file);
    const other = new DatabaseSync(file);
    try {
      await store.init();
      await store.insert([stamped({ ...appEntry("info", "warm", undefined) })]);
      other.exec("PRAGMA busy_timeout=5000; BEGIN IMMEDIATE");
      const queued = store.insert([
        stamped({ ...appEntry("info", "queued", undefined) }),
      ]);
      await new Promise((r) => setTimeout(r, 50));
      store.close();
      await assert.rejects(queued, /the log store is closed/);
    } finally {
      other.close();
      store.close();
      await store.storage.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
