/**
 * Attacks on a create whose add rule is checked in its own INSERT
 * (lib/records/checked_insert.ts), on both databases:
 *
 * - the same creates against the same rules on an entity checked in the
 *   INSERT and on its twin with a no-op `beforeCreate` hook (still checked
 *   one step at a time, in JavaScript): the same answers, and one event per
 *   stored record;
 * - PostgreSQL: a related record changed while the create waits for its
 *   lock — the rule reads it as it is once locked, as the checks one step
 *   at a time read it, never as it was when the statement began.
 *
 * One server per database; the steps share its users and records.
 *
 * @module
 */

import postgres from "postgres";
import {
  assertEquals,
  assertStatus,
  forEachDb,
  type TestServer,
} from "./_server.ts";
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";
import { withScripts } from "./_extend_fixtures.ts";
import { pause } from "./_wait.ts";

/** `a_twin`: checked one step at a time (a hook runs before the create). */
const SCRIPT = `
export default function (app) {
  app.onRecord("beforeCreate", "a_twin", () => {});
}
`;

const relation = (name: string, entity: string, extra = {}) => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete: "set null" },
  ...extra,
});

async function setup(s: TestServer) {
  const admin = await s.adminToken();
  await createSchema(s, admin, { name: "a_users", type: "auth" });
  await createSchema(s, admin, {
    name: "a_rooms",
    type: "base",
    fields: [
      { name: "name", type: "string" },
      relation("owner", "a_users"),
      { name: "n", type: "int" },
    ],
  });
  const ann = await fastUser(s, "a_users", { email: "ann@x.io" });
  const bob = await fastUser(s, "a_users", { email: "bob@x.io" });
  const post = async (path: string, body: unknown, token = admin) => {
    const r = await s.request("POST", `/api/v1/entities/${path}`, {
      token,
      body,
    });
    assertStatus(r, 201, `create ${path}`);
    return String(r.data.id);
  };
  return {
    admin,
    post,
    annId: ann.id,
    bobId: bob.id,
    ann: await issue(s, "a_users", ann.id),
    bob: await issue(s, "a_users", bob.id),
  };
}

forEachDb("create rule in the INSERT: attacks", async (t, db) => {
  await withScripts(db, { "twin.js": SCRIPT }, async (s) => {
    const w = await setup(s);
    const count = async (sql: string, params: string[] = []) =>
      Number((await s.app.storage.query(sql, params))[0].n);

    if (db === "postgres") {
      await createSchema(s, w.admin, {
        name: "a_notes",
        type: "base",
        fields: [
          relation("room", "a_rooms"),
          { name: "text", type: "string" },
        ],
        rules: {
          add: { mode: "custom", expr: "record.room.owner == auth.id" },
        },
      });
      // The room's owner changes from `from` to `to` in a transaction the
      // create's lock waits for; ann's create is then judged by `to`.
      const cases: [string, "ann" | "bob", "ann" | "bob", number][] = [
        ["ann's room given to bob: refused", "ann", "bob", 403],
        ["bob's room given to ann: allowed", "bob", "ann", 201],
      ];
      for (const [name, from, to, expected] of cases) {
        await t.step(
          `a room's owner changed while the create waits — ${name}`,
          async () => {
            const ids = { ann: w.annId, bob: w.bobId };
            const room = await w.post("a_rooms", {
              name: "r",
              owner: ids[from],
            });
            const sql = postgres(s.connection!, {
              max: 2,
              onnotice: () => {},
            });
            const holder = await sql.reserve();
            try {
              await holder.unsafe("BEGIN");
              await holder.unsafe(
                `UPDATE "a_rooms" SET "owner" = $1 WHERE "id" = $2`,
                [ids[to], room],
              );
              const create = s.request("POST", "/api/v1/entities/a_notes", {
                token: w.ann,
                body: { room, text: name },
              });
              await waiting(sql, 1);
              await holder.unsafe("COMMIT");
              const c = await create;
              assertStatus(c, expected, name);
              const stored = await count(
                `SELECT COUNT(*) AS "n" FROM "a_notes" WHERE "room" = ?`,
                [room],
              );
              const events = await count(
                `SELECT COUNT(*) AS "n" FROM "mb_events" WHERE "entity" = 'a_notes' AND "record_id" = ?`,
                [String(c.data?.id ?? "")],
              );
              assertEquals(
                [stored, events],
                expected === 201 ? [1, 1] : [0, 0],
              );
            } finally {
              holder.release();
              await sql.end();
            }
          },
        );
      }
    }
  });
});

/**
 * Waits until `n` statements of this database wait for a lock, with a
 * deadline.
 */
async function waiting(sql: postgres.Sql, n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [{ c }] = await sql.unsafe(
      `SELECT COUNT(*)::int AS "c" FROM pg_stat_activity WHERE "datname" = current_database() AND "wait_event_type" = 'Lock'`,
    );
    if (c >= n) return;
    if (Date.now() > deadline) {
      throw new Error(`Cannot see ${n} waiting statements in time`);
    }
    await pause(20);
  }
}
