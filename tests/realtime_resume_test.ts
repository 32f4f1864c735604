/**
 * Realtime resume over SSE, black box: a stream reopened with
 * `Last-Event-ID` (or `?lastEventId=`) gets the events of its topics it
 * missed, in order, judged by its own rules, then live ones — nothing lost,
 * nothing twice, compared with a stream that stayed open; an id it cannot
 * resume from (garbage, from the future, or older than the log keeps)
 * starts the stream with `event: reset` and a `ready` saying `reset: true`.
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
import {
  openSse,
  type SseClient,
  type SseMessage,
} from "./_realtime_client.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import { pause } from "./_wait.ts";
import {
  brief,
  closeAll,
  custom,
  keepFeedRunning,
  MARKS,
  setupMarks,
  subscribe,
  topicsQuery,
  upToMark,
  write,
} from "./_realtime_cases.ts";
import { RETAIN_MS, RETAIN_ROWS } from "../lib/realtime/event_log.ts";

const fields = [
  { name: "title", type: "string" },
  { name: "owner", type: "string" },
];

type How = "header" | "query";

/**
 * Reopens a stream on `topics` (and the marks) after `lastId`, checking the
 * first messages: `ready`, or `reset` then `ready` with `reset: true`.
 */
async function resume(
  s: TestServer,
  topics: string[],
  lastId: string,
  how: How,
  o: { token?: string; reset?: boolean } = {},
): Promise<SseClient> {
  const all = [...topics, MARKS];
  const c = await openSse(
    s,
    topicsQuery(all) +
      (how === "query" ? `&lastEventId=${encodeURIComponent(lastId)}` : ""),
    {
      token: o.token,
      headers: how === "header" ? { "last-event-id": lastId } : {},
    },
  );
  assertEquals(
    c.status,
    200,
    `resume from ${lastId}: ${JSON.stringify(c.body)}`,
  );
  if (o.reset) {
    assertEquals(await c.next(), { event: "reset", data: { topics: all } });
    assertEquals(await c.next(), {
      event: "ready",
      data: { topics: all, reset: true },
    }, `ready after the reset (${lastId})`);
  } else {
    assertEquals(await c.next(), { event: "ready", data: { topics: all } });
  }
  return c;
}

/** Everything a stream got before a mark: the history it collected. */
class History {
  readonly msgs: SseMessage[] = [];
  constructor(readonly c: SseClient) {}
  add(batch: SseMessage[]): void {
    this.msgs.push(...batch);
  }
  after(id: string): SseMessage[] {
    return this.msgs.filter((m) => Number(m.id) > Number(id));
  }
}

function increasing(msgs: readonly SseMessage[], what: string): void {
  for (let i = 1; i < msgs.length; i++) {
    assert(
      Number(msgs[i].id) > Number(msgs[i - 1].id),
      `${what}: ids ${msgs[i - 1].id} then ${msgs[i].id}`,
    );
  }
}

async function maxEventId(s: TestServer): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COALESCE(MAX("id"), 0) AS "max" FROM "mb_events"`,
  );
  return Number(rows[0].max);
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  const admin = await s.adminToken();
  await makeEntity(s, { name: "people", type: "auth" });
  const alice = await userOf(s, "people", "alice@example.com");
  const bob = await userOf(s, "people", "bob@example.com");
  await makeEntity(s, { name: "z_other", fields });

  for (const how of ["header", "query"] as const) {
    await t.step(
      `resume (${how}): missed events in order, then live ones`,
      async () => {
        const e = `z_${how}`;
        await makeEntity(s, { name: e, fields });
        const oracle = new History(await subscribe(s, [e], { token: admin }));
        const first = await subscribe(s, [e], { token: admin });
        const a = await write(s, "POST", e, { title: "a" });
        const [seen] = await upToMark(s, [first]);
        assertEquals(brief(seen), [["create", a.id]]);
        const lastId = seen[0].id!;
        first.close();
        // While disconnected.
        const b = await write(s, "POST", e, { title: "b" });
        await write(s, "POST", "z_other", { title: "elsewhere" });
        await write(s, "PATCH", `${e}/${a.id}`, { title: "a2" });
        await write(s, "DELETE", `${e}/${b.id}`);
        const c = await write(s, "POST", e, { title: "c" });
        const again = await resume(s, [e], lastId, how, { token: admin });
        const one = await resume(s, [`${e}/${a.id}`], lastId, how, {
          token: admin,
        });
        // Live, after the resume.
        await write(s, "PATCH", `${e}/${c.id}`, { title: "c2" });
        await write(s, "PATCH", `${e}/${a.id}`, { title: "a3" });
        const [replayed, recordOnly, all] = await upToMark(s, [
          again,
          one,
          oracle.c,
        ]);
        oracle.add(all);
        assertEquals(brief(replayed), [
          ["create", b.id],
          ["update", a.id],
          ["delete", b.id],
          ["create", c.id],
          ["update", c.id],
          ["update", a.id],
        ]);
        assertEquals(replayed, oracle.after(lastId), "as the open stream got");
        increasing(replayed, "replayed");
        assertEquals(
          recordOnly,
          oracle.after(lastId).filter((m) => m.data.id === a.id),
          "the record topic: that record only",
        );
        assertEquals(recordOnly.length, 2);
        closeAll(again, one, oracle.c);
      },
    );
  }

  await t.step(
    "resume while writes go on: nothing lost, nothing twice",
    async () => {
      const e = "z_busy";
      await makeEntity(s, { name: e, fields });
      const oracle = new History(await subscribe(s, [e], { token: admin }));
      const first = await subscribe(s, [e], { token: admin });
      await write(s, "POST", e, { title: "start" });
      const [seen] = await upToMark(s, [first]);
      const lastId = seen[0].id!;
      first.close();
      for (let i = 0; i < 30; i++) {
        await write(s, "POST", e, { title: `missed ${i}` });
      }
      // Writes racing the resume.
      const writer = (async () => {
        for (let i = 0; i < 15; i++) {
          await write(s, "POST", e, { title: `live ${i}` });
        }
      })();
      const again = await resume(s, [e], lastId, "header", { token: admin });
      await writer;
      const [got, all] = await upToMark(s, [again, oracle.c]);
      oracle.add(all);
      assertEquals(got.length, 45, "every event once");
      assertEquals(got, oracle.after(lastId));
      increasing(got, "resumed");
      closeAll(again, oracle.c);
    },
  );

  await t.step("a resume is judged by the resumer's rules", async () => {
    const e = "z_rules";
    await makeEntity(s, {
      name: e,
      fields,
      rules: { ...OPEN, list: custom("record.owner == auth.id") },
    });
    const live = new History(await subscribe(s, [e], alice));
    const liveGuest = new History(await subscribe(s, [e]));
    const first = await subscribe(s, [e], alice);
    const mine = await write(s, "POST", e, { title: "m", owner: alice.id });
    const [seen] = await upToMark(s, [first]);
    assertEquals(brief(seen), [["create", mine.id]]);
    const lastId = seen[0].id!;
    first.close();
    // While disconnected.
    const his = await write(s, "POST", e, { title: "h", owner: bob.id });
    const given = await write(s, "PATCH", `${e}/${mine.id}`, {
      title: "given away",
      owner: bob.id,
    });
    const taken = await write(s, "PATCH", `${e}/${his.id}`, {
      title: "taken",
      owner: alice.id,
    });
    await write(s, "POST", e, { title: "h2", owner: bob.id });
    const again = await resume(s, [e], lastId, "query", {
      token: alice.token,
    });
    const guest = await resume(s, [e], lastId, "header");
    const [got, g, all, allGuest] = await upToMark(s, [
      again,
      guest,
      live.c,
      liveGuest.c,
    ]);
    live.add(all);
    liveGuest.add(allGuest);
    assertEquals(brief(got), [["delete", mine.id], ["update", his.id]]);
    assertEquals(got[0].data.record, { ...mine }, "the record as she saw it");
    assert(
      !JSON.stringify(got).includes(given.title as string),
      "the new data of a record out of view",
    );
    assertEquals(got[1].data.record, taken);
    assertEquals(got, live.after(lastId), "as her open stream got");
    assertEquals(g, [], "a guest: nothing");
    assertEquals(g, liveGuest.after(lastId));
    closeAll(again, guest, live.c, liveGuest.c);
  });

  await t.step(
    "garbage, unknown and future ids: reset, then ready, then live",
    async () => {
      const e = "z_reset";
      await makeEntity(s, { name: e, fields });
      const probe = await subscribe(s, [e]);
      await write(s, "POST", e, { title: "x" });
      await upToMark(s, [probe]); // delivered: the feed is past it
      probe.close();
      const max = await maxEventId(s);
      // The newest id resumes (nothing to replay).
      const newest = await resume(s, [e], String(max), "header");
      const bad: [string, How][] = [
        ["abc", "header"],
        ["-1", "query"],
        ["1.5", "header"],
        ["1e3", "query"],
        ["0x10", "header"],
        [" 5", "query"],
        ["5 ", "query"],
        ["9".repeat(16), "header"],
        ["99999999999999999999", "query"],
        [String(max + 1), "header"],
        [String(max + 1000), "query"],
      ];
      const resets: SseClient[] = [];
      for (const [id, how] of bad) {
        resets.push(await resume(s, [e], id, how, { reset: true }));
      }
      const r = await write(s, "POST", e, { title: "live" });
      const got = await upToMark(s, [newest, ...resets]);
      for (const [i, msgs] of got.entries()) {
        assertEquals(brief(msgs), [["create", r.id]], `stream ${i}`);
      }
      closeAll(newest, ...resets);
    },
  );

  // Last: it prunes the log under the other cases.
  await t.step(
    "an id older than the log keeps: reset; a kept one resumes",
    async () => {
      const e = "z_old";
      await makeEntity(s, { name: e, fields });
      const first = await subscribe(s, [e], { token: admin });
      const a = await write(s, "POST", e, { title: "a" });
      const [seen] = await upToMark(s, [first]);
      assertEquals(brief(seen), [["create", a.id]]);
      const oldId = seen[0].id!;
      first.close();
      const b = await write(s, "POST", e, { title: "b" });
      const rt = s.app.realtime!;
      // Retention: young events, or the newest 10 000: either keeps them.
      assertEquals(await rt.log.prune(), 0);
      assertEquals(await rt.log.prune(RETAIN_MS, 0), 0, "young ones kept");
      assertEquals(await rt.log.prune(0, RETAIN_ROWS), 0, "newest kept");
      const kept = await resume(s, [e], oldId, "header");
      // Now only the newest are kept.
      await pause(5); // the kept events are now older than "now"
      assert((await rt.log.prune(0, 0)) > 0, "pruned");
      const { min } = await rt.log.bounds();
      assert(min > Number(oldId), `the oldest kept ${min} > ${oldId}`);
      const gone = await resume(s, [e], oldId, "query", { reset: true });
      const justBefore = await resume(s, [e], String(min - 1), "header", {
        reset: true,
      });
      const fromMin = await resume(s, [e], String(min), "query");
      const c = await write(s, "POST", e, { title: "c" });
      const [k, g, jb, fm] = await upToMark(s, [
        kept,
        gone,
        justBefore,
        fromMin,
      ]);
      assertEquals(brief(k), [["create", b.id], ["create", c.id]]);
      assertEquals(brief(g), [["create", c.id]], "a reset replays nothing");
      assertEquals(brief(jb), [["create", c.id]]);
      assertEquals(brief(fm), [["create", c.id]]);
      closeAll(kept, gone, justBefore, fromMin);
    },
  );
}

forEachDb("realtime SSE: resume", async (t, db) => {
  const s = await startServer(db, { realtimeHeartbeat: 1 });
  try {
    await setupMarks(s);
    const keeper = await keepFeedRunning(s);
    await cases(t, s);
    keeper.close();
  } finally {
    await s.close();
  }
});
