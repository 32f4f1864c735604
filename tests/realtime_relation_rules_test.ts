/**
 * Realtime under rules that read through relations, black box over SSE and
 * WebSocket on both databases: a subscriber admitted by
 * `record.project.owner == auth.id` gets the events of its projects' tasks
 * and no others (the same records its list shows); after a project changes
 * owner the events of its tasks stop, and come back with the change back;
 * a task moved out of view arrives as a `delete` of the task as it was; a
 * rule reading `auth.user.<relation>.<field>` decides per caller; events
 * keep their order (those decided after a read and those decided at once
 * interleaved, marks included).
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
import {
  connectWs,
  type WsClient,
  type WsMessage,
} from "./_realtime_client.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import {
  brief,
  closeAll,
  custom,
  keepFeedRunning,
  MARKS,
  setupMarks,
  subscribe,
  upToMark,
  write,
} from "./_realtime_cases.ts";

const OWNED = custom("record.project.owner == auth.id");

/** Ids of the records a caller's list of `entity` shows. */
async function listed(
  s: TestServer,
  entity: string,
  token: string,
): Promise<string[]> {
  const r = await s.request("GET", `/api/v1/entities/${entity}`, { token });
  assertStatus(r, 200, `list ${entity}`);
  return (r.data.items as { id: string }[]).map((x) => x.id).sort();
}

/** Events (marks left out) a WebSocket gets before the mark `tag`. */
async function wsUpTo(c: WsClient, tag: string): Promise<WsMessage[]> {
  const got: WsMessage[] = [];
  for (;;) {
    const m = await c.nextOf("event", 5000);
    assert(m, `no mark ${tag}; got ${JSON.stringify(got).slice(0, 800)}`);
    if (m.entity !== MARKS) got.push(m);
    else if (m.record?.tag === tag) return got;
  }
}

forEachDb("realtime: rules that read through relations", async (t, db) => {
  const s = await startServer(db, { webSocket: true, realtimeHeartbeat: 1 });
  try {
    await setupMarks(s);
    const keeper = await keepFeedRunning(s);
    await makeEntity(s, {
      name: "rr_teams",
      fields: [
        { name: "active", type: "bool" },
      ],
    });
    await makeEntity(s, {
      name: "rr_people",
      type: "auth",
      fields: [{
        name: "team",
        type: "relation",
        foreign_key: { entity: "rr_teams", on_delete: "set null" },
      }],
    });
    await makeEntity(s, {
      name: "rr_projects",
      fields: [{ name: "name", type: "string" }, {
        name: "owner",
        type: "relation",
        foreign_key: { entity: "rr_people", on_delete: "set null" },
      }],
    });
    await makeEntity(s, {
      name: "rr_tasks",
      fields: [{ name: "title", type: "string" }, {
        name: "project",
        type: "relation",
        foreign_key: { entity: "rr_projects", on_delete: "cascade" },
      }],
      rules: { ...OPEN, list: OWNED, get: OWNED },
    });
    const active = await write(s, "POST", "rr_teams", { active: true });
    const idle = await write(s, "POST", "rr_teams", { active: false });
    const alice = await userOf(s, "rr_people", "alice@example.com");
    const bob = await userOf(s, "rr_people", "bob@example.com");
    await write(s, "PATCH", `rr_people/${alice.id}`, { team: active.id });
    await write(s, "PATCH", `rr_people/${bob.id}`, { team: idle.id });
    const admin = await s.adminToken();
    const pa = await write(s, "POST", "rr_projects", {
      name: "A",
      owner: alice.id,
    });
    const pb = await write(s, "POST", "rr_projects", {
      name: "B",
      owner: bob.id,
    });
    const task = async (title: string, project: string | null) =>
      (await write(s, "POST", "rr_tasks", { title, project })).id;

    await t.step("SSE: each subscriber gets its projects' tasks", async () => {
      const who = [alice.token, bob.token, undefined, admin];
      const cs = [];
      for (const token of who) {
        cs.push(await subscribe(s, ["rr_tasks"], { token }));
      }
      const ids = [
        await task("a1", pa.id),
        await task("b1", pb.id),
        await task("a2", pa.id),
        await task("none", null),
      ];
      const [a, b, g, adm] = await upToMark(s, cs);
      assertEquals(brief(a), [["create", ids[0]], ["create", ids[2]]]);
      assertEquals(brief(b), [["create", ids[1]]]);
      assertEquals(g, [], "guest: nothing");
      assertEquals(brief(adm), ids.map((id) => ["create", id]));
      // The same records their lists show.
      const seen = (msgs: typeof a) => msgs.map((m) => m.data.id).sort();
      const lists = [
        await listed(s, "rr_tasks", alice.token),
        await listed(s, "rr_tasks", bob.token),
      ];
      assert(seen(a).every((id) => lists[0].includes(id)), "alice's list");
      assert(seen(b).every((id) => lists[1].includes(id)), "bob's list");

      // A task moved to bob's project: a delete of it as alice saw it.
      const before =
        (await s.request("GET", `/api/v1/entities/rr_tasks/${ids[2]}`, {
          token: alice.token,
        })).data;
      await write(s, "PATCH", `rr_tasks/${ids[2]}`, { project: pb.id });
      const [a2, b2] = await upToMark(s, cs.slice(0, 2));
      assertEquals(brief(a2), [["delete", ids[2]]]);
      assertEquals(a2[0].data.record, before, "the task as alice saw it");
      assertEquals(brief(b2), [["update", ids[2]]]);
      closeAll(...cs);
    });

    await t.step(
      "SSE: a project's new owner stops its events, and the reverse",
      async () => {
        const [ca, cb] = [
          await subscribe(s, ["rr_tasks"], { token: alice.token }),
          await subscribe(s, ["rr_tasks"], { token: bob.token }),
        ];
        const t1 = await task("before", pa.id);
        let [a, b] = await upToMark(s, [ca, cb]);
        assertEquals([brief(a), brief(b)], [[["create", t1]], []]);

        await write(s, "PATCH", `rr_projects/${pa.id}`, { owner: bob.id });
        const t2 = await task("moved", pa.id);
        await write(s, "PATCH", `rr_tasks/${t1}`, { title: "edited" });
        [a, b] = await upToMark(s, [ca, cb]);
        assertEquals(a, [], "alice: nothing once the project is bob's");
        assertEquals(brief(b), [["create", t2], ["update", t1]]);

        await write(s, "PATCH", `rr_projects/${pa.id}`, { owner: alice.id });
        const t3 = await task("back", pa.id);
        [a, b] = await upToMark(s, [ca, cb]);
        assertEquals([brief(a), brief(b)], [[["create", t3]], []]);
        closeAll(ca, cb);
      },
    );

    await t.step("SSE: order holds through a burst", async () => {
      const [ca, cadm] = [
        await subscribe(s, ["rr_tasks", "rr_people"], { token: alice.token }),
        await subscribe(s, ["rr_tasks"], { token: admin }),
      ];
      const mine: string[] = [];
      const all: string[] = [];
      for (let i = 0; i < 24; i++) {
        const id = await task(`burst ${i}`, i % 3 === 0 ? pb.id : pa.id);
        all.push(id);
        if (i % 3 !== 0) mine.push(id);
        // An event decided at once between those read first.
        if (i % 8 === 0) {
          await write(s, "PATCH", `rr_people/${alice.id}`, { team: active.id });
        }
      }
      const [a, adm] = await upToMark(s, [ca, cadm]);
      const tasks = a.filter((m) => m.data.entity === "rr_tasks");
      assertEquals(tasks.map((m) => m.data.id), mine);
      assertEquals(adm.map((m) => m.data.id), all);
      const order = a.map((m) => Number(m.id));
      assertEquals(order, [...order].sort((x, y) => x - y), "ids ascending");
      assertEquals(a.length, mine.length + 3, "the people's updates too");
      closeAll(ca, cadm);
    });

    await t.step("SSE: a rule reading auth.user's relations", async () => {
      await makeEntity(s, {
        name: "rr_notes",
        fields: [{ name: "text", type: "string" }],
        rules: { ...OPEN, list: custom("auth.user.team.active == true") },
      });
      const [ca, cb] = [
        await subscribe(s, ["rr_notes"], { token: alice.token }),
        await subscribe(s, ["rr_notes"], { token: bob.token }),
      ];
      const n1 = await write(s, "POST", "rr_notes", { text: "x" });
      let [a, b] = await upToMark(s, [ca, cb]);
      assertEquals([brief(a), brief(b)], [[["create", n1.id]], []]);
      // The team itself changes: the next note follows it.
      await write(s, "PATCH", `rr_teams/${active.id}`, { active: false });
      const n2 = await write(s, "POST", "rr_notes", { text: "y" });
      [a, b] = await upToMark(s, [ca, cb]);
      assertEquals([a, b], [[], []], `nobody after the team went idle`);
      await write(s, "PATCH", `rr_teams/${active.id}`, { active: true });
      const n3 = await write(s, "POST", "rr_notes", { text: "z" });
      [a, b] = await upToMark(s, [ca, cb]);
      assertEquals([brief(a), brief(b)], [[["create", n3.id]], []]);
      assert(n2.id !== n3.id);
      closeAll(ca, cb);
    });

    await t.step("WebSocket: the same decisions, in order", async () => {
      const socks: WsClient[] = [];
      try {
        for (const token of [alice.token, bob.token]) {
          const c = await connectWs(s, `token=${token}`);
          socks.push(c);
          c.send({ type: "subscribe", topics: ["rr_tasks", MARKS] });
          assertEquals((await c.next())?.type, "ready");
        }
        const ids: string[] = [];
        for (let i = 0; i < 6; i++) {
          ids.push(await task(`ws ${i}`, i % 2 === 0 ? pa.id : pb.id));
        }
        // The hub decides an event with relations as they are when it sends
        // it: these six are decided before the project changes hands (a hub
        // lagging under load would otherwise see the new owner for them).
        const before = crypto.randomUUID();
        await write(s, "POST", MARKS, { tag: before });
        const [a0, b0] = [
          await wsUpTo(socks[0], before),
          await wsUpTo(socks[1], before),
        ];
        await write(s, "PATCH", `rr_projects/${pb.id}`, { owner: alice.id });
        const last = await task("ws last", pb.id);
        const tag = crypto.randomUUID();
        await write(s, "POST", MARKS, { tag });
        const [a, b] = [
          [...a0, ...await wsUpTo(socks[0], tag)],
          [...b0, ...await wsUpTo(socks[1], tag)],
        ];
        assertEquals(a.map((m) => [m.action, m.id]), [
          ["create", ids[0]],
          ["create", ids[2]],
          ["create", ids[4]],
          ["create", last],
        ]);
        assertEquals(b.map((m) => [m.action, m.id]), [
          ["create", ids[1]],
          ["create", ids[3]],
          ["create", ids[5]],
        ]);
        const order = a.map((m) => Number(m.eventId));
        assertEquals(order, [...order].sort((x, y) => x - y));
      } finally {
        await write(s, "PATCH", `rr_projects/${pb.id}`, { owner: bob.id });
        closeAll(...socks);
      }
    });
    keeper.close();
  } finally {
    await s.close();
  }
});
