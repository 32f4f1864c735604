/**
 * Realtime and the access rules, black box over SSE: a subscriber gets the
 * events of exactly the records its `list` (entity topic) or `get` (record
 * topic) rule lets it read, judged per event with its own auth; an update
 * that takes a record out of its view arrives as a `delete` of the record
 * as it saw it (never the new data), one that brings a record into view as
 * an event; admins see everything; a rule change reaches open streams; a
 * rule reading `auth.user.<field>` follows a change of that field.
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
import type { SseClient } from "./_realtime_client.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import { poll } from "./_wait.ts";
import {
  ADMIN,
  AUTH,
  brief,
  caughtUp,
  closeAll,
  custom,
  keepFeedRunning,
  PUBLIC,
  rawStream,
  refusal,
  setupMarks,
  stored,
  subscribe,
  topicsQuery,
  upToMark,
  write,
} from "./_realtime_cases.ts";

const OWNER = custom("record.owner == auth.id");
const fields = [
  { name: "title", type: "string" },
  { name: "owner", type: "string" },
  { name: "secret", type: "string" },
];

type Who = { token?: string; id: string };

/** Ids of the records a caller's list of `entity` shows. */
async function listed(
  s: TestServer,
  entity: string,
  token?: string,
): Promise<string[]> {
  const r = await s.request("GET", `/api/v1/entities/${entity}`, {
    token,
  });
  assertStatus(r, 200, `list ${entity}`);
  return (r.data.items as { id: string }[]).map((x) => x.id).sort();
}

/** Sets a rule of an entity through the schemas API. */
async function setRule(
  s: TestServer,
  entity: string,
  rules: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("PATCH", `/api/v1/schemas/${entity}`, {
    token: await s.adminToken(),
    body: { rules },
  });
  assertStatus(r, 200, `rules of ${entity}`);
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  const admin = await s.adminToken();
  await makeEntity(s, {
    name: "people",
    type: "auth",
    fields: [{ name: "role", type: "string" }],
  });
  const alice = await userOf(s, "people", "alice@example.com");
  const bob = await userOf(s, "people", "bob@example.com");
  const guest: Who = { id: "" };
  const streams = async (entity: string, who: Who[]) => {
    const out: SseClient[] = [];
    for (const w of who) out.push(await subscribe(s, [entity], w));
    return out;
  };

  await t.step(
    "a custom rule: each subscriber gets exactly what its list shows",
    async () => {
      await makeEntity(s, {
        name: "r_own",
        fields,
        rules: { ...OPEN, list: OWNER, get: OWNER },
      });
      const who: (Who & { name: string })[] = [
        { ...alice, name: "alice" },
        { ...bob, name: "bob" },
        { ...guest, name: "guest" },
        { token: admin, id: "admin", name: "admin" },
      ];
      const cs = await streams("r_own", who);
      const made: Record<string, unknown> = {};
      for (const owner of [alice.id, bob.id, "", "someone-else", alice.id]) {
        const r = await write(s, "POST", "r_own", { title: "t", owner });
        made[r.id] = r.owner; // "" is stored as null
      }
      const got = await upToMark(s, cs);
      for (const [i, w] of who.entries()) {
        const seen = got[i].map((m) => {
          assertEquals(m.event, "create", w.name);
          assertEquals(m.data.record, {
            ...m.data.record,
            owner: made[m.data.id],
          });
          return m.data.id as string;
        }).sort();
        assertEquals(seen, await listed(s, "r_own", w.token), w.name);
      }
      const ids = Object.keys(made);
      assertEquals(got[0].length, 2, "alice: her two");
      assertEquals(brief(got[1]), [["create", ids[1]]], "bob: his one");
      assertEquals(got[3].length, 5, "admin: all");
      assert(
        !got[2].some((m) => [alice.id, bob.id].includes(m.data.record.owner)),
        "guest: only what its rule shows",
      );
      // Deletes follow the same rule.
      await write(s, "DELETE", `r_own/${ids[1]}`);
      const del = await upToMark(s, cs);
      assertEquals(del.map(brief), [
        [],
        [["delete", ids[1]]],
        [],
        [["delete", ids[1]]],
      ]);
      closeAll(...cs);
    },
  );

  await t.step(
    "out of view: a delete of the old record; into view: an event",
    async () => {
      await makeEntity(s, {
        name: "r_move",
        fields,
        rules: { ...OPEN, list: OWNER, get: OWNER },
      });
      const [ca, cb, cg, cadm] = await streams("r_move", [
        alice,
        bob,
        guest,
        { token: admin, id: "" },
      ]);
      const raw = await rawStream(s, topicsQuery(["r_move"]), alice.token);
      const old = await write(s, "POST", "r_move", {
        title: "old",
        owner: alice.id,
        secret: "s-old",
      });
      const moved = await write(s, "PATCH", `r_move/${old.id}`, {
        title: "NEW-TITLE-FOR-BOB",
        owner: bob.id,
        secret: "NEW-SECRET-FOR-BOB",
      });
      let [a, b, g, adm] = await upToMark(s, [ca, cb, cg, cadm]);
      assertEquals(brief(a), [["create", old.id], ["delete", old.id]]);
      assertEquals(a[1].data.action, "delete");
      assertEquals(a[1].data.record, old, "alice: the record as she saw it");
      assert(Number(a[1].id) > Number(a[0].id), "a new event id");
      assertEquals(b.length, 1, "bob: one event");
      assert(["update", "create"].includes(b[0].event), b[0].event);
      assertEquals(b[0].data.action, b[0].event);
      assertEquals(b[0].data.record, moved, "bob: the new record");
      assertEquals(b[0].id, a[1].id, "the same event");
      assertEquals(g, [], "guest: nothing");
      assertEquals(brief(adm), [["create", old.id], ["update", old.id]]);
      assertEquals(adm[1].data.record, moved, "admin: the new record");
      const text = await raw.waitFor(`id: ${a[1].id}\n`);
      for (const leak of ["NEW-TITLE-FOR-BOB", "NEW-SECRET-FOR-BOB", bob.id]) {
        assert(!text.includes(leak), `alice's stream carries ${leak}`);
      }

      // Bob's own update (outside alice's view), then back to alice.
      const bobs = await write(s, "PATCH", `r_move/${old.id}`, {
        title: "bob's",
      });
      const back = await write(s, "PATCH", `r_move/${old.id}`, {
        title: "back",
        owner: alice.id,
      });
      [a, b, g, adm] = await upToMark(s, [ca, cb, cg, cadm]);
      assertEquals(a.length, 1, "alice: the record back");
      assert(["update", "create"].includes(a[0].event), a[0].event);
      assertEquals(a[0].data.record, back);
      assertEquals(brief(b), [["update", old.id], ["delete", old.id]]);
      assertEquals(b[0].data.record, bobs);
      assertEquals(b[1].data.record, bobs, "bob: the record as he saw it");
      assertEquals(g, []);
      assertEquals(brief(adm), [["update", old.id], ["update", old.id]]);
      raw.close();
      closeAll(ca, cb, cg, cadm);
    },
  );

  await t.step("a record topic follows the get rule", async () => {
    await makeEntity(s, {
      name: "r_get",
      fields,
      rules: { ...OPEN, list: ADMIN, get: OWNER },
    });
    const hers = await write(s, "POST", "r_get", { owner: alice.id });
    const his = await write(s, "POST", "r_get", { owner: bob.id });
    await caughtUp(s);
    assertEquals(
      (await refusal(s, topicsQuery(["r_get"]), { token: alice.token }))
        .status,
      403,
    );
    const c = await subscribe(s, [`r_get/${hers.id}`, `r_get/${his.id}`], {
      token: alice.token,
    });
    await write(s, "PATCH", `r_get/${his.id}`, { title: "his" });
    const upd = await write(s, "PATCH", `r_get/${hers.id}`, { title: "hers" });
    await write(s, "DELETE", `r_get/${his.id}`);
    const [got] = await upToMark(s, [c]);
    assertEquals(brief(got), [["update", hers.id]]);
    assertEquals(got[0].data.record, upd);
    c.close();
  });

  await t.step("a rule change reaches open streams", async () => {
    await makeEntity(s, {
      name: "r_change",
      fields,
      rules: { ...OPEN, list: OWNER },
    });
    const cs = await streams("r_change", [alice, guest, {
      token: admin,
      id: "",
    }]);
    const step = async (rule: unknown, expected: string[]) => {
      if (rule) await setRule(s, "r_change", { list: rule });
      const r = await write(s, "POST", "r_change", { owner: bob.id });
      const got = await upToMark(s, cs);
      const who = ["alice", "guest", "admin"];
      const saw = who.filter((_, i) => got[i].length > 0);
      assertEquals(saw, expected, `after ${JSON.stringify(rule)}`);
      for (const g of got) {
        if (g.length) assertEquals(brief(g), [["create", r.id]]);
      }
    };
    await step(undefined, ["admin"]);
    await step(PUBLIC, ["alice", "guest", "admin"]);
    await step(AUTH, ["alice", "admin"]);
    await step(ADMIN, ["admin"]);
    await step(custom(`record.owner == "${bob.id}"`), [
      "alice",
      "guest",
      "admin",
    ]);
    await step(custom("auth.id != ''"), ["alice", "admin"]);
    await step(PUBLIC, ["alice", "guest", "admin"]);
    closeAll(...cs);
  });

  await t.step(
    "API turned off (has_api false): no more events, admins included",
    async () => {
      // FAILS for the admin stream (suspected bug): lib/realtime/hub.ts
      // `frameFor` lets admins see every event before asking `sees`, so the
      // exposure check RecordService.sees makes (isExposed: has_api) is
      // skipped for them; an admin's open stream keeps getting the records
      // of an entity the API no longer serves (its GET is a 404, a new
      // stream a 400).
      await makeEntity(s, { name: "r_api", fields, rules: { ...OPEN } });
      const cs = await streams("r_api", [alice, guest, {
        token: admin,
        id: "",
      }]);
      const before = await write(s, "POST", "r_api", { title: "on" });
      let got = await upToMark(s, cs);
      for (const g of got) assertEquals(brief(g), [["create", before.id]]);
      const r = await s.request("PATCH", "/api/v1/schemas/r_api", {
        token: admin,
        body: { has_api: false },
      });
      assertStatus(r, 200, "has_api off");
      const hidden = await s.app.schemas.get("r_api")!.create({ title: "off" });
      assertEquals(
        (await s.request("GET", `/api/v1/entities/r_api/${hidden.id}`, {
          token: admin,
        })).status,
        404,
        "the API no longer serves it",
      );
      assertEquals(
        (await refusal(s, topicsQuery(["r_api"]), { token: admin })).status,
        400,
        "nor opens a stream on it",
      );
      got = await upToMark(s, cs);
      assertEquals(got.map(brief), [[], [], []], "alice, guest, admin");
      closeAll(...cs);
    },
  );

  await t.step(
    "auth.user.<field> follows a change of the user",
    async () => {
      const carol = await userOf(s, "people", "carol@example.com");
      await write(s, "PATCH", `people/${carol.id}`, { role: "viewer" });
      await makeEntity(s, {
        name: "r_role",
        fields,
        rules: { ...OPEN, list: custom('auth.user.role == "editor"') },
      });
      const c = await subscribe(s, ["r_role"], carol);
      const seen = async () => {
        const r = await write(s, "POST", "r_role", { title: "d" });
        const [got] = await upToMark(s, [c]);
        assert(got.length <= 1, JSON.stringify(got));
        if (got.length) assertEquals(brief(got), [["create", r.id]]);
        return got.length === 1;
      };
      assertEquals(await seen(), false, "a viewer sees nothing");
      for (const [role, expected] of [["editor", true], ["viewer", false]]) {
        await write(s, "PATCH", `people/${carol.id}`, { role });
        assertEquals((await stored(s, "people", carol.id)).role, role);
        // The user is read again (every second); the deadline only turns
        // "never" into a failure.
        const followed = await poll(
          `role ${role} to apply`,
          async () => (await seen()) === expected,
          { deadline: 20_000, every: 100 },
        ).then(() => true, () => false);
        assert(
          followed,
          `role ${role}: the stream still judges by the old role`,
        );
        // Then it stays so.
        assertEquals(await seen(), expected, `role ${role}, again`);
      }
      c.close();
    },
  );
}

forEachDb("realtime SSE: per-subscriber rules", async (t, db) => {
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
