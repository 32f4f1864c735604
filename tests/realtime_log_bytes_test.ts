/**
 * The realtime event log is bounded by bytes, not only by events: large
 * updates of one record cannot pin the log past `realtimeLogBytes`, and a
 * resume whose missed events (of the entities it follows) hold more than
 * `realtimeResumeBytes` is answered with a `reset` instead of being read
 * and replayed; small events still resume as before.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { openSse } from "./_realtime_client.ts";
import { poll } from "./_wait.ts";
import { makeEntity, userOf } from "./_extend_fixtures.ts";
import {
  brief,
  closeAll,
  custom,
  keepFeedRunning,
  MARKS,
  PUBLIC,
  setupMarks,
  subscribe,
  topicsQuery,
  upToMark,
  write,
} from "./_realtime_cases.ts";

const LOG_BYTES = 2 * 1024 * 1024;
const RESUME_BYTES = 600_000;

const fields = [
  { name: "owner", type: "string" },
  { name: "body", type: "string" },
];
/** Only the owner lists, reads and changes a record; anyone adds. */
const OWNED = {
  list: custom("record.owner == auth.id"),
  get: custom("record.owner == auth.id"),
  add: PUBLIC,
  update: custom("record.owner == auth.id"),
  delete: custom("record.owner == auth.id"),
};

/** Bytes of bodies the log holds, measured from the bodies themselves. */
async function logBytes(s: TestServer): Promise<number> {
  const len = s.app.storage.dialect.name === "postgres"
    ? (c: string) => `octet_length("${c}")`
    : (c: string) => `length(CAST("${c}" AS BLOB))`;
  const rows = await s.app.storage.query(
    `SELECT COALESCE(SUM(${len("record")} + COALESCE(${
      len("previous")
    }, 0)), 0) AS "bytes" FROM "mb_events"`,
  );
  return Number(rows[0].bytes);
}

/** Opens a resuming stream and returns it after its `ready` (and `reset`). */
async function resume(
  s: TestServer,
  topics: string[],
  lastId: string,
  token: string | undefined,
  reset: boolean,
) {
  const all = [...topics, MARKS];
  const c = await openSse(s, topicsQuery(all), {
    token,
    headers: { "last-event-id": lastId },
  });
  assertEquals(c.status, 200);
  if (reset) {
    assertEquals(await c.next(), { event: "reset", data: { topics: all } });
    assertEquals(await c.next(), {
      event: "ready",
      data: { topics: all, reset: true },
    });
  } else {
    assertEquals(await c.next(), { event: "ready", data: { topics: all } });
  }
  return c;
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  await makeEntity(s, { name: "people", type: "auth" });
  const alice = await userOf(s, "people", "alice@example.com");

  await t.step(
    "many large updates of one record: the log stays within its byte cap",
    async () => {
      await makeEntity(s, { name: "z_big", fields, rules: OWNED });
      const rec = await write(s, "POST", "z_big", { owner: alice.id });
      let last = "";
      for (let i = 0; i < 30; i++) {
        // ~200 KB a field: each event holds the record and the one before.
        last = String(i % 10).repeat(200_000);
        await write(
          s,
          "PATCH",
          `z_big/${rec.id}`,
          { body: last },
          alice.token,
        );
        await poll(
          `the log within ${LOG_BYTES} bytes after update ${i}`,
          async () => await logBytes(s) <= LOG_BYTES,
        );
      }
      // The newest event stays, whole; each row's size is its bodies' bytes.
      const [top] = await s.app.storage.query(
        `SELECT "record", "size" FROM "mb_events" ORDER BY "id" DESC LIMIT 1`,
      );
      assertEquals(JSON.parse(String(top.record)).body, last);
      const [sizes] = await s.app.storage.query(
        `SELECT COALESCE(SUM("size"), 0) AS "n" FROM "mb_events"`,
      );
      assertEquals(Number(sizes.n), await logBytes(s));
    },
  );

  await t.step(
    "a resume past its byte budget: reset; small events resume as before",
    async () => {
      await makeEntity(s, { name: "z_large", fields, rules: OWNED });
      await makeEntity(s, { name: "z_small", fields, rules: OWNED });
      const first = await subscribe(s, ["z_large", "z_small"], alice);
      const a = await write(s, "POST", "z_large", { owner: alice.id });
      const [seen] = await upToMark(s, [first]);
      assertEquals(brief(seen), [["create", a.id]]);
      const lastId = seen[0].id!;
      first.close();
      // While away: ~750 KB of large events, and two small ones.
      for (let i = 0; i < 3; i++) {
        await write(s, "PATCH", `z_large/${a.id}`, {
          body: String(i).repeat(150_000),
        }, alice.token);
      }
      const b = await write(s, "POST", "z_small", { owner: alice.id });
      await write(s, "PATCH", `z_small/${b.id}`, { body: "b2" }, alice.token);
      // Every event after lastId is still kept: the budget alone resets.
      assert((await s.app.realtime!.log.bounds()).min <= Number(lastId));
      const large = await resume(s, ["z_large"], lastId, alice.token, true);
      const both = await resume(
        s,
        ["z_large", "z_small"],
        lastId,
        alice.token,
        true,
      );
      const guest = await resume(s, ["z_large"], lastId, undefined, true);
      const small = await resume(s, ["z_small"], lastId, alice.token, false);
      const c = await write(s, "POST", "z_small", { owner: alice.id });
      const [l, bo, g, sm] = await upToMark(s, [large, both, guest, small]);
      assertEquals(brief(l), [], "a reset replays nothing");
      assertEquals(brief(bo), [["create", c.id]]);
      assertEquals(brief(g), []);
      assertEquals(brief(sm), [
        ["create", b.id],
        ["update", b.id],
        ["create", c.id],
      ]);
      assertEquals(sm[1].data.record.body, "b2");
      closeAll(large, both, guest, small);
    },
  );
}

forEachDb("realtime: the event log bounded by bytes", async (t, db) => {
  const s = await startServer(db, {
    realtimeHeartbeat: 1,
    realtimeLogBytes: LOG_BYTES,
    realtimeResumeBytes: RESUME_BYTES,
  });
  try {
    await setupMarks(s);
    const keeper = await keepFeedRunning(s);
    await cases(t, s);
    keeper.close();
  } finally {
    await s.close();
  }
});
