/**
 * Two instances on one PostgreSQL: once a rule change made on A has
 * committed, B lists, reads, writes and delivers realtime events by the new
 * rule — whether or not B's schema notification has arrived yet. B's
 * notifications and polls are held back here (its sync is stopped), so B
 * learns of A's change only from the database itself: the stored schema
 * version its statements check. Without that check B would serve the new
 * records to guests under the old, public rule every round.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { openSse, type SseClient } from "./_realtime_client.ts";
import { OPEN } from "./_extend_fixtures.ts";
import { AUTH, custom, MARKS, topicsQuery } from "./_realtime_cases.ts";

const ROUNDS = 6;

/** Writes a mark on A, tells B's feed, and returns what `c` got before it. */
async function beforeMark(
  a: TestServer,
  b: TestServer,
  c: SseClient,
): Promise<{ entity: string; id: string }[]> {
  const tag = crypto.randomUUID();
  assertStatus(
    await a.request("POST", `/api/v1/entities/${MARKS}`, { body: { tag } }),
    201,
  );
  // B's own notification of new events (stopped with its sync).
  b.app.realtime!.notified();
  const got: { entity: string; id: string }[] = [];
  for (;;) {
    const m = await c.next(5000);
    assert(m, `the mark never arrived; got ${JSON.stringify(got)}`);
    if (m.data?.entity === MARKS) {
      if (m.data.record?.tag === tag) return got;
      continue;
    }
    got.push({ entity: m.data?.entity, id: m.data?.id });
  }
}

Deno.test({
  name:
    "multi-instance: a rule tightened on A is in force on B as soon as it commits",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const url = await (await startPostgres()).createDatabase();
    const a = await startServer("postgres", { connection: url });
    const b = await startServer("postgres", {
      connection: url,
      realtimeHeartbeat: 1,
    });
    const streams: SseClient[] = [];
    try {
      // B hears nothing from A: no notification, no poll.
      await b.app.sync.close();
      const admin = await a.adminToken();
      const schema = async (body: Record<string, unknown>) => {
        const r = await a.request(
          body.name ? "POST" : "PATCH",
          `/api/v1/schemas${body.name ? "" : `/${body.entity}`}`,
          { token: admin, body: body.name ? body : { rules: body.rules } },
        );
        assert(r.status === 200 || r.status === 201, r.text);
      };
      await schema({
        name: MARKS,
        type: "base",
        fields: [{ name: "tag", type: "string" }],
        rules: OPEN,
      });
      // A new entity: B loads it as its notification would make it.
      const learn = async (e: string) => {
        await b.app.schemas.refreshIfChanged();
        assertStatus(await b.request("GET", `/api/v1/entities/${e}`), 200);
      };
      await learn(MARKS);

      for (let k = 0; k < ROUNDS; k++) {
        await t.step(`round ${k}`, async () => {
          const e = `shared_${k}`;
          await schema({
            name: e,
            type: "base",
            fields: [{ name: "owner", type: "string" }],
            rules: OPEN,
          });
          await learn(e);
          const c = await openSse(b, topicsQuery([e, MARKS]));
          streams.push(c);
          assertEquals(c.status, 200, JSON.stringify(c.body));
          assertEquals((await c.next())?.event, "ready");
          // Tightened on A: only a record's owner lists or reads it, and
          // only users add.
          await schema({
            entity: e,
            rules: {
              ...OPEN,
              list: custom("record.owner == auth.id"),
              get: custom("record.owner == auth.id"),
              add: AUTH,
            },
          });
          const made: string[] = [];
          const r = await a.request("POST", `/api/v1/entities/${e}`, {
            token: admin,
            body: { owner: "someone" },
          });
          assertStatus(r, 201);
          made.push(r.data.id);
          const check = async () => {
            const list = await b.request("GET", `/api/v1/entities/${e}`);
            assertStatus(list, 200);
            assertEquals(list.data.items, [], "a guest's list on B");
            for (const id of made) {
              const one = await b.request("GET", `/api/v1/entities/${e}/${id}`);
              assertEquals(one.status, 404, `a guest's get on B: ${one.text}`);
            }
          };
          const stream = async () => {
            const got = await beforeMark(a, b, c);
            assertEquals(got, [], "events to a guest on B");
          };
          // Each path checks the version by itself: the first to run after
          // A's change is the one under test (a delivery, a read, a write).
          if (k % 3 === 0) {
            await stream();
            await check();
          } else if (k % 3 === 1) {
            await check();
            await stream();
          } else {
            const w = await b.request("POST", `/api/v1/entities/${e}`, {
              body: { owner: "" },
            });
            assertEquals(w.status, 401, `a guest's create on B: ${w.text}`);
            await check();
            await stream();
          }
          c.close();
        });
      }
    } finally {
      for (const c of streams) c.close();
      await b.close();
      await a.close();
    }
  },
});
