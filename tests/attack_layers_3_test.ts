/**
 * Attacks on the dashboard's rule trial (now decided by the same `authorize`
 * as the API) and on NUL characters in values, filters, ids and identities
 * (SQLite now refuses them as PostgreSQL does): a clear 400, never a 500,
 * nothing half-written.
 *
 * One server and one fixture per database; the NUL rows write nothing (each
 * is refused) and the fixture's counts are checked after every row.
 */

import assert from "node:assert/strict";
import {
  forEachDb,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";

const PW = "member-password-1";
const rule = (mode: string, expr = "") => ({ mode, expr });
const OPEN = {
  list: rule("public"),
  get: rule("public"),
  add: rule("public"),
  update: rule("public"),
  delete: rule("public"),
};

async function post(s: TestServer, admin: string, body: unknown) {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  assert.equal(r.status, 201, r.text);
  return r.data as { id: string };
}

/** `members` (auth), `notes` (base, a file and a relation field), one note, one member. */
async function fixture(s: TestServer) {
  const admin = await s.adminToken();
  await post(s, admin, {
    name: "members",
    type: "auth",
    fields: [{ name: "nick", type: "string" }],
    rules: { ...OPEN, update: rule("custom", "auth.id == record.id") },
  });
  await post(s, admin, {
    name: "notes",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "meta", type: "json" },
      { name: "doc", type: "file" },
      {
        name: "owner",
        type: "relation",
        foreign_key: { entity: "members", on_delete: "set null" },
      },
    ],
    rules: OPEN,
  });
  const m = await seedUser(s, "members", { email: "m@example.com" }, PW);
  const user =
    (await s.app.sessions.issue(s.app.schemas.get("members")!, m)).token;
  const note = await s.request("POST", "/api/v1/entities/notes", {
    body: { title: "n1" },
  });
  assert.equal(note.status, 201, note.text);
  return { admin, user, member: m, note: note.data as { id: string } };
}

type Fx = Awaited<ReturnType<typeof fixture>>;

/** Files under the data directory's file store. */
async function storedFiles(s: TestServer): Promise<number> {
  let n = 0;
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`);
      else n++;
    }
  };
  await walk(`${s.dataDir}/files`).catch(() => {});
  return n;
}

interface NulRow {
  name: string;
  method: string;
  path: (f: Fx) => string;
  body?: (f: Fx) => unknown;
  form?: (f: Fx) => FormData;
  token?: (f: Fx) => string;
  /** Statuses accepted (never 500). */
  status: number[];
}

const NUL = "a\u0000b";
const q = encodeURIComponent;

const nulRows: NulRow[] = [
  {
    name: "create with a NUL in a string",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    body: () => ({ title: NUL }),
    status: [400],
  },
  {
    name: "update with a NUL in one field, a good other field",
    method: "PATCH",
    path: (f) => `/api/v1/entities/notes/${f.note.id}`,
    body: () => ({ title: NUL, meta: { ok: 1 } }),
    status: [400],
  },
  {
    name: "update with a NUL in a relation",
    method: "PATCH",
    path: (f) => `/api/v1/entities/notes/${f.note.id}`,
    body: () => ({ title: "changed", owner: NUL }),
    status: [400],
  },
  {
    name: "create with a NUL inside a JSON value",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    body: () => ({ title: "ok", meta: { k: NUL } }),
    status: [201, 400],
  },
  {
    name: "multipart create with a file and a NUL field",
    method: "POST",
    path: () => "/api/v1/entities/notes",
    form: () => {
      const form = new FormData();
      form.append("title", NUL);
      form.append("doc", new Blob(["x"]), "a.txt");
      return form;
    },
    status: [400],
  },
  {
    name: "filter with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes?filter=${q(`title = "${NUL}"`)}`,
    status: [400],
  },
  {
    name: "filter with a NUL in a like",
    method: "GET",
    path: () => `/api/v1/entities/notes?filter=${q(`title ~ "${NUL}"`)}`,
    status: [400],
  },
  {
    name: "sort with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes?sort=${q(NUL)}`,
    status: [400],
  },
  {
    name: "get by an id with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/notes/${q(NUL)}`,
    status: [400, 404],
  },
  {
    name: "delete by an id with a NUL",
    method: "DELETE",
    path: () => `/api/v1/entities/notes/${q(NUL)}`,
    status: [400, 404],
  },
  {
    name: "login with a NUL identity",
    method: "POST",
    path: () => "/api/v1/auth/members/login",
    body: () => ({ identity: `m${NUL}@example.com`, password: PW }),
    status: [400, 401],
  },
  {
    name: "login with a NUL id identity",
    method: "POST",
    path: () => "/api/v1/auth/members/login",
    body: () => ({ identity: NUL, password: PW }),
    status: [400, 401],
  },
  {
    name: "signup with a NUL email",
    method: "POST",
    path: () => "/api/v1/entities/members",
    body: () => ({ email: `n${NUL}@example.com`, password: PW }),
    status: [400],
  },
  {
    name: "own update: NUL nick with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.user,
    body: () => ({ nick: NUL, password: "new-password-2", oldPassword: PW }),
    status: [400],
  },
  {
    name: "admin update: NUL email with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.admin,
    body: () => ({ email: `x${NUL}@example.com`, password: "new-password-2" }),
    status: [400],
  },
  {
    name: "admin update: NUL nick with a new password",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.member.id}`,
    token: (f) => f.admin,
    body: () => ({ nick: NUL, password: "new-password-2" }),
    status: [400],
  },
  {
    name: "rule trial as a user id with a NUL",
    method: "POST",
    path: () => "/api/v1/sys/rules/test",
    token: (f) => f.admin,
    body: () => ({
      entity: "notes",
      op: "get",
      rule: rule("auth"),
      as: { entity: "members", id: NUL },
    }),
    status: [400, 404],
  },
  {
    name: "entity name with a NUL",
    method: "GET",
    path: () => `/api/v1/entities/${q("notes\u0000")}`,
    status: [404],
  },
];

forEachDb("attack: NUL characters in every input", async (t, db) => {
  const s = await startServer(db);
  try {
    const f = await fixture(s);
    const counts = async () => ({
      notes: await s.app.schemas.get("notes")!.countRecords(),
      members: await s.app.schemas.get("members")!.countRecords(),
      files: await storedFiles(s),
    });
    const before = await counts();
    const members = s.app.schemas.get("members")!;
    const hash = async () =>
      (await members.rowFromCols(f.member.id, ["id"]))?.password;
    const firstHash = await hash();
    for (const row of nulRows) {
      await t.step(row.name, async () => {
        await s.app.storage.run(`DELETE FROM "mb_ratelimit"`);
        const r = await s.request(row.method, row.path(f), {
          token: row.token?.(f),
          ...(row.form ? { raw: row.form(f) } : { body: row.body?.(f) }),
        });
        assert.ok(row.status.includes(r.status), `${r.status} ${r.text}`);
        if (r.status === 201) {
          // Stored as given (SQLite keeps JSON escapes); read back intact.
          assert.equal(r.data.meta.k, NUL);
          await s.app.schemas.get("notes")!.remove(r.data.id);
        }
        assert.deepEqual(await counts(), before);
        const note = await s.request(
          "GET",
          `/api/v1/entities/notes/${f.note.id}`,
        );
        assert.equal(note.data.title, "n1");
        assert.equal(note.data.owner, null);
        // Nothing revoked, nothing changed in the member.
        const me = await s.request("POST", "/api/v1/files/token", {
          token: f.user,
        });
        assert.equal(me.status, 200, me.text);
        assert.equal(await hash(), firstHash);
        const m = await members.read(f.member.id);
        assert.equal(m?.email, "m@example.com");
        assert.equal(m?.nick ?? null, null);
      });
    }
  } finally {
    await s.close();
  }
});

/** A rule trial as the dashboard sends it. */
async function trial(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
) {
  return await s.request("POST", "/api/v1/sys/rules/test", {
    token: admin,
    body,
  });
}

forEachDb("attack: the rule trial decides as the API", async (t, db) => {
  const s = await startServer(db);
  try {
    const f = await fixture(s);
    const adminId = (await s.app.sessions.resolve(`Bearer ${f.admin}`)).id;
    const asUser = { entity: "members", id: f.member.id };
    // Read-only steps on the fixture.
    await t.step(
      "system entity: denied as in the API, for guests and users",
      async () => {
        for (const [as, status] of [[null, 401], [asUser, 403]] as const) {
          const r = await trial(s, f.admin, {
            entity: "mb_admins",
            op: "get",
            rule: rule("public"),
            as,
          });
          assert.equal(r.status, 200, r.text);
          assert.ok(r.data.denied, r.text);
          for (const item of r.data.items) {
            assert.equal(item.allowed, false);
            assert.equal(item.status, status);
          }
          assert.ok(!r.text.includes("scrypt$"), r.text);
        }
        const api = await s.request(
          "GET",
          `/api/v1/entities/mb_admins/${adminId}`,
          {
            token: f.user,
          },
        );
        assert.equal(api.status, 404, api.text);
      },
    );
    await t.step("no trial as an admin, a case variant or a view", async () => {
      for (
        const as of [
          { entity: "mb_admins", id: adminId },
          { entity: "MB_ADMINS", id: adminId },
          { entity: "Members", id: f.member.id },
          { entity: "notes", id: f.note.id },
        ]
      ) {
        const r = await trial(s, f.admin, {
          entity: "notes",
          op: "get",
          rule: rule("public"),
          as,
        });
        assert.equal(r.status, 404, `${as.entity}: ${r.text}`);
      }
    });
    await t.step("guest and user decisions match the API's", async () => {
      const cases = [
        { rule: rule("auth"), as: null, api: 401 },
        { rule: rule("auth"), as: asUser, api: 200 },
        { rule: rule(""), as: asUser, api: 403 },
        { rule: rule(""), as: null, api: 401 },
        // Decided without the record: the API's 401 for a guest.
        { rule: rule("custom", "auth.id != ''"), as: null, api: 401 },
        { rule: rule("custom", "record.title == 'zz'"), as: null, api: 404 },
        { rule: rule("custom", "auth.id != ''"), as: asUser, api: 200 },
      ];
      for (const c of cases) {
        const r = await trial(s, f.admin, {
          entity: "notes",
          op: "get",
          rule: c.rule,
          as: c.as,
        });
        assert.equal(r.status, 200, r.text);
        const item = r.data.items.find((i: { id: string }) =>
          i.id === f.note.id
        );
        assert.equal(item.allowed, c.api === 200, JSON.stringify(c));
        if (c.api !== 200) assert.equal(item.status, c.api, JSON.stringify(c));
      }
    });
    await t.step("a view cannot be tried for a write", async () => {
      await post(s, f.admin, {
        name: "tview",
        type: "view",
        view_query: "SELECT id, title FROM notes",
        rules: OPEN,
      });
      for (const op of ["add", "update", "delete"]) {
        const r = await trial(s, f.admin, {
          entity: "tview",
          op,
          rule: rule("public"),
          as: null,
        });
        assert.equal(r.status, 400, `${op}: ${r.text}`);
      }
    });
  } finally {
    await s.close();
  }
});

forEachDb(
  "attack: the rule trial serves no refused view",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const f = await fixture(s);
      await post(s, f.admin, {
        name: "leaky",
        type: "view",
        view_query: "SELECT id, title FROM notes",
        rules: OPEN,
      });
      // The view changed behind Moonbase's back to read password hashes: the
      // API refuses to serve it (the registry marks it at load).
      await s.app.storage.exec(`DROP VIEW "leaky"`);
      await s.app.storage.exec(
        `CREATE VIEW "leaky" AS SELECT "id", "password" AS "title" FROM "members"`,
      );
      await s.app.schemas.load();
      await t.step("the API refuses the view", async () => {
        const r = await s.request("GET", "/api/v1/entities/leaky", {
          token: f.admin,
        });
        assert.equal(r.status, 503, r.text);
        assert.ok(!r.text.includes("scrypt$"), r.text);
      });
      await t.step({
        name: "the trial refuses it too, no hash in a label",
        // Found in review: runTrial listed the entity through the library,
        // without the view refusal the API applies, so a refused view's
        // rows came back as labels (password hashes). Both now ask
        // access.ts assertServed.
        fn: async () => {
          const r = await trial(s, f.admin, {
            entity: "leaky",
            op: "list",
            rule: rule("public"),
            as: null,
          });
          assert.ok(!r.text.includes("scrypt$"), r.text);
          assert.equal(r.status, 503, r.text);
        },
      });
    } finally {
      await s.close();
    }
  },
);
