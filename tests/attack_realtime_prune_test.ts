/**
 * Events pruned before they were delivered are never skipped silently
 * (issue 28 item 2, attacked again): the log is pruned by bytes, so a
 * burst of large events (or another instance's writes) can delete events
 * a lagging feed has not read yet, or the rest of a resume in progress.
 * The streams that were to get them are reset (`event: reset`, `ready`
 * with `"reset": true`), then carry on with the events after them.
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
import { openSse, type SseMessage } from "./_realtime_client.ts";
import { makeEntity } from "./_extend_fixtures.ts";
import { topicsQuery, write } from "./_realtime_cases.ts";
import type { RecordChange } from "../lib/records/changes.ts";

const LOG_BYTES = 32 * 1024;

/** A change of entity `p` carrying `bytes` of text (as a write would log it). */
function change(s: TestServer, bytes: number): RecordChange {
  const id = crypto.randomUUID();
  const entity = s.app.schemas.byName("p")!;
  return {
    entity: "p",
    entityId: entity.id,
    id,
    action: "create",
    record: { id, created: "", updated: "", t: "x".repeat(bytes) },
  };
}

/** Appends changes to the log as a write does, without telling the feed. */
async function behindTheFeed(
  s: TestServer,
  n: number,
  bytes: number,
): Promise<void> {
  const log = s.app.realtime!.log;
  for (let i = 0; i < n; i++) {
    await s.app.storage.transaction((tx) => log.append(tx, change(s, bytes)));
  }
}

/** Messages until one whose record has `t === tag` (or the stream stalls). */
async function until(
  c: Awaited<ReturnType<typeof openSse>>,
  tag: string,
): Promise<SseMessage[]> {
  const got: SseMessage[] = [];
  for (;;) {
    const m = await c.next(10_000);
    assert(m, `"${tag}" never arrived; got ${JSON.stringify(got.map(brief))}`);
    got.push(m);
    if (m.data?.record?.t === tag) return got;
  }
}

function brief(m: SseMessage): string {
  return m.event === "create" ? `create ${m.id}` : m.event;
}

forEachDb(
  "attack realtime: events pruned before delivery reset the streams",
  async (t, db) => {
    const s = await startServer(db, { realtimeLogBytes: LOG_BYTES });
    try {
      await makeEntity(s, {
        name: "p",
        fields: [{ name: "t", type: "string" }],
      });

      await t.step(
        "found and fixed: a feed behind a prune resets its streams, then delivers what follows",
        async () => {
          const c = await openSse(s, topicsQuery(["p"]));
          assertEquals(c.status, 200);
          assertEquals((await c.next())?.event, "ready");
          // Events the feed has not read yet (a burst, or another
          // instance's writes), pruned by bytes before it reads them. On
          // PostgreSQL the feed reads whatever committed: a write still
          // committing (its id below theirs) holds it back meanwhile, and
          // commits after the prune (its event outlives the prune).
          const log = s.app.realtime!.log;
          let release = () => {};
          let holding: Promise<void> = Promise.resolve();
          if (db === "postgres") {
            const held = new Promise<void>((r) => release = r);
            let started!: () => void;
            const appended = new Promise<void>((r) => started = r);
            holding = s.app.storage.transaction(async (tx) => {
              await log.append(tx, change(s, 10));
              started();
              await held;
            });
            await appended;
          }
          await behindTheFeed(s, 6, 8000);
          await log.prune();
          release();
          await holding;
          await write(s, "POST", "p", { t: "after" });
          const got = await until(c, "after");
          const events = got.map((m) => m.event);
          assert(
            events.includes("reset"),
            `no reset before the events after the gap: ${events}`,
          );
          const reset = events.indexOf("reset");
          assertEquals(got[reset + 1].data?.reset, true, "ready says reset");
          // Before it at most the write that committed late (PostgreSQL).
          assertEquals(
            got.slice(0, reset).filter((m) =>
              m.event === "create" && m.data.record.t.length !== 10
            ),
            [],
            "the reset comes before the events after the gap",
          );
          c.close();
        },
      );

      await t.step(
        "found and fixed: a resume that a prune overtakes is reset, then carries on",
        async () => {
          // A log of a few small events, within its bytes.
          await s.app.realtime!.log.prune(0, 0, 1);
          await write(s, "POST", "p", { t: "anchor" });
          const rows = await s.app.storage.query(
            `SELECT MAX("id") AS "id" FROM "mb_events"`,
          );
          const anchor = Number(rows[0].id);
          // 150 small events: the replay reads them in two batches.
          await behindTheFeed(s, 150, 10);
          await write(s, "POST", "p", { t: "live" });
          // The feed has read them all: the resume replays them.
          const keeper = await openSse(s, topicsQuery(["p"]), {
            headers: { "last-event-id": String(anchor) },
          });
          await until(keeper, "live");
          keeper.close();
          // The log is pruned right after the replay's first read.
          const log = s.app.realtime!.log;
          const read = log.read.bind(log);
          let reads = 0;
          log.read = async (...args: Parameters<typeof read>) => {
            const got = await read(...args);
            if (args[3] && reads++ === 0) await log.prune(0, 0, 200);
            return got;
          };
          try {
            const c = await openSse(s, topicsQuery(["p"]), {
              headers: { "last-event-id": String(anchor) },
            });
            assertEquals(c.status, 200);
            assertEquals(await c.next(), {
              event: "ready",
              data: { topics: ["p"] },
            });
            const got = await until(c, "live");
            const events = got.map((m) => m.event);
            const reset = events.indexOf("reset");
            assert(reset >= 0, `no reset: ${got.map(brief)}`);
            assertEquals(got[reset + 1].data?.reset, true, "ready says reset");
            // Before the reset: the first batch, in order, none skipped.
            const before = got.slice(0, reset).map((m) => Number(m.id));
            assert(before.length > 0, "the first batch came first");
            assertEquals(
              before,
              before.map((_, i) => anchor + 1 + i),
              "the events before the reset follow each other",
            );
            c.close();
          } finally {
            log.read = read;
          }
        },
      );
    } finally {
      await s.close();
    }
  },
);
