/**
 * Realtime after the last subscriber left: the feed stops then, and must
 * start again for the next one. (Found by bench/realtime.ts: on SQLite,
 * `EventFeed.start` keeps its finished start promise, so once stopped the
 * feed never runs again and no subscriber of the instance gets events.)
 *
 * @module
 */

import { assertEquals, forEachDb, startServer } from "./_server.ts";
import { makeEntity } from "./_extend_fixtures.ts";
import { openSse, until } from "./_realtime_fixtures.ts";

forEachDb("realtime: a subscriber after the last one left", async (_t, db) => {
  const s = await startServer(db);
  try {
    await makeEntity(s, {
      name: "restart_items",
      fields: [{ name: "n", type: "int" }],
    });
    const first = await openSse(s, "topics=restart_items");
    assertEquals((await first.next())?.event, "ready");
    first.close();
    await until(
      () => s.app.realtime!.hub.subscribers.size === 0,
      3000,
      "the first subscriber to leave",
    );
    const second = await openSse(s, "topics=restart_items");
    try {
      assertEquals((await second.next())?.event, "ready");
      const r = await s.request("POST", "/api/v1/entities/restart_items", {
        body: { n: 1 },
      });
      assertEquals(r.status, 201);
      const ev = await second.next();
      assertEquals(
        { event: ev?.event, n: ev?.data?.record?.n },
        { event: "create", n: 1 },
      );
    } finally {
      second.close();
    }
  } finally {
    await s.close();
  }
});
