/**
 * Realtime across instances: two Moonbase instances
 * on ONE PostgreSQL database. A write on one reaches subscribers on the
 * other; interleaved and concurrent writes from both arrive at a subscriber
 * of each in the same, increasing id order, each exactly once (checked
 * against `mb_events`); a stream resumes on the other instance; a logout on
 * one ends a stream on the other; a rolled-back write yields no event.
 * PostgreSQL only: skipped without PostgreSQL binaries or with
 * MB_TEST_DB=sqlite.
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
import {
  openSse,
  type SseClient,
  type SseMessage,
} from "./_realtime_client.ts";
import { poll, settlesWithin } from "./_wait.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";

let seq = 0;

/** A fresh open entity made on `a`, once `b` knows it too. */
async function entity(
  a: TestServer,
  b: TestServer,
  fields: Record<string, unknown>[] = [{ name: "title", type: "string" }],
): Promise<string> {
  const name = `multi_${++seq}`;
  await makeEntity(a, { name, fields, rules: OPEN });
  await poll(`${name} on B`, () => b.app.schemas.get(name) !== undefined, {
    deadline: 15_000,
  });
  return name;
}

/** Opens a stream that must start; returns it after its `ready`. */
async function ready(
  s: TestServer,
  query: string,
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<SseClient> {
  const c = await openSse(s, query, opts);
  assert(c.status === 200, `refused: ${c.status} ${JSON.stringify(c.body)}`);
  assertEquals((await c.next())?.event, "ready");
  return c;
}

/** Creates a record through `s`'s API; returns its id. */
async function create(
  s: TestServer,
  entity: string,
  body: Record<string, unknown>,
): Promise<string> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, { body });
  assertStatus(r, 201, `create in ${entity}`);
  return r.data.id;
}

/** The next `n` messages (fails when fewer arrive within `ms` each). */
async function collect(
  c: SseClient,
  n: number,
  ms = 3000,
): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  while (out.length < n) {
    const m = await c.next(ms);
    if (!m) break;
    out.push(m);
  }
  assertEquals(out.length, n, `messages: ${JSON.stringify(out.slice(-3))}`);
  return out;
}

/** The journal's events of an entity, in id order: [id, record id]. */
async function journal(
  s: TestServer,
  entity: string,
): Promise<[string, string][]> {
  const rows = await s.app.storage.query(
    `SELECT "id", "record_id" FROM "mb_events" WHERE "entity" = ? ORDER BY "id"`,
    [entity],
  );
  return rows.map((r) => [String(r.id), String(r.record_id)]);
}

/** [SSE id, record id] of each event. */
function pairs(ms: SseMessage[]): [string, string][] {
  return ms.map((m) => [m.id!, m.data.id]);
}

/** Ids strictly increase. */
function increasing(ms: SseMessage[]): void {
  const ids = ms.map((m) => Number(m.id));
  for (let i = 1; i < ids.length; i++) {
    assert(ids[i] > ids[i - 1], `ids out of order at ${i}: ${ids}`);
  }
}

Deno.test({
  name: "realtime on PostgreSQL: two instances on one database",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const a = await startServer("postgres", { realtimeHeartbeat: 1 });
    const dirB = await Deno.makeTempDir({ prefix: "mb_test_" });
    const open: SseClient[] = [];
    const sse = async (s: TestServer, query: string, token?: string) => {
      const c = await ready(s, query, { token });
      open.push(c);
      return c;
    };
    let b: TestServer | undefined;
    try {
      b = await startServer("postgres", {
        connection: a.connection,
        dataDir: dirB,
        realtimeHeartbeat: 1,
      });
      const B = b;

      await t.step("a write on A reaches a subscriber on B", async () => {
        const e = await entity(a, B);
        const c = await sse(B, `topics=${e}`);
        const id = await create(a, e, { title: "from A" });
        const m = await c.next();
        assertEquals([m?.event, m?.data.id, m?.data.record.title], [
          "create",
          id,
          "from A",
        ]);
        // Updates and deletes travel too.
        await a.request("PATCH", `/api/v1/entities/${e}/${id}`, {
          body: { title: "again" },
        });
        await a.request("DELETE", `/api/v1/entities/${e}/${id}`);
        const rest = await collect(c, 2);
        assertEquals(rest.map((x) => x.event), ["update", "delete"]);
        increasing([m!, ...rest]);
        c.close();
      });

      await t.step(
        "interleaved writes on A and B: same order on both, none missing",
        async () => {
          const e = await entity(a, B);
          const onA = await sse(a, `topics=${e}`);
          const onB = await sse(B, `topics=${e}`);
          const n = 40;
          // Sequential turns, with pairs written at once from both sides.
          for (let i = 0; i < n; i += 2) {
            await Promise.all([
              create(a, e, { title: `a${i}` }),
              create(B, e, { title: `b${i + 1}` }),
            ]);
          }
          const gotA = await collect(onA, n);
          const gotB = await collect(onB, n);
          increasing(gotA);
          assertEquals(pairs(gotB), pairs(gotA), "the same order on A and B");
          assertEquals(pairs(gotA), await journal(a, e), "as in mb_events");
          assertEquals(await onA.drain(200), [], "no duplicate on A");
          assertEquals(await onB.drain(0), [], "no duplicate on B");
          onA.close();
          onB.close();
        },
      );

      await t.step(
        "resume on B after a stream on A dropped: nothing lost or duplicated",
        async () => {
          const e = await entity(a, B);
          const first = await sse(a, `topics=${e}`);
          await create(a, e, { title: "seen 1" });
          await create(B, e, { title: "seen 2" });
          const seen = await collect(first, 2);
          first.close();
          await poll(
            "the stream on A left",
            () => a.app.realtime!.hub.subscribers.size === 0,
            { deadline: 15_000 },
          );
          const missed = [
            await create(B, e, { title: "missed 1" }),
            await create(a, e, { title: "missed 2" }),
            await create(B, e, { title: "missed 3" }),
          ];
          const resumed = await openSse(B, `topics=${e}`, {
            headers: { "last-event-id": seen[1].id! },
          });
          open.push(resumed);
          assertEquals(resumed.status, 200);
          const head = await resumed.next();
          assertEquals(head?.event, "ready");
          assertEquals(head?.data.reset, undefined, "not a reset");
          const replay = await collect(resumed, 3);
          assertEquals(replay.map((m) => m.data.id), missed);
          const live = await create(a, e, { title: "live" });
          const after = await collect(resumed, 1);
          assertEquals(after[0].data.id, live);
          const all = [...seen, ...replay, ...after];
          increasing(all);
          assertEquals(pairs(all), await journal(a, e), "as in mb_events");
          assertEquals(await resumed.drain(200), [], "no duplicate");
          resumed.close();
        },
      );

      await t.step(
        "50 concurrent creates from both instances: each once, in id order",
        async () => {
          const e = await entity(a, B);
          const onA = await sse(a, `topics=${e}`);
          const onB = await sse(B, `topics=${e}`);
          const ids = await Promise.all(
            Array.from(
              { length: 50 },
              (_, i) => create(i % 2 ? B : a, e, { title: `c${i}` }),
            ),
          );
          const gotA = await collect(onA, 50);
          const gotB = await collect(onB, 50);
          increasing(gotA);
          assertEquals(pairs(gotB), pairs(gotA), "the same order on A and B");
          assertEquals(
            gotA.map((m) => m.data.id).sort(),
            [...ids].sort(),
            "every write, once",
          );
          assertEquals(pairs(gotA), await journal(a, e), "as in mb_events");
          assertEquals(await onA.drain(200), [], "no duplicate on A");
          assertEquals(await onB.drain(0), [], "no duplicate on B");
          onA.close();
          onB.close();
        },
      );

      await t.step(
        "a logout on A ends a stream open on B",
        async () => {
          const e = await entity(a, B);
          const users = `multi_users_${++seq}`;
          await makeEntity(a, {
            name: users,
            type: "auth",
            fields: [],
            rules: OPEN,
          });
          await poll(
            "users on B",
            () => B.app.schemas.get(users) !== undefined,
            { deadline: 15_000 },
          );
          const u = await userOf(a, users, "multi@example.com");
          const c = await sse(B, `topics=${e}`, u.token);
          const r = await a.request("POST", `/api/v1/auth/${users}/logout`, {
            token: u.token,
          });
          assert(r.status === 200 || r.status === 204, `logout: ${r.status}`);
          // Only the revocation reaching B can end it: that it ends is the
          // proof (the deadline only turns a hang into a failure).
          const ended = await settlesWithin(c.ended.then(() => true), 20_000);
          assert(ended === true, "the stream on B did not end");
          const last = (await c.drain(0)).at(-1);
          assertEquals([last?.event, last?.data.status], ["error", 401]);
        },
      );

      await t.step(
        "a rolled-back write (unique violation) yields no event anywhere",
        async () => {
          const e = await entity(a, B, [
            { name: "slug", type: "string", unique: true },
          ]);
          const onA = await sse(a, `topics=${e}`);
          const onB = await sse(B, `topics=${e}`);
          const x = await create(a, e, { slug: "x" });
          // A plain duplicate, from the other instance.
          const dup = await B.request("POST", `/api/v1/entities/${e}`, {
            body: { slug: "x" },
          });
          assertStatus(dup, 409, "duplicate slug");
          // A race: of six creates of one slug from both, one wins.
          const race = await Promise.all(
            Array.from(
              { length: 6 },
              (_, i) =>
                (i % 2 ? B : a).request("POST", `/api/v1/entities/${e}`, {
                  body: { slug: "y" },
                }),
            ),
          );
          const won = race.filter((r) => r.status === 201);
          assertEquals(won.length, 1, race.map((r) => r.status).join(","));
          assert(race.every((r) => r.status === 201 || r.status === 409));
          const marker = await create(B, e, { slug: "marker" });
          const expected = [x, won[0].data.id, marker];
          for (const c of [onA, onB]) {
            const got = await collect(c, 3);
            assertEquals(got.map((m) => m.data.id), expected);
            increasing(got);
            assertEquals(await c.drain(100), [], "nothing else");
          }
          assertEquals(
            (await journal(a, e)).map(([, id]) => id),
            expected,
            "mb_events holds only the committed writes",
          );
        },
      );
    } finally {
      for (const c of open) c.close();
      await b?.close();
      await a.close();
      await Deno.remove(dirB, { recursive: true }).catch(() => {});
    }
  },
});
