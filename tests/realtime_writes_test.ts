/**
 * Where realtime events come from, black box over SSE: the records API
 * (JSON and multipart), extension hooks writing through `app.entities`
 * (after-hooks, before-hooks, cron jobs), the library
 * (`app.schemas.get(x).create`), cascade deletes (a delete per child) and
 * `set null` relations (an update of the record that pointed there). A
 * write that fails or rolls back — a unique constraint, a before-hook that
 * wrote and then threw — leaves no event, not even for what it wrote first.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type TestServer,
} from "./_server.ts";
import { sendForm } from "./_files_fixtures.ts";
import { makeEntity, withScripts } from "./_extend_fixtures.ts";
import type { SseMessage } from "./_realtime_client.ts";
import {
  brief,
  caughtUp,
  closeAll,
  keepFeedRunning,
  setupMarks,
  stored,
  subscribe,
  upToMark,
  write,
} from "./_realtime_cases.ts";

const HOOKS = `
export default (app) => {
  const log = (t) => app.entities.get("w_log").create({ t });
  app.onRecord("afterCreate", "w_src", async (e) => {
    await log("after " + e.record.title);
  });
  app.onRecord("beforeCreate", "w_bad", async (e) => {
    await log("before create " + e.record.title);
    if (e.record.title === "reject") throw app.error(409, "Cannot create: refused");
    if (e.record.title === "crash") throw new Error("crashed after writing");
  });
  app.onRecord("beforeUpdate", "w_bad", async (e) => {
    await log("before update " + e.record.title);
    if (e.record.title === "reject") throw app.error(409, "Cannot update: refused");
  });
  app.onRecord("beforeDelete", "w_bad", async (e) => {
    await log("before delete " + e.record.title);
    if (e.record.title === "keep") throw app.error(409, "Cannot delete: kept");
  });
  app.onRecord("beforeCreate", "w_inner", async (e) => {
    await log("inner " + e.record.title);
    if (e.record.title === "reject") throw app.error(409, "Cannot create: inner refused");
  });
  app.onRecord("beforeCreate", "w_outer", async (e) => {
    try {
      await app.entities.get("w_inner").create({ title: "reject" });
    } catch { /* the hook goes on without it */ }
    await app.entities.get("w_inner").create({ title: "kept" });
  });
  app.cron("rt_tick", "* * * * * *", async () => {
    if (!globalThis.__rtCronWanted) return;
    globalThis.__rtCronWanted = false;
    await app.entities.get("w_cron").create({ t: "from cron" });
  });
};
`;

const text = (name: string) => ({ name, type: "string" });

/** `[event, entity, id]` of each message, sorted. */
function sorted(msgs: readonly SseMessage[]): string[][] {
  return msgs.map((m) => [m.event, m.data.entity, m.data.id]).sort();
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  const admin = await s.adminToken();
  await makeEntity(s, { name: "w_log", fields: [text("t")] });

  await t.step("records API (JSON): create, update, delete", async () => {
    await makeEntity(s, { name: "w_json", fields: [text("title")] });
    const c = await subscribe(s, ["w_json"], { token: admin });
    const a = await write(s, "POST", "w_json", { title: "a" });
    const u = await write(s, "PATCH", `w_json/${a.id}`, { title: "b" });
    await write(s, "DELETE", `w_json/${a.id}`);
    const [got] = await upToMark(s, [c]);
    assertEquals(brief(got), [
      ["create", a.id],
      ["update", a.id],
      ["delete", a.id],
    ]);
    assertEquals(got.map((m) => m.data.record), [a, u, u]);
    c.close();
  });

  await t.step("multipart writes (with a file)", async () => {
    await makeEntity(s, {
      name: "w_form",
      fields: [text("title"), { name: "doc", type: "file" }],
    });
    const c = await subscribe(s, ["w_form"], { token: admin });
    const r = await sendForm(s, "POST", "/api/v1/entities/w_form", [
      { name: "title", value: "form" },
      { name: "doc", filename: "a.txt", data: "hello", type: "text/plain" },
    ], { token: admin });
    assertStatus(r, 201, "multipart create");
    const id = r.data.id;
    const u = await sendForm(s, "PATCH", `/api/v1/entities/w_form/${id}`, [
      { name: "title", value: "form 2" },
      { name: "doc", filename: "b.txt", data: "again", type: "text/plain" },
    ], { token: admin });
    assertStatus(u, 200, "multipart update");
    assert(u.data.doc && u.data.doc !== r.data.doc, "a new file name");
    await write(s, "DELETE", `w_form/${id}`);
    const [got] = await upToMark(s, [c]);
    assertEquals(brief(got), [["create", id], ["update", id], ["delete", id]]);
    assertEquals(got.map((m) => m.data.record), [r.data, u.data, u.data]);
    c.close();
  });

  await t.step("extension hooks writing through app.entities", async () => {
    await makeEntity(s, { name: "w_src", fields: [text("title")] });
    await makeEntity(s, { name: "w_bad", fields: [text("title")] });
    const c = await subscribe(s, ["w_src", "w_bad", "w_log"], {
      token: admin,
    });
    const src = await write(s, "POST", "w_src", { title: "one" });
    let [got] = await upToMark(s, [c]);
    assertEquals(got.map((m) => [m.event, m.data.entity]), [
      ["create", "w_src"],
      ["create", "w_log"],
    ]);
    assertEquals(got[0].data.record, src);
    assertEquals(got[1].data.record.t, "after one");
    assertEquals(
      got[1].data.record,
      await stored(s, "w_log", got[1].data.id),
    );
    // A before-hook's write commits with the record.
    const ok = await write(s, "POST", "w_bad", { title: "fine" });
    const upd = await write(s, "PATCH", `w_bad/${ok.id}`, { title: "fine 2" });
    [got] = await upToMark(s, [c]);
    assertEquals(got.map((m) => [m.event, m.data.entity, m.data.record.t]), [
      ["create", "w_log", "before create fine"],
      ["create", "w_bad", undefined],
      ["create", "w_log", "before update fine 2"],
      ["update", "w_bad", undefined],
    ]);
    assertEquals(got[1].data.record, ok);
    assertEquals(got[3].data.record, upd);
    c.close();
  });

  await t.step(
    "a before-hook that wrote and then threw: no event for either write",
    async () => {
      const c = await subscribe(s, ["w_bad", "w_log"], { token: admin });
      const kept = await write(s, "POST", "w_bad", { title: "keep" });
      const [made] = await upToMark(s, [c]);
      assertEquals(made.length, 2, "the setup's two creates");
      const before = await s.request("GET", "/api/v1/entities/w_log", {
        token: admin,
      });
      const tries: [string, string, unknown, number][] = [
        ["POST", "w_bad", { title: "reject" }, 409],
        ["POST", "w_bad", { title: "crash" }, 500],
        ["PATCH", `w_bad/${kept.id}`, { title: "reject" }, 409],
        ["DELETE", `w_bad/${kept.id}`, undefined, 409],
      ];
      for (const [method, path, body, status] of tries) {
        const r = await s.request(method, `/api/v1/entities/${path}`, {
          token: admin,
          body,
        });
        assertStatus(r, status, `${method} ${path}`);
      }
      const [got] = await upToMark(s, [c]);
      assertEquals(got, [], "no event of a rolled-back write");
      const after = await s.request("GET", "/api/v1/entities/w_log", {
        token: admin,
      });
      assertEquals(after.data.items.length, before.data.items.length);
      assertEquals((await stored(s, "w_bad", kept.id)).title, "keep");
      c.close();
    },
  );

  await t.step(
    "a nested write a hook caught and undid: no event; the rest: events",
    async () => {
      await makeEntity(s, { name: "w_inner", fields: [text("title")] });
      await makeEntity(s, { name: "w_outer", fields: [text("title")] });
      const c = await subscribe(s, ["w_inner", "w_outer", "w_log"], {
        token: admin,
      });
      const outer = await write(s, "POST", "w_outer", { title: "outer" });
      const [got] = await upToMark(s, [c]);
      assertEquals(
        got.map((m) => [
          m.event,
          m.data.entity,
          m.data.record.t ?? m.data.record.title,
        ]),
        [
          ["create", "w_log", "inner kept"],
          ["create", "w_inner", "kept"],
          ["create", "w_outer", "outer"],
        ],
      );
      assertEquals(got[2].data.record, outer);
      for (const m of got) {
        assertEquals(
          m.data.record,
          await stored(s, m.data.entity, m.data.id),
          "every event is of a stored record",
        );
      }
      c.close();
    },
  );

  await t.step("a cron job's writes", async () => {
    await makeEntity(s, { name: "w_cron", fields: [text("t")] });
    const c = await subscribe(s, ["w_cron"], { token: admin });
    (globalThis as { __rtCronWanted?: boolean }).__rtCronWanted = true;
    const m = await c.next(4000);
    assert(m, "no event of the cron job's write");
    assertEquals([m.event, m.data.entity, m.data.record.t], [
      "create",
      "w_cron",
      "from cron",
    ]);
    c.close();
  });

  await t.step("library writes (app.schemas.get(x))", async () => {
    await makeEntity(s, { name: "w_lib", fields: [text("title")] });
    const c = await subscribe(s, ["w_lib"], { token: admin });
    const lib = s.app.schemas.get("w_lib")!;
    const a = await lib.create({ title: "lib" });
    const u = await lib.update(String(a.id), { title: "lib 2" });
    const d = await lib.remove(String(a.id));
    const [got] = await upToMark(s, [c]);
    assertEquals(brief(got), [
      ["create", String(a.id)],
      ["update", String(a.id)],
      ["delete", String(a.id)],
    ]);
    assertEquals(got.map((m) => m.data.record), [a, u, d]);
    c.close();
  });

  await t.step(
    "cascade deletes: a delete per child; set null: an update",
    async () => {
      await makeEntity(s, { name: "w_parent", fields: [text("title")] });
      const rel = (name: string, entity: string, on_delete: string) => ({
        name,
        type: "relation",
        foreign_key: { entity, on_delete },
      });
      await makeEntity(s, {
        name: "w_kid",
        fields: [text("title"), rel("parent", "w_parent", "cascade")],
      });
      await makeEntity(s, {
        name: "w_gkid",
        fields: [text("title"), rel("kid", "w_kid", "cascade")],
      });
      await makeEntity(s, {
        name: "w_ref",
        fields: [text("title"), rel("parent", "w_parent", "set null")],
      });
      const p = await write(s, "POST", "w_parent", { title: "p" });
      const other = await write(s, "POST", "w_parent", { title: "other" });
      const k1 = await write(s, "POST", "w_kid", { parent: p.id });
      const k2 = await write(s, "POST", "w_kid", { parent: p.id });
      const k3 = await write(s, "POST", "w_kid", { parent: other.id });
      const g1 = await write(s, "POST", "w_gkid", { kid: k1.id });
      const ref = await write(s, "POST", "w_ref", { parent: p.id });
      const ref2 = await write(s, "POST", "w_ref", { parent: other.id });
      // Guests see the references to p only: the set null takes ref out.
      const rule = await s.request("PATCH", "/api/v1/schemas/w_ref", {
        token: admin,
        body: {
          rules: {
            list: { mode: "custom", expr: `record.parent == "${p.id}"` },
          },
        },
      });
      assertStatus(rule, 200, "w_ref rule");
      await caughtUp(s);
      const guest = await subscribe(s, ["w_ref"]);
      const c = await subscribe(s, ["w_parent", "w_kid", "w_gkid", "w_ref"], {
        token: admin,
      });
      const one = await subscribe(s, [`w_kid/${k2.id}`, `w_ref/${ref.id}`], {
        token: admin,
      });
      await write(s, "DELETE", `w_parent/${p.id}`);
      const [got, mine, g] = await upToMark(s, [c, one, guest]);
      assertEquals(
        sorted(got),
        [
          ["delete", "w_gkid", g1.id],
          ["delete", "w_kid", k1.id],
          ["delete", "w_kid", k2.id],
          ["delete", "w_parent", p.id],
          ["update", "w_ref", ref.id],
        ].sort(),
      );
      const by = (id: string) => got.find((m) => m.data.id === id)!;
      assertEquals(by(k1.id).data.record, k1, "a child as it was");
      assertEquals(by(g1.id).data.record, g1, "a grandchild as it was");
      assertEquals(by(p.id).data.record, p);
      const nulled = await stored(s, "w_ref", ref.id);
      assertEquals(nulled.parent, null);
      assertEquals(by(ref.id).data.record, nulled);
      assertEquals(sorted(mine), [
        ["delete", "w_kid", k2.id],
        ["update", "w_ref", ref.id],
      ]);
      assertEquals(brief(g), [["delete", ref.id]], "out of the guest's view");
      assertEquals(g[0].data.record, ref, "as the guest saw it");
      // The rest is untouched.
      assertEquals((await stored(s, "w_kid", k3.id)).parent, other.id);
      assertEquals((await stored(s, "w_ref", ref2.id)).parent, other.id);
      closeAll(c, one, guest);
    },
  );

  await t.step("a write a unique constraint refuses: no event", async () => {
    await makeEntity(s, {
      name: "w_uniq",
      fields: [{ name: "slug", type: "string", unique: true }],
    });
    const c = await subscribe(s, ["w_uniq"], { token: admin });
    const a = await write(s, "POST", "w_uniq", { slug: "a" });
    const b = await write(s, "POST", "w_uniq", { slug: "b" });
    const dup = await s.request("POST", "/api/v1/entities/w_uniq", {
      token: admin,
      body: { slug: "a" },
    });
    assertStatus(dup, 409, "a duplicate create");
    const clash = await s.request("PATCH", `/api/v1/entities/w_uniq/${b.id}`, {
      token: admin,
      body: { slug: "a" },
    });
    assertStatus(clash, 409, "a duplicate update");
    await s.app.schemas.get("w_uniq")!.create({ slug: "b" }).then(
      () => assert(false, "the library wrote a duplicate"),
      () => {},
    );
    const [got] = await upToMark(s, [c]);
    assertEquals(brief(got), [["create", a.id], ["create", b.id]]);
    c.close();
  });
}

forEachDb("realtime SSE: where events come from", async (t, db) => {
  await withScripts(db, { "hooks.js": HOOKS }, async (s) => {
    await setupMarks(s);
    const keeper = await keepFeedRunning(s);
    await cases(t, s);
    keeper.close();
  }, { realtimeHeartbeat: 1 });
});
