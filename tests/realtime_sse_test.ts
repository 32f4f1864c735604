/**
 * Realtime over Server-Sent Events, black box: which topics open (malformed
 * ones, unknown entities, entities without API, system entities and views
 * are a 400 before the stream; rule modes give the 401/403 a list or get
 * would), the `ready` message, the exact message of a create, update and
 * delete, record topics, no password in an auth entity's events, the token
 * in `?token=`, file tokens refused, and `realtime: false`.
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
import { openSse } from "./_realtime_client.ts";
import { poll } from "./_wait.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import {
  ADMIN,
  AUTH,
  before,
  brief,
  caughtUp,
  closeAll,
  keepFeedRunning,
  MARKS,
  PUBLIC,
  rawStream,
  refusal,
  setupMarks,
  stored,
  subscribe,
  topicsQuery,
  write,
} from "./_realtime_cases.ts";

const title = [{ name: "title", type: "string" }];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  const admin = await s.adminToken();
  await makeEntity(s, { name: "users", type: "auth", fields: title });
  const user = await userOf(s, "users", "user@example.com");

  await t.step("malformed topics are a 400 before the stream", async () => {
    await makeEntity(s, { name: "t_mal", fields: title });
    const bad = [
      "",
      "topics=",
      "topics=,",
      "topics=t%20mal",
      "topics=t_mal/",
      "topics=t_mal/a/b",
      "topics=1t_mal",
      "topics=t_mal/a%2Bb",
      `topics=t_mal/${"a".repeat(65)}`,
      `topics=${"t".repeat(64)}`,
      "topics=t_mal,t_mal/%00",
    ];
    for (const q of bad) {
      const r = await refusal(s, q, { token: admin });
      assertEquals(r.status, 400, `${q}: ${r.error}`);
    }
    // The same topics well formed open.
    const ok = await subscribe(s, ["t_mal", `t_mal/${"a".repeat(64)}`], {
      token: admin,
    });
    ok.close();
  });

  await t.step(
    "unknown entities, no API, system entities and views are a 400",
    async () => {
      await makeEntity(s, { name: "t_known", fields: title });
      await makeEntity(s, { name: "t_noapi", fields: title, has_api: false });
      await makeEntity(s, {
        name: "t_view",
        type: "view",
        view_query: "SELECT id, title FROM t_known",
      });
      const topics = [
        "t_nope",
        "T_known",
        "t_noapi",
        "t_noapi/x1",
        "mb_admins",
        "mb_admins/x1",
        "mb_events",
        "t_view",
        "t_view/x1",
      ];
      for (const token of [admin, user.token, undefined]) {
        for (const topic of topics) {
          const r = await refusal(s, topicsQuery([topic]), { token });
          assertEquals(
            r.status,
            400,
            `${topic} (${token ? "token" : "guest"})`,
          );
          // One refused topic refuses the whole stream.
          const mixed = await refusal(s, topicsQuery(["t_known", topic]), {
            token,
          });
          assertEquals(mixed.status, 400, `t_known,${topic}`);
        }
      }
    },
  );

  await t.step(
    "rule modes: the 401/403 a list (entity) or a get (record) gives",
    async () => {
      await makeEntity(s, {
        name: "t_modes_auth",
        fields: title,
        rules: { ...OPEN, list: AUTH, get: PUBLIC },
      });
      await makeEntity(s, {
        name: "t_modes_admin",
        fields: title,
        rules: { ...OPEN, list: ADMIN, get: ADMIN },
      });
      await makeEntity(s, {
        name: "t_modes_get",
        fields: title,
        rules: { ...OPEN, list: PUBLIC, get: ADMIN },
      });
      const id = "01900000-0000-7000-8000-000000000001";
      const callers = { admin, user: user.token, guest: undefined };
      const want: [string, Record<keyof typeof callers, number>][] = [
        ["t_modes_auth", { admin: 200, user: 200, guest: 401 }],
        [`t_modes_auth/${id}`, { admin: 200, user: 200, guest: 200 }],
        ["t_modes_admin", { admin: 200, user: 403, guest: 401 }],
        [`t_modes_admin/${id}`, { admin: 200, user: 403, guest: 401 }],
        ["t_modes_get", { admin: 200, user: 200, guest: 200 }],
        [`t_modes_get/${id}`, { admin: 200, user: 403, guest: 401 }],
      ];
      for (const [topic, statuses] of want) {
        for (const [who, token] of Object.entries(callers)) {
          const c = await openSse(s, topicsQuery([topic]), { token });
          c.close();
          const expected = statuses[who as keyof typeof callers];
          assertEquals(c.status, expected, `${topic} as ${who}`);
          // The same status as the records API (a GET of a missing record
          // it may read is a 404: compare the refusals only).
          const api = await s.request("GET", `/api/v1/entities/${topic}`, {
            token,
          });
          if (expected !== 200) {
            assertEquals(api.status, expected, `API ${topic} as ${who}`);
            assertEquals(c.body.error, api.error, `${topic}: same message`);
          }
        }
      }
    },
  );

  await t.step("the stream and its ready message", async () => {
    await makeEntity(s, { name: "t_ready", fields: title });
    const c = await openSse(
      s,
      "topics=t_ready,t_ready/abc,t_ready,%20t_ready/abc",
      { token: admin },
    );
    assertEquals(c.status, 200);
    assert(
      c.headers.get("content-type")!.startsWith("text/event-stream"),
      c.headers.get("content-type")!,
    );
    assert(c.headers.get("cache-control")!.includes("no-cache"));
    assertEquals(await c.next(), {
      event: "ready",
      data: { topics: ["t_ready", "t_ready/abc"] },
    });
    c.close();
    // Guests too, on public rules; the raw wire text.
    const raw = await rawStream(s, "topics=t_ready");
    assertEquals(raw.status, 200);
    const text = await raw.waitFor("event: ready");
    raw.close();
    assert(
      text.includes('event: ready\ndata: {"topics":["t_ready"]}\n\n'),
      JSON.stringify(text),
    );
  });

  await t.step("create, update and delete messages, exactly", async () => {
    await makeEntity(s, {
      name: "t_fmt",
      fields: [...title, { name: "n", type: "int" }, {
        name: "meta",
        type: "json",
      }],
    });
    const raw = await rawStream(s, topicsQuery(["t_fmt"]), admin);
    const c = await subscribe(s, ["t_fmt"], { token: admin });
    const t0 = Date.now();
    const created = await write(s, "POST", "t_fmt", {
      title: "one",
      n: 1,
      meta: { a: [1, "x"] },
    });
    const updated = await write(s, "PATCH", `t_fmt/${created.id}`, {
      title: "two",
      n: 2,
    });
    const asStored = await stored(s, "t_fmt", created.id);
    await write(s, "DELETE", `t_fmt/${created.id}`);
    const msgs = await before(s, c);
    const t1 = Date.now();
    c.close();
    assertEquals(brief(msgs), [
      ["create", created.id],
      ["update", created.id],
      ["delete", created.id],
    ]);
    const records = [created, updated, asStored];
    let last = 0;
    msgs.forEach((m, i) => {
      assert(/^[1-9]\d*$/.test(m.id!), `id: ${m.id}`);
      assert(Number(m.id) > last, "ids increase");
      last = Number(m.id);
      assertEquals(Object.keys(m.data).sort(), [
        "action",
        "entity",
        "id",
        "record",
        "timestamp",
      ]);
      assertEquals(m.data.action, m.event);
      assertEquals(m.data.entity, "t_fmt");
      assertEquals(m.data.id, created.id);
      assertEquals(m.data.record, records[i], `${m.event}: the record`);
      assert(ISO.test(m.data.timestamp), m.data.timestamp);
      const at = Date.parse(m.data.timestamp);
      assert(at >= t0 - 5000 && at <= t1 + 5000, `timestamp ${at}`);
    });
    // The wire text: id, event and data lines, key order as documented.
    const text = await raw.waitFor(`id: ${msgs[2].id}\n`);
    raw.close();
    for (const m of msgs) {
      const json = JSON.stringify({
        action: m.event,
        entity: "t_fmt",
        id: created.id,
        record: m.data.record,
        timestamp: m.data.timestamp,
      });
      assert(
        text.includes(`\n\nid: ${m.id}\nevent: ${m.event}\ndata: ${json}\n\n`),
        `wire message ${m.event}: ${JSON.stringify(text).slice(0, 1500)}`,
      );
    }
  });

  await t.step("a record topic gets only that record's events", async () => {
    await makeEntity(s, { name: "t_rec", fields: title });
    const a = await write(s, "POST", "t_rec", { title: "a" });
    const b = await write(s, "POST", "t_rec", { title: "b" });
    await caughtUp(s);
    const one = await subscribe(s, [`t_rec/${a.id}`], { token: admin });
    const guest = await subscribe(s, [`t_rec/${a.id}`]);
    // Both topics of one record: one message per change.
    const both = await subscribe(s, ["t_rec", `t_rec/${a.id}`], {
      token: admin,
    });
    await write(s, "PATCH", `t_rec/${b.id}`, { title: "b2" });
    await write(s, "PATCH", `t_rec/${a.id}`, { title: "a2" });
    const c = await write(s, "POST", "t_rec", { title: "c" });
    await write(s, "DELETE", `t_rec/${b.id}`);
    await write(s, "DELETE", `t_rec/${a.id}`);
    for (const stream of [one, guest]) {
      const msgs = await before(s, stream);
      assertEquals(brief(msgs), [["update", a.id], ["delete", a.id]]);
      assertEquals(msgs[0].data.record.title, "a2");
    }
    assertEquals(brief(await before(s, both)), [
      ["update", b.id],
      ["update", a.id],
      ["create", c.id],
      ["delete", b.id],
      ["delete", a.id],
    ]);
    closeAll(one, guest, both);
  });

  await t.step(
    "an auth entity's events never carry the password",
    async () => {
      await makeEntity(s, {
        name: "t_members",
        type: "auth",
        fields: [{ name: "name", type: "string" }],
        rules: { ...OPEN },
      });
      const password = "plain-Secret-pass-42";
      const raw = await rawStream(s, topicsQuery(["t_members"]), admin);
      const c = await subscribe(s, ["t_members"], { token: admin });
      // Created by a guest through the entity's API (sign-up by create).
      const r = await s.request("POST", "/api/v1/entities/t_members", {
        body: { email: "m@example.com", password, name: "m" },
      });
      assertStatus(r, 201, "create a member");
      const id = r.data.id;
      await write(s, "PATCH", `t_members/${id}`, {
        name: "m2",
        password: password + "-new",
      });
      await write(s, "DELETE", `t_members/${id}`);
      const msgs = await before(s, c);
      c.close();
      assertEquals(brief(msgs), [
        ["create", id],
        ["update", id],
        ["delete", id],
      ]);
      assertEquals(msgs[0].data.record, r.data);
      for (const m of msgs) {
        assertEquals(m.data.record.password, undefined, m.event);
        assertEquals(m.data.record.email, "m@example.com");
      }
      assertEquals(msgs[1].data.record.name, "m2");
      const text = await raw.waitFor(`id: ${msgs[2].id}\n`);
      raw.close();
      for (const secret of [password, "scrypt$", '"password"']) {
        assert(!text.includes(secret), `the stream carries ${secret}`);
      }
      const rows = await s.app.storage.query(
        `SELECT "record", "previous" FROM "mb_events" WHERE "entity" = ?`,
        ["t_members"],
      );
      assertEquals(rows.length, 3);
      for (const row of rows) {
        const kept = `${row.record} ${row.previous}`;
        assert(!kept.includes("scrypt$"), "the event log keeps a hash");
        assert(!kept.includes('"password"'), "the event log keeps a password");
      }
    },
  );

  await t.step("?token= works like the header", async () => {
    await makeEntity(s, {
      name: "t_qtok",
      fields: [...title, { name: "owner", type: "string" }],
      rules: {
        ...OPEN,
        list: { mode: "custom", expr: "record.owner == auth.id" },
      },
    });
    assertEquals(
      (await refusal(s, topicsQuery(["t_modes_auth"]))).status,
      401,
    );
    const byQuery = await subscribe(s, ["t_qtok"], {
      query: `token=${encodeURIComponent(user.token)}`,
    });
    const byHeader = await subscribe(s, ["t_qtok"], { token: user.token });
    const auth = await openSse(
      s,
      `${topicsQuery(["t_modes_auth"])}&token=${user.token}`,
    );
    assertEquals(auth.status, 200, "auth mode with ?token=");
    auth.close();
    const mine = await write(s, "POST", "t_qtok", {
      title: "mine",
      owner: user.id,
    });
    await write(s, "POST", "t_qtok", { title: "other", owner: "someone" });
    assertEquals(brief(await before(s, byQuery)), [["create", mine.id]]);
    assertEquals(brief(await before(s, byHeader)), [["create", mine.id]]);
    closeAll(byQuery, byHeader);
    // A bad token is a 401 either way (never a guest), public rules too.
    for (
      const o of [
        { query: "&token=nope", headers: {} as Record<string, string> },
        { query: "", headers: { authorization: "Bearer nope" } },
        { query: `&token=${user.token}x`, headers: {} },
      ]
    ) {
      const r = await refusal(s, `${topicsQuery([MARKS])}${o.query}`, {
        headers: o.headers,
      });
      assertEquals(r.status, 401, JSON.stringify(o));
    }
  });

  await t.step("file-scoped tokens are refused", async () => {
    const r = await s.request("POST", "/api/v1/files/token", {
      token: user.token,
    });
    assertStatus(r, 200, "file token");
    const ft = r.data.token as string;
    assert(typeof ft === "string" && ft.length > 20, "a file token");
    for (const topics of [[MARKS], ["t_modes_auth"]]) {
      const h = await refusal(s, topicsQuery(topics), { token: ft });
      assertEquals(h.status, 401, `header: ${topics}`);
      const q = await refusal(s, `${topicsQuery(topics)}&token=${ft}`);
      assertEquals(q.status, 401, `query: ${topics}`);
    }
    // The admin's file token too.
    const a = await s.request("POST", "/api/v1/files/token", { token: admin });
    assertStatus(a, 200, "admin file token");
    const ar = await refusal(s, topicsQuery([MARKS]), { token: a.data.token });
    assertEquals(ar.status, 401);
  });
}

forEachDb("realtime SSE: topics, messages, tokens", async (t, db) => {
  const s = await startServer(db, { realtimeHeartbeat: 1 });
  try {
    await setupMarks(s);
    const keeper = await keepFeedRunning(s);
    await cases(t, s);
    keeper.close();
    await t.step(
      "a stream opened after every stream closed still gets events",
      async () => {
        // FAILS ON SQLITE (bug in lib/realtime/feed.ts `start`, see
        // keepFeedRunning in _realtime_cases.ts): once the instance's last
        // stream closed, the feed never runs again.
        await poll(
          "every stream to close",
          () => s.app.realtime!.hub.subscribers.size === 0,
          { deadline: 15_000 },
        );
        await makeEntity(s, { name: "t_again", fields: title });
        const c = await subscribe(s, ["t_again"]);
        const r = await write(s, "POST", "t_again", { title: "x" });
        const m = await c.next(3000);
        c.close();
        assertEquals(
          m?.event,
          "create",
          "no event after a restart of the feed",
        );
        assertEquals(m?.data.id, r.id);
      },
    );
  } finally {
    await s.close();
  }
  await t.step("realtime: false answers 404 and logs nothing", async () => {
    const off = await startServer(db, { realtime: false });
    try {
      assertEquals(off.app.realtime, undefined);
      await makeEntity(off, { name: "t_off", fields: title });
      const admin = await off.adminToken();
      for (const path of ["/api/v1/realtime", "/api/v1/realtime/ws"]) {
        const r = await off.request("GET", `${path}?topics=t_off`, {
          token: admin,
        });
        assertStatus(r, 404, path);
        assert(r.error.includes("realtime is off"), r.error);
      }
      const c = await openSse(off, "topics=t_off");
      assertEquals(c.status, 404);
      const w = await write(off, "POST", "t_off", { title: "x" });
      assert(w.id, "writes still work");
      const rows = await off.app.storage.query(
        `SELECT COUNT(*) AS "n" FROM "mb_events"`,
      ).catch(() => [{ n: 0 }]);
      assertEquals(Number(rows[0].n), 0, "no event is journaled");
    } finally {
      await off.close();
    }
  });
});
