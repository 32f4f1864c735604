/**
 * A create whose add rule reads through relations and compiles to SQL, so
 * the INSERT carries it (lib/records/checked_insert.ts; on PostgreSQL the
 * relation locks, the rule, the INSERT and the event are one statement):
 * allowed, it is stored with its event; refused by the rule, a 403 with
 * nothing stored and no event; a relation to a missing record, the 400 of
 * the relation check before the rule; and on PostgreSQL a room deleted
 * while the create is under way never leaves a message pointing at it.
 *
 * One server per database; the steps share its users and rooms.
 *
 * @module
 */

import postgres from "postgres";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";
import { uuidv7 } from "../lib/ids.ts";
import { lockWaiters } from "./_pg.ts";

const RULE =
  "record.owner == auth.id && record.room.c_members_via_room.some(m => m.user == auth.id)";
const relation = (name: string, entity: string, on_delete = "set null") => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete },
});

async function setup(s: TestServer) {
  const admin = await s.adminToken();
  await createSchema(s, admin, { name: "c_users", type: "auth" });
  await createSchema(s, admin, {
    name: "c_rooms",
    type: "base",
    fields: [{ name: "name", type: "string" }],
  });
  await createSchema(s, admin, {
    name: "c_members",
    type: "base",
    fields: [relation("user", "c_users"), relation("room", "c_rooms")],
  });
  await createSchema(s, admin, {
    name: "c_messages",
    type: "base",
    fields: [
      { ...relation("owner", "c_users"), default: "@auth" },
      relation("room", "c_rooms", "cascade"),
      { name: "text", type: "string" },
      { name: "tag", type: "string", unique: true },
    ],
    rules: { add: { mode: "custom", expr: RULE } },
  });
  const post = async (path: string, body: unknown, token = admin) => {
    const r = await s.request("POST", `/api/v1/entities/${path}`, {
      token,
      body,
    });
    assertStatus(r, 201, `create ${path}`);
    return String(r.data.id);
  };
  const ann = await fastUser(s, "c_users", { email: "ann@x.io" });
  const bob = await fastUser(s, "c_users", { email: "bob@x.io" });
  const room = await post("c_rooms", { name: "ann's" });
  await post("c_members", { user: ann.id, room });
  return {
    admin,
    post,
    room,
    annId: ann.id,
    bobId: bob.id,
    ann: await issue(s, "c_users", ann.id),
    bob: await issue(s, "c_users", bob.id),
  };
}

forEachDb("create checked by its rule in SQL", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await setup(s);
    const message = (token: string, body: Record<string, unknown>) =>
      s.request("POST", "/api/v1/entities/c_messages", { token, body });
    const count = async (sql: string, params: string[] = []) =>
      Number((await s.app.storage.query(sql, params))[0].n);
    const stored = () => count(`SELECT COUNT(*) AS "n" FROM "c_messages"`);
    const events = () =>
      count(
        `SELECT COUNT(*) AS "n" FROM "mb_events" WHERE "entity" = 'c_messages'`,
      );

    await t.step("a member's message: stored, its event appended", async () => {
      const r = await message(w.ann, { room: w.room, text: "hi" });
      assertStatus(r, 201);
      assertEquals(r.data.text, "hi");
      const got = await s.request(
        "GET",
        `/api/v1/entities/c_messages/${r.data.id}`,
        {
          token: w.admin,
        },
      );
      assertStatus(got, 200);
      assertEquals([got.data.room, got.data.text], [w.room, "hi"]);
      assertEquals(
        await count(
          `SELECT COUNT(*) AS "n" FROM "mb_events" WHERE "record_id" = ? AND "action" = 'create'`,
          [r.data.id],
        ),
        1,
      );
    });

    await t.step(
      "refused by the rule: 403, nothing stored, no event",
      async () => {
        const [n, e] = [await stored(), await events()];
        const cases: [string, Reply][] = [
          ["not a member", await message(w.bob, { room: w.room, text: "x" })],
          [
            "a member, another as the owner",
            await message(w.ann, { room: w.room, owner: w.bobId }),
          ],
        ];
        for (const [name, r] of cases) {
          assertStatus(r, 403, name);
          assertEquals(
            r.error,
            "Cannot add c_messages: the add rule refused it",
          );
          assertEquals(r.data, null, name);
        }
        assertEquals([await stored(), await events()], [n, e]);
      },
    );

    await t.step(
      "a missing room: the relation's 400, before the rule",
      async () => {
        const [n, e] = [await stored(), await events()];
        for (const token of [w.ann, w.bob]) {
          const r = await message(token, { room: uuidv7(), text: "x" });
          assertStatus(r, 400);
          assertEquals(
            r.error,
            "Cannot save record: relation to a missing record (room)",
          );
          assertEquals(r.data, {
            fields: {
              room: { code: "invalid_reference", message: "No such record" },
            },
          });
        }
        assertEquals([await stored(), await events()], [n, e]);
      },
    );

    if (db === "postgres") {
      await t.step(
        "a room deleted while a create waits: no message points at it",
        async () => {
          const room = await w.post("c_rooms", { name: "doomed" });
          await w.post("c_members", { user: w.annId, room });
          // An uncommitted row holding the tag: the create's INSERT waits
          // for it, after its checks, until it is rolled back.
          const sql = postgres(s.connection!, { max: 2, onnotice: () => {} });
          const holder = await sql.reserve();
          try {
            await holder.unsafe("BEGIN");
            await holder.unsafe(
              `INSERT INTO "c_messages" ("id", "created", "updated", "tag") VALUES ($1, 'x', 'x', 'race')`,
              [uuidv7()],
            );
            const create = message(w.ann, { room, text: "late", tag: "race" });
            await lockWaiters(sql, 1);
            const remove = s.request(
              "DELETE",
              `/api/v1/entities/c_rooms/${room}`,
              {
                token: w.admin,
              },
            );
            // The delete waits for the create (its room is locked) — or,
            // were it not locked, ends first.
            let removed = false;
            remove.then(() => removed = true, () => removed = true);
            await lockWaiters(sql, 2, () => removed);
            await holder.unsafe("ROLLBACK");
            const [c, d] = [await create, await remove];
            assertStatus(d, 204, "delete");
            assert(
              c.status === 201 || c.status === 400,
              `create: ${c.status} ${c.text}`,
            );
            assertEquals(
              await count(
                `SELECT COUNT(*) AS "n" FROM "c_messages" AS "m" WHERE "m"."room" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "c_rooms" AS "r" WHERE "r"."id" = "m"."room")`,
              ),
              0,
              "a message points at a deleted room",
            );
          } finally {
            holder.release();
            await sql.end();
          }
        },
      );
    }
  } finally {
    await s.close();
  }
});
