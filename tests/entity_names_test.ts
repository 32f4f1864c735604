/**
 * Issue 28 item 7, a decision: records and realtime tell an existing
 * admin-only entity (401 for a guest, 403 for a user) from a missing one
 * (404 on records, 400 "no entity" for a realtime topic). The admin-only
 * rule's statuses are fixed (docs/guide/rules.md), so entity
 * names are not secret on these routes (docs/operations/security.md says
 * so). The auth routes, where the specification asks it, answer 404 for
 * every entity they do not serve, so they reveal nothing. This file pins
 * the decision.
 *
 * Beside it, the one home of exposure decisions (which entities the records,
 * auth and file routes and token resolution accept) and the read-only views:
 * system entities, entities without an API, case-variant names and views
 * never answer as records or auth entities, whoever asks (one server and one
 * fixture per database: its rows are only read, or written where every write
 * is refused).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  forEachDb,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";
import { makeEntity } from "./_extend_fixtures.ts";
import { openSse } from "./_realtime_client.ts";

const ADMIN_ONLY = { mode: "", expr: "" };
const RULES = {
  list: ADMIN_ONLY,
  get: ADMIN_ONLY,
  add: ADMIN_ONLY,
  update: ADMIN_ONLY,
  delete: ADMIN_ONLY,
};

forEachDb(
  "entity names: admin-only is 401/403, missing is 404 (records) or 400 (realtime); auth routes hide both",
  async (t, db) => {
    const s = await startServer(db, { realtime: true });
    try {
      await makeEntity(s, { name: "ledger", fields: [], rules: RULES });
      await makeEntity(s, {
        name: "staff",
        type: "auth",
        fields: [],
        rules: RULES,
      });
      const user = await seedUser(
        s,
        "staff",
        { email: "u@example.com" },
        "password-123",
      );
      const { token } = await s.app.sessions.issue(
        s.app.schemas.get("staff")!,
        user,
      );
      const id = "01900000-0000-7000-8000-000000000001";
      const cases: { what: string; token?: string; ledger: number }[] = [
        { what: "a guest", ledger: 401 },
        { what: "a user", token, ledger: 403 },
      ];
      for (const c of cases) {
        await t.step(`records, ${c.what}`, async () => {
          for (const path of ["", `/${id}`]) {
            const known = await s.request(
              "GET",
              `/api/v1/entities/ledger${path}`,
              { token: c.token },
            );
            assert.equal(known.status, c.ledger, `ledger${path}`);
            const missing = await s.request(
              "GET",
              `/api/v1/entities/nosuch${path}`,
              { token: c.token },
            );
            assert.equal(missing.status, 404, `nosuch${path}`);
          }
        });
        await t.step(`realtime, ${c.what}`, async () => {
          const known = await openSse(s, "topics=ledger", { token: c.token });
          known.close();
          assert.equal(known.status, c.ledger, "ledger");
          const missing = await openSse(s, "topics=nosuch", {
            token: c.token,
          });
          missing.close();
          assert.equal(missing.status, 400, "nosuch: a topic naming no entity");
        });
      }
      await t.step("auth routes: 404 for both", async () => {
        for (const name of ["ledger", "nosuch"]) {
          const r = await s.request("POST", `/api/v1/auth/${name}/login`, {
            body: { identity: "u@example.com", password: "password-123" },
          });
          assert.equal(r.status, 404, name);
          assert.equal(r.body?.error, "Route Not Found");
        }
      });
    } finally {
      await s.close();
    }
  },
);

const PW = "member-password-1";
const OPEN = {
  list: { mode: "public" },
  get: { mode: "public" },
  add: { mode: "public" },
  update: { mode: "public" },
  delete: { mode: "public" },
};

async function post(s: TestServer, admin: string, body: unknown) {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  assert.equal(r.status, 201, r.text);
  return r.data as { id: string };
}

/**
 * `members` (auth, open), `closed` (auth, its API switched off after its
 * user got a token), `hidden` (base, no API), `notes` (base, open, with a
 * file field and a record) and the view `nview` over notes.
 */
async function fixture(s: TestServer) {
  const admin = await s.adminToken();
  await post(s, admin, {
    name: "members",
    type: "auth",
    fields: [],
    rules: OPEN,
  });
  await post(s, admin, {
    name: "closed",
    type: "auth",
    fields: [],
    rules: OPEN,
  });
  const hidden = await post(s, admin, {
    name: "hidden",
    type: "base",
    fields: [{ name: "title", type: "string" }],
    rules: OPEN,
    has_api: false,
  });
  await post(s, admin, {
    name: "notes",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "doc", type: "file" },
    ],
    rules: OPEN,
  });
  await post(s, admin, {
    name: "nview",
    type: "view",
    view_query: "SELECT id, title FROM notes",
    rules: OPEN,
  });
  const form = new FormData();
  form.append("title", "n1");
  form.append("doc", new Blob(["note-file"]), "a.txt");
  const note = await s.request("POST", "/api/v1/entities/notes", {
    raw: form,
  });
  assert.equal(note.status, 201, note.text);
  const m = await seedUser(s, "members", { email: "m@example.com" }, PW);
  const c = await seedUser(s, "closed", { email: "c@example.com" }, PW);
  const user = (await s.app.sessions.issue(s.app.schemas.get("members")!, m))
    .token;
  const closed = (await s.app.sessions.issue(s.app.schemas.get("closed")!, c))
    .token;
  const off = await s.request(
    "PATCH",
    `/api/v1/schemas/${s.app.schemas.get("closed")!.id}`,
    { token: admin, body: { has_api: false } },
  );
  assert.equal(off.status, 200, off.text);
  const adminId = (await s.app.sessions.resolve(`Bearer ${admin}`)).id;
  return {
    admin,
    user,
    closed,
    adminId,
    member: m,
    hiddenId: hidden.id,
    note: note.data as { id: string; doc: string },
  };
}

type Fx = Awaited<ReturnType<typeof fixture>>;
type Who = "guest" | "user" | "admin";
const tokenOf = (f: Fx, who: Who) =>
  who === "guest" ? undefined : who === "user" ? f.user : f.admin;

interface Row {
  name: string;
  method: string;
  path: (f: Fx) => string;
  body?: unknown;
  status: number;
}

/** Records routes of entities the API must not serve: 404 for everyone. */
const NOT_EXPOSED = ["mb_admins", "MB_ADMINS", "Mb_Admins", "mb_tables"]
  .concat(["hidden", "HIDDEN", "Members", "NOTES", "closed", "mb%5Fadmins"]);

const recordRows: Row[] = NOT_EXPOSED.flatMap((e) =>
  [
    { name: `list ${e}`, method: "GET", path: () => `/api/v1/entities/${e}` },
    {
      name: `get ${e}`,
      method: "GET",
      path: (f: Fx) => `/api/v1/entities/${e}/${f.adminId}`,
    },
    {
      name: `add ${e}`,
      method: "POST",
      path: () => `/api/v1/entities/${e}`,
      body: { email: "x@example.com", password: "pass-word-123" },
    },
    {
      name: `update ${e}`,
      method: "PATCH",
      path: (f: Fx) => `/api/v1/entities/${e}/${f.adminId}`,
      body: { password: "pass-word-123" },
    },
    {
      name: `delete ${e}`,
      method: "DELETE",
      path: (f: Fx) => `/api/v1/entities/${e}/${f.adminId}`,
    },
  ].map((r) => ({ ...r, status: 404 }))
);

/** Auth routes of entities that are not exposed auth entities. */
const AUTH_NOT = ["mb_admins", "MB_ADMINS", "Members", "MEMBERS", "closed"]
  .concat(["hidden", "notes", "nview", "NVIEW"]);
const authRows: Row[] = AUTH_NOT.flatMap((e) =>
  ["login", "refresh", "logout"].map((op) => ({
    name: `auth ${op} ${e}`,
    method: "POST",
    path: () => `/api/v1/auth/${e}/${op}`,
    body: op === "login"
      ? { identity: "m@example.com", password: PW }
      : undefined,
    status: 404,
  }))
).concat(
  AUTH_NOT.map((e) => ({
    name: `legacy login ${e}`,
    method: "POST",
    path: () => "/api/v1/auth/login",
    body: { entity: e, identity: "m@example.com", password: PW },
    status: 404,
  })),
);

const fileRows: Row[] = ["Notes", "NOTES", "hidden", "mb_admins", "nview"]
  .flatMap((e) =>
    ["/api/files", "/api/v1/files"].map((prefix) => ({
      name: `file ${prefix} ${e}`,
      method: "GET",
      path: (f: Fx) => `${prefix}/${e}/${f.note.doc}`,
      status: 404,
    }))
  );

forEachDb(
  "entities: which routes answer for system, hidden and view entities",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const f = await fixture(s);
      const limiter = () => s.app.storage.run(`DELETE FROM "mb_ratelimit"`);
      for (const who of ["guest", "user", "admin"] as const) {
        for (const row of [...recordRows, ...authRows, ...fileRows]) {
          await t.step(`${who}: ${row.name}`, async () => {
            if (row.name.includes("login")) await limiter();
            const r = await s.request(row.method, row.path(f), {
              token: tokenOf(f, who),
              body: row.body,
            });
            // A presented token is checked first on file routes of gated
            // entities; every answer here is the same 404 or, for the
            // refresh/logout of no entity, 404 before the token is read.
            assert.equal(r.status, row.status, `${r.status} ${r.text}`);
            assert.ok(!r.text.includes("scrypt$"), r.text);
            assert.ok(!r.text.includes("admin@example.com"), r.text);
          });
        }
      }

      await t.step(
        "a token of an auth entity with its API off is refused",
        async () => {
          const paths = [
            ["GET", "/api/v1/entities/notes"],
            ["POST", "/api/v1/files/token"],
            ["POST", "/api/v1/auth/refresh"],
            ["POST", "/api/v1/auth/logout"],
          ];
          for (const [method, path] of paths) {
            const r = await s.request(method, path, { token: f.closed });
            assert.equal(r.status, 401, `${method} ${path}: ${r.text}`);
          }
        },
      );

      await t.step("the admins' token is no auth entity's token", async () => {
        for (const op of ["refresh", "logout"]) {
          const r = await s.request("POST", `/api/v1/auth/${op}`, {
            token: f.admin,
          });
          assert.equal(r.status, 404, `${op}: ${r.text}`);
        }
        // A user's token on the admins' own routes.
        for (const op of ["refresh", "logout"]) {
          const r = await s.request("POST", `/api/v1/sys/admins/${op}`, {
            token: f.user,
          });
          assert.equal(r.status, 401, `${op}: ${r.text}`);
        }
        assert.equal(
          (await s.request("GET", "/api/v1/entities/notes", { token: f.admin }))
            .status,
          200,
        );
      });

      await t.step("view writes: 405 with Allow for everyone", async () => {
        const form = new FormData();
        form.append("title", "x");
        const writes: [string, string, unknown][] = [
          ["POST", "/api/v1/entities/nview", { title: "x" }],
          ["PATCH", `/api/v1/entities/nview/${f.note.id}`, { title: "x" }],
          ["DELETE", `/api/v1/entities/nview/${f.note.id}`, undefined],
          ["POST", "/api/v1/entities/nview", form],
        ];
        for (const who of ["guest", "user", "admin"] as const) {
          for (const [method, path, body] of writes) {
            const r = await s.request(method, path, {
              token: tokenOf(f, who),
              ...(body instanceof FormData ? { raw: body } : { body }),
            });
            assert.equal(r.status, 405, `${who} ${method} ${path}: ${r.text}`);
            assert.equal(r.headers.get("allow"), "GET, HEAD");
          }
        }
        const v = s.app.schemas.get("nview")!;
        await assert.rejects(v.create({ title: "x" }), {
          code: "method_not_allowed",
        });
        await assert.rejects(v.update(f.note.id, { title: "x" }), {
          code: "method_not_allowed",
        });
        await assert.rejects(v.remove(f.note.id), {
          code: "method_not_allowed",
        });
        const got = await s.request(
          "GET",
          `/api/v1/entities/notes/${f.note.id}`,
        );
        assert.equal(got.data.title, "n1");
      });

      await t.step(
        "schema input cannot make an entity a system one",
        async () => {
          const r = await s.request("POST", "/api/v1/schemas", {
            token: f.admin,
            body: {
              name: "sneaky",
              type: "auth",
              fields: [],
              rules: OPEN,
              is_system: true,
            },
          });
          assert.equal(r.status, 201, r.text);
          const p = await s.request("PATCH", `/api/v1/schemas/${r.data.id}`, {
            token: f.admin,
            body: { is_system: true },
          });
          assert.equal(p.status, 200, p.text);
          assert.equal(s.app.schemas.get("sneaky")!.isSystem, false);
          const u = await seedUser(s, "sneaky", { email: "s@example.com" }, PW);
          const tok =
            (await s.app.sessions.issue(s.app.schemas.get("sneaky")!, u))
              .token;
          const admins = await s.request("GET", "/api/v1/sys/admins", {
            token: tok,
          });
          assert.equal(admins.status, 403, admins.text);
        },
      );
    } finally {
      await s.close();
    }
  },
);
