/**
 * Record hooks of extension scripts: the six events fire, in order, with
 * the entity, the record, the previous record and the caller, for every
 * kind of write (HTTP with a user's or an admin's token, the dashboard's
 * multipart calls, the library with and without `{ as }`); hooks of one
 * event run in registration order, scripts in name order; `"*"` matches
 * every entity, system entities included.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply } from "./_server.ts";
import { file, sendForm } from "./_files_fixtures.ts";
import {
  makeEntity,
  OPEN,
  type ScriptServer,
  userOf,
  withScripts,
} from "./_extend_fixtures.ts";

/** Records what every hook saw; `GET /api/test/seen` hands it over (and empties it). */
const SEEN = `
const seen = [];
const events = ["beforeCreate", "afterCreate", "beforeUpdate", "afterUpdate", "beforeDelete", "afterDelete"];
const pick = (r) => r ? { id: r.id, title: r.title, n: r.n } : null;
export default function (app) {
  for (const ev of events) {
    app.onRecord(ev, "things", (e) => {
      seen.push({
        tag: ev + ":a1",
        event: e.event,
        entity: e.entity,
        record: pick(e.record),
        previous: pick(e.previous),
        auth: { type: e.auth.type, id: e.auth.id, entity: e.auth.entity },
      });
    });
  }
  app.onRecord("beforeCreate", "things", () => { seen.push({ tag: "beforeCreate:a2" }); });
  app.route("GET", "/api/test/seen", () => seen.splice(0));
  globalThis.__mbSeenPush = (x) => seen.push(x);
}
`;

/** A second script: its hook runs after those of a_seen.js (name order). */
const LATER = `
export default (app) => {
  app.onRecord("beforeCreate", "things", () => globalThis.__mbSeenPush({ tag: "beforeCreate:b" }));
};
`;

interface Seen {
  tag: string;
  event?: string;
  entity?: string;
  record?: { id: string; title: string; n: number | null } | null;
  previous?: { id: string; title: string; n: number | null } | null;
  auth?: { type: string; id: string; entity: string };
}

/** One way of writing: create, update, delete; each returns the record id. */
interface Writer {
  name: string;
  /** The caller the hooks must see. */
  auth: (ids: Ids) => { type: string; id: string; entity: string };
  create(
    s: ScriptServer,
    ids: Ids,
    data: Record<string, unknown>,
  ): Promise<string>;
  update(
    s: ScriptServer,
    ids: Ids,
    id: string,
    data: Record<string, unknown>,
  ): Promise<void>;
  remove(s: ScriptServer, ids: Ids, id: string): Promise<void>;
}

interface Ids {
  user: {
    id: string;
    token: string;
    auth: import("../lib/caller.ts").AuthValue;
  };
  admin: { id: string; token: string };
}

function ok(r: Reply, status: number, what: string): Reply {
  assert.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
  return r;
}

/** Writes over HTTP with a token: JSON bodies. */
function http(
  name: string,
  who: "user" | "admin",
  auth: Writer["auth"],
): Writer {
  return {
    name,
    auth,
    async create(s, ids, data) {
      const r = await s.request("POST", "/api/v1/entities/things", {
        token: ids[who].token,
        body: data,
      });
      return ok(r, 201, `${name} create`).data.id;
    },
    async update(s, ids, id, data) {
      const r = await s.request("PATCH", `/api/v1/entities/things/${id}`, {
        token: ids[who].token,
        body: data,
      });
      ok(r, 200, `${name} update`);
    },
    async remove(s, ids, id) {
      const r = await s.request("DELETE", `/api/v1/entities/things/${id}`, {
        token: ids[who].token,
      });
      ok(r, 204, `${name} delete`);
    },
  };
}

/** The dashboard's calls: an admin token, multipart with `@jsonPayload` and a file. */
const dashboard: Writer = {
  name: "dashboard (admin, multipart @jsonPayload)",
  auth: (ids) => ({ type: "admin", id: ids.admin.id, entity: "mb_admins" }),
  async create(s, ids, data) {
    const fd = new FormData();
    fd.append("@jsonPayload", JSON.stringify(data));
    fd.append("att", file("bytes", "a.txt", "text/plain"));
    const r = await sendForm(s, "POST", "/api/v1/entities/things", fd, {
      token: ids.admin.token,
    });
    return ok(r, 201, "dashboard create").data.id;
  },
  async update(s, ids, id, data) {
    const fd = new FormData();
    fd.append("@jsonPayload", JSON.stringify(data));
    fd.append("att", file("other", "b.txt", "text/plain"));
    const r = await sendForm(s, "PATCH", `/api/v1/entities/things/${id}`, fd, {
      token: ids.admin.token,
    });
    ok(r, 200, "dashboard update");
  },
  remove: http("", "admin", () => ({ type: "", id: "", entity: "" })).remove,
};

/** The library: `app.entities.get(name)`'s Entity, without or with `{ as }`. */
function library(as: boolean): Writer {
  const opts = (ids: Ids) => as ? { as: ids.user.auth } : undefined;
  return {
    name: as ? "library { as: user }" : "library",
    auth: (ids) =>
      as
        ? { type: "user", id: ids.user.id, entity: "members" }
        : { type: "admin", id: "", entity: "" },
    async create(s, ids, data) {
      const things = s.app.schemas.get("things")!;
      return (await things.create(data, opts(ids))).id as string;
    },
    async update(s, ids, id, data) {
      const things = s.app.schemas.get("things")!;
      assert.ok(await things.update(id, data, opts(ids)));
    },
    async remove(s, ids, id) {
      const things = s.app.schemas.get("things")!;
      assert.ok(await things.remove(id, opts(ids)));
    },
  };
}

const WRITERS: Writer[] = [
  http(
    "HTTP, user token",
    "user",
    (ids) => ({ type: "user", id: ids.user.id, entity: "members" }),
  ),
  http(
    "HTTP, admin token",
    "admin",
    (ids) => ({ type: "admin", id: ids.admin.id, entity: "mb_admins" }),
  ),
  dashboard,
  library(false),
  library(true),
];

async function setUp(s: ScriptServer): Promise<Ids> {
  await makeEntity(s, {
    name: "members",
    type: "auth",
    rules: { get: { mode: "auth", expr: "" } },
  });
  await makeEntity(s, {
    name: "things",
    fields: [
      { name: "title", type: "string", required: true },
      { name: "n", type: "int" },
      { name: "att", type: "file" },
    ],
    rules: {
      ...OPEN,
      add: { mode: "auth", expr: "" },
      update: { mode: "auth", expr: "" },
      delete: { mode: "auth", expr: "" },
    },
  });
  const user = await userOf(s, "members", "ada@example.com");
  const token = await s.adminToken();
  const admin = await s.app.sessions.resolve(`Bearer ${token}`);
  return { user, admin: { id: admin.id, token } };
}

async function takeSeen(s: ScriptServer): Promise<Seen[]> {
  const r = await s.request("GET", "/api/test/seen");
  return ok(r, 200, "read what the hooks saw").data;
}

forEachDb(
  "hooks: six events, in order, for every kind of write",
  async (t, db) => {
    await withScripts(
      db,
      { "a_seen.js": SEEN, "b_later.ts": LATER },
      async (s) => {
        const ids = await setUp(s);
        for (const w of WRITERS) {
          await t.step(w.name, async () => {
            await takeSeen(s);
            const id = await w.create(s, ids, { title: "one", n: 1 });
            await w.update(s, ids, id, { title: "two" });
            await w.remove(s, ids, id);
            const seen = await takeSeen(s);
            assert.deepEqual(seen.map((x) => x.tag), [
              "beforeCreate:a1",
              "beforeCreate:a2",
              "beforeCreate:b",
              "afterCreate:a1",
              "beforeUpdate:a1",
              "afterUpdate:a1",
              "beforeDelete:a1",
              "afterDelete:a1",
            ], "events and hooks in order");
            const full = seen.filter((x) => x.event !== undefined);
            const one = { id, title: "one", n: 1 };
            const two = { id, title: "two", n: 1 };
            assert.deepEqual(
              full.map((x) => [x.event, x.entity, x.record, x.previous]),
              [
                ["beforeCreate", "things", one, null],
                ["afterCreate", "things", one, null],
                ["beforeUpdate", "things", two, one],
                ["afterUpdate", "things", two, one],
                ["beforeDelete", "things", two, two],
                ["afterDelete", "things", two, two],
              ],
              "e.event, e.entity, e.record, e.previous",
            );
            for (const x of full) {
              assert.deepEqual(x.auth, w.auth(ids), `e.auth of ${x.event}`);
            }
          });
        }
      },
    );
  },
);

/** Counts every event of every entity, by `"*"`. */
const STAR = `
const seen = [];
const events = ["beforeCreate", "afterCreate", "beforeUpdate", "afterUpdate", "beforeDelete", "afterDelete"];
export default (app) => {
  for (const ev of events) {
    app.onRecord(ev, "*", (e) => {
      seen.push({ event: ev, entity: e.entity, auth: e.auth.type + ":" + e.auth.entity, keys: Object.keys(e.record).sort() });
    });
  }
  app.route("GET", "/api/test/seen", () => seen.splice(0));
};
`;

forEachDb(
  'hooks: "*" matches every entity, system ones included',
  async (t, db) => {
    await withScripts(db, { "star.js": STAR }, async (s) => {
      const token = await s.adminToken();
      await makeEntity(s, {
        name: "members",
        type: "auth",
        rules: { add: { mode: "public", expr: "" } },
      });
      await makeEntity(s, {
        name: "notes",
        fields: [{ name: "t", type: "string" }],
      });
      await makeEntity(s, {
        name: "tags",
        fields: [{ name: "t", type: "string" }],
      });
      const seen = async () =>
        (await s.request("GET", "/api/test/seen")).data as {
          event: string;
          entity: string;
          auth: string;
          keys: string[];
        }[];
      await seen();

      await t.step("user entities: each write, each entity", async () => {
        const a = await s.request("POST", "/api/v1/entities/notes", {
          body: { t: "x" },
        });
        ok(a, 201, "notes");
        const b = await s.request("POST", "/api/v1/entities/tags", {
          body: { t: "y" },
        });
        ok(b, 201, "tags");
        ok(
          await s.request("DELETE", `/api/v1/entities/tags/${b.data.id}`),
          204,
          "delete tag",
        );
        assert.deepEqual((await seen()).map((x) => `${x.event} ${x.entity}`), [
          "beforeCreate notes",
          "afterCreate notes",
          "beforeCreate tags",
          "afterCreate tags",
          "beforeDelete tags",
          "afterDelete tags",
        ]);
      });

      await t.step(
        "a sign-up is a create of the auth entity, without the password",
        async () => {
          const r = await s.request("POST", "/api/v1/entities/members", {
            body: { email: "bob@example.com", password: "password-123" },
          });
          ok(r, 201, "sign-up");
          const got = await seen();
          assert.deepEqual(got.map((x) => `${x.event} ${x.entity} ${x.auth}`), [
            "beforeCreate members guest:",
            "afterCreate members guest:",
          ]);
          for (const x of got) {
            assert.ok(
              !x.keys.includes("password"),
              `no password in ${x.event}`,
            );
          }
        },
      );

      // What the code does: admins are records of the system entity
      // mb_admins, written through its Entity, so "*" sees them too.
      await t.step(
        "system writes: admins created through the API",
        async () => {
          const r = await s.request("POST", "/api/v1/sys/admins", {
            token,
            body: { email: "second@example.com", password: "password-123" },
          });
          ok(r, 201, "new admin");
          const got = await seen();
          assert.deepEqual(got.map((x) => `${x.event} ${x.entity}`), [
            "beforeCreate mb_admins",
            "afterCreate mb_admins",
          ]);
          for (const x of got) {
            assert.ok(
              !x.keys.includes("password"),
              `no password in ${x.event}`,
            );
          }
        },
      );

      await t.step("schema changes and logins write no records", async () => {
        ok(
          await s.request("POST", "/api/v1/schemas", {
            token,
            body: { name: "more", type: "base", fields: [] },
          }),
          201,
          "new entity",
        );
        ok(
          await s.request("POST", "/api/v1/auth/members/login", {
            body: { identity: "bob@example.com", password: "password-123" },
          }),
          200,
          "login",
        );
        assert.deepEqual(await seen(), []);
      });
    });
  },
);

// Found in review: POST and PATCH /api/v1/sys/admins wrote through the
// mb_admins Entity without `caller`, so hooks saw the program instead of the
// admin who made the request.
Deno.test({
  name: "hooks: an admin's writes to mb_admins carry the admin as e.auth",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () => adminCaller("sqlite"),
});

async function adminCaller(db: "sqlite" | "postgres"): Promise<void> {
  await withScripts(db, { "star.js": STAR }, async (s) => {
    const token = await s.adminToken();
    const r = await s.request("POST", "/api/v1/sys/admins", {
      token,
      body: { email: "third@example.com", password: "password-123" },
    });
    ok(r, 201, "new admin");
    const got = (await s.request("GET", "/api/test/seen")).data as {
      auth: string;
    }[];
    assert.deepEqual(got.map((x) => x.auth), [
      "admin:mb_admins",
      "admin:mb_admins",
    ]);
  });
}
