/**
 * The change event of a record update, read from the event log itself: its
 * `record` is the record as stored and as the API answered, its `previous`
 * the record before; a write that fails leaves neither the write nor its
 * event, and no other write loses its event for it; a record the update
 * rule hides answers 404 and leaves none. Updates arriving together (one
 * SQLite write group) keep all of this per update.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import { custom, stored, write } from "./_realtime_cases.ts";

/** A record as the API answers it. */
type Rec = Record<string, unknown> & { id: string };

/** An event row as the log holds it. */
interface EventRow {
  id: number;
  action: string;
  recordId: string;
  record: Record<string, unknown>;
  previous: Record<string, unknown> | null;
}

/** The highest event id so far. */
async function lastEvent(s: TestServer): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COALESCE(MAX("id"), 0) AS "max" FROM "mb_events"`,
  );
  return Number(rows[0].max);
}

/** Events of `entity` after `after`, oldest first. */
async function eventsOf(
  s: TestServer,
  entity: string,
  after: number,
): Promise<EventRow[]> {
  const rows = await s.app.storage.query(
    `SELECT "id", "action", "record_id", "record", "previous" FROM "mb_events" WHERE "entity" = ? AND "id" > ? ORDER BY "id"`,
    [entity, after],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    action: String(r.action),
    recordId: String(r.record_id),
    record: JSON.parse(String(r.record)),
    previous: r.previous === null ? null : JSON.parse(String(r.previous)),
  }));
}

const KINDS = [
  { name: "title", type: "string" },
  { name: "slug", type: "string", unique: true },
  { name: "flag", type: "bool" },
  { name: "meta", type: "json" },
  { name: "score", type: "double" },
  { name: "n", type: "int" },
];

/** Sets a trigger that fails the event append of a record titled `title`. */
async function failAppendOf(s: TestServer, title: string): Promise<void> {
  const like = `%"title":"${title}"%`;
  if (s.db === "sqlite") {
    await s.app.storage.exec(
      `CREATE TRIGGER "t_fail_append" BEFORE INSERT ON "mb_events" WHEN NEW."record" LIKE '${like}' BEGIN SELECT RAISE(ABORT, 'append refused by the test'); END`,
    );
    return;
  }
  await s.app.storage.exec(
    `CREATE FUNCTION "t_fail_append"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'append refused by the test'; END $$`,
  );
  await s.app.storage.exec(
    `CREATE TRIGGER "t_fail_append" BEFORE INSERT ON "mb_events" FOR EACH ROW WHEN (NEW."record" LIKE '${like}') EXECUTE FUNCTION "t_fail_append"()`,
  );
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  await makeEntity(s, { name: "u_kinds", fields: KINDS });

  await t.step(
    "record = as stored and answered, previous = before",
    async () => {
      const a = await write(s, "POST", "u_kinds", {
        title: "a",
        slug: "a",
        flag: false,
        meta: { k: [1, 2] },
        score: 1.5,
        n: 1,
      });
      const from = await lastEvent(s);
      const answered = await write(s, "PATCH", `u_kinds/${a.id}`, {
        flag: true,
        meta: { k: [3], deep: { x: null } },
        score: 2.25,
      });
      const now = await stored(s, "u_kinds", a.id);
      assertEquals(answered, now, "the answer is the stored record");
      const [ev, ...more] = await eventsOf(s, "u_kinds", from);
      assertEquals(more.length, 0, "one event");
      assertEquals([ev.action, ev.recordId], ["update", a.id]);
      assertEquals(ev.record, now, "the event's record is the stored one");
      assertEquals(ev.previous, a, "the event's previous is the record before");
      assert(now.updated !== a.updated, "updated moved on");
    },
  );

  await t.step(
    "a refused update leaves no event, the others keep theirs",
    async () => {
      const recs: Rec[] = [];
      for (let i = 0; i < 12; i++) {
        recs.push(
          await write(s, "POST", "u_kinds", { title: "r", slug: `r${i}` }),
        );
      }
      const from = await lastEvent(s);
      // Together (one write group on SQLite): every third one takes a slug
      // another record holds and is refused before it writes anything.
      const token = await s.adminToken();
      const replies = await Promise.all(
        recs.map((r, i) =>
          s.request("PATCH", `/api/v1/entities/u_kinds/${r.id}`, {
            token,
            body: i % 3 === 0 ? { slug: "a", n: i } : { n: i },
          })
        ),
      );
      const evs = await eventsOf(s, "u_kinds", from);
      for (const [i, r] of replies.entries()) {
        const rec = await stored(s, "u_kinds", recs[i].id);
        const mine = evs.filter((e) => e.recordId === recs[i].id);
        if (i % 3 === 0) {
          assertStatus(r, 409, `a duplicate slug (${i})`);
          assertEquals(rec, recs[i], `record ${i} unchanged`);
          assertEquals(mine.length, 0, `no event for ${i}`);
        } else {
          assertStatus(r, 200, `update ${i}`);
          assertEquals(mine.map((e) => e.record), [rec], `event of ${i}`);
          assertEquals(mine[0].previous, recs[i], `previous of ${i}`);
        }
      }
    },
  );

  await t.step("updates of one record together: previous chains", async () => {
    const a = await write(s, "POST", "u_kinds", { title: "chain", slug: "c" });
    const from = await lastEvent(s);
    const token = await s.adminToken();
    const replies = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          s.request("PATCH", `/api/v1/entities/u_kinds/${a.id}`, {
            token,
            body: { n: i },
          }),
      ),
    );
    for (const r of replies) assertStatus(r, 200, "an update");
    const evs = await eventsOf(s, "u_kinds", from);
    assertEquals(evs.length, 10, "one event per update");
    assertEquals(evs[0].previous, a, "the first previous");
    for (let i = 1; i < evs.length; i++) {
      assertEquals(evs[i].previous, evs[i - 1].record, `previous ${i}`);
    }
    assertEquals(evs[9].record, await stored(s, "u_kinds", a.id), "the last");
  });

  await t.step("an append that fails undoes its write", async () => {
    const recs: Rec[] = [];
    for (let i = 0; i < 8; i++) {
      recs.push(
        await write(s, "POST", "u_kinds", { title: "f", slug: `f${i}` }),
      );
    }
    await failAppendOf(s, "explode");
    const from = await lastEvent(s);
    const token = await s.adminToken();
    const replies = await Promise.all(
      recs.map((r, i) =>
        s.request("PATCH", `/api/v1/entities/u_kinds/${r.id}`, {
          token,
          body: { title: i === 3 ? "explode" : `ok ${i}` },
        })
      ),
    );
    assert(replies[3].status >= 500, `the failed append: ${replies[3].status}`);
    const evs = await eventsOf(s, "u_kinds", from);
    // No write without its event, no event without its write (on SQLite the
    // failure may take the updates of its write group with it: 503).
    for (const [i, r] of replies.entries()) {
      const rec = await stored(s, "u_kinds", recs[i].id);
      const mine = evs.filter((e) => e.recordId === recs[i].id);
      if (r.status === 200) {
        assertEquals(mine.map((e) => e.record), [rec], `event of ${i}`);
      } else {
        assert(i === 3 || r.status === 503, `update ${i}: ${r.status}`);
        assertEquals(rec, recs[i], `record ${i} unchanged`);
        assertEquals(mine.length, 0, `no event for ${i}`);
      }
    }
    const again = await write(s, "PATCH", `u_kinds/${recs[0].id}`, { n: 7 });
    const [ev] = await eventsOf(s, "u_kinds", await lastEvent(s) - 1);
    assertEquals(ev.record, again, "writes go on after it");
  });
}

forEachDb("realtime: the change event of an update", async (t, db) => {
  const s = await startServer(db);
  try {
    await cases(t, s);
  } finally {
    await s.close();
  }
});

forEachDb(
  "realtime: an update the rule hides leaves no event",
  async (t, db) => {
    const s = await startServer(db);
    try {
      await makeEntity(s, { name: "u_users", type: "auth", fields: [] });
      await makeEntity(s, {
        name: "u_notes",
        fields: [{ name: "title", type: "string" }, {
          name: "owner",
          type: "string",
        }],
        rules: { ...OPEN, update: custom("record.owner == auth.id") },
      });
      const alice = await userOf(s, "u_users", "alice@example.com");
      const bob = await userOf(s, "u_users", "bob@example.com");
      const note = await write(s, "POST", "u_notes", {
        title: "hers",
        owner: alice.id,
      });
      await t.step(
        "another user's PATCH: 404, no write, no event",
        async () => {
          const from = await lastEvent(s);
          const r = await s.request(
            "PATCH",
            `/api/v1/entities/u_notes/${note.id}`,
            {
              token: bob.token,
              body: { title: "taken" },
            },
          );
          assertStatus(r, 404, "bob's update");
          assertEquals(await stored(s, "u_notes", note.id), note, "unchanged");
          assertEquals(await eventsOf(s, "u_notes", from), [], "no event");
        },
      );
      await t.step("the owner's PATCH: its event", async () => {
        const from = await lastEvent(s);
        const r = await s.request(
          "PATCH",
          `/api/v1/entities/u_notes/${note.id}`,
          {
            token: alice.token,
            body: { title: "still hers" },
          },
        );
        assertStatus(r, 200, "alice's update");
        const evs = await eventsOf(s, "u_notes", from);
        assertEquals(evs.map((e) => [e.record, e.previous]), [[r.data, note]]);
      });
      await t.step("a PATCH of a missing record: 404, no event", async () => {
        const from = await lastEvent(s);
        const r = await s.request("PATCH", `/api/v1/entities/u_notes/nope`, {
          token: alice.token,
          body: { title: "x" },
        });
        assertStatus(r, 404, "missing");
        assertEquals(await eventsOf(s, "u_notes", from), [], "no event");
      });
    } finally {
      await s.close();
    }
  },
);
