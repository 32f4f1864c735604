/**
 * A new password ends a user's other sessions wherever it is set: the
 * records API, the admins API, and `Entity.update` from a program embedding
 * Moonbase (the revocation lives in the auth entity's update, not in a route).
 * Every path that stores a new password (records PATCH, admins PATCH,
 * multipart, the library) ends the user's other sessions, a write that
 * fails or that the rule refuses ends none, and the session kept is the
 * caller's own token only.
 *
 * One server per database. The first part has a fixture of its own; in the
 * others each step creates its own entity (a fresh name) and users, so no
 * step depends on another, and the admins steps seed their own admins.
 * Users are seeded with a precomputed hash and their sessions issued
 * directly: scrypt runs for the password changes and checks under test.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { fastUser, USER_PW } from "./_auth_fixtures.ts";

/**
 * The users' first password: seeded with its precomputed hash (`fastUser`),
 * so only the changes and checks under test pay for scrypt.
 */
const PW = USER_PW;

const USERS = {
  name: "members",
  type: "auth",
  fields: [{ name: "nick", type: "string" }],
  rules: {
    list: { mode: "auth" },
    get: { mode: "auth" },
    add: { mode: "public" },
    update: { mode: "custom", expr: "auth.id == record.id" },
    delete: { mode: "" },
  },
};

async function fixture(s: TestServer) {
  const admin = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: USERS,
  });
  assert.equal(r.status, 201, r.text);
  const user = await fastUser(s, "members", { email: "m@example.com" });
  // Tokens issued directly: the login route has its own tests (and a rate limit).
  const entity = s.app.schemas.get("members")!;
  const login = () => s.app.sessions.issue(entity, user);
  const a = (await login()).token;
  const b = (await login()).token;
  const works = async (token: string) =>
    (await s.request("GET", `/api/v1/entities/members/${user.id}`, { token }))
      .status === 200;
  return { user, a, b, works };
}

async function libraryAndApi(t: Deno.TestContext, s: TestServer) {
  await t.step(
    "Entity.update from the library ends every session",
    async () => {
      const { user, a, b, works } = await fixture(s);
      assert.deepEqual([await works(a), await works(b)], [true, true]);
      const members = s.app.schemas.get("members")!;
      await members.update(user.id, { password: "second-password-2" });
      assert.deepEqual([await works(a), await works(b)], [false, false]);
      await s.app.schemas.remove("members");
    },
  );
  await t.step(
    "Entity.update keeps the session named in keepSession",
    async () => {
      const { user, a, b, works } = await fixture(s);
      const keep = (await s.app.sessions.resolve(`Bearer ${a}`)).session;
      assert.ok(keep);
      await s.app.schemas.get("members")!.update(user.id, {
        password: "second-password-2",
      }, { keepSession: keep });
      assert.deepEqual([await works(a), await works(b)], [true, false]);
      await s.app.schemas.remove("members");
    },
  );
  await t.step("a change of another field revokes nothing", async () => {
    const { user, a, works } = await fixture(s);
    await s.app.schemas.get("members")!.update(user.id, { nick: "m" });
    assert.equal(await works(a), true);
    await s.app.schemas.remove("members");
  });
  await t.step(
    "PATCH through the API keeps the caller's own session",
    async () => {
      const { user, a, b, works } = await fixture(s);
      const r = await s.request(
        "PATCH",
        `/api/v1/entities/members/${user.id}`,
        {
          token: a,
          body: {
            password: "second-password-2",
            oldPassword: PW,
          },
        },
      );
      assert.equal(r.status, 200, r.text);
      assert.deepEqual([await works(a), await works(b)], [true, false]);
      await s.app.schemas.remove("members");
    },
  );
}

const NEW_PW = "second-password-2";

let n = 0;

/**
 * An auth entity `update` rule `update`, with users `a` and `b` (two
 * tokens each) and an admin token; `works(token)` is true while the token
 * still reads a record.
 */
async function freshFixture(
  s: TestServer,
  update: Record<string, string>,
) {
  const admin = await s.adminToken();
  // Current-password checks count against the per-IP login limit: each
  // step starts with a fresh count.
  await s.app.storage.run(`DELETE FROM "mb_ratelimit"`);
  const name = `pw${++n}`;
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name,
      type: "auth",
      fields: [
        { name: "nick", type: "string" },
        { name: "age", type: "int" },
      ],
      rules: {
        list: { mode: "auth" },
        get: { mode: "auth" },
        add: { mode: "public" },
        update,
        delete: { mode: "" },
      },
    },
  });
  assert.equal(r.status, 201, r.text);
  const entity = s.app.schemas.get(name)!;
  const a = await fastUser(s, name, { email: `a@${name}.test` });
  const b = await fastUser(s, name, { email: `b@${name}.test` });
  // Tokens issued directly: the login route has its own rate limit.
  const issue = async (u: { id: string }) =>
    (await s.app.sessions.issue(entity, u)).token;
  const tokens = {
    a1: await issue(a),
    a2: await issue(a),
    b1: await issue(b),
    b2: await issue(b),
  };
  const works = async (token: string) =>
    (await s.request("GET", `/api/v1/entities/${name}/${a.id}`, { token }))
      .status === 200;
  const alive = async () => ({
    a1: await works(tokens.a1),
    a2: await works(tokens.a2),
    b1: await works(tokens.b1),
    b2: await works(tokens.b2),
  });
  const path = (u: { id: string }) => `/api/v1/entities/${name}/${u.id}`;
  return { admin, name, entity, a, b, tokens, works, alive, path };
}

const ALL = { a1: true, a2: true, b1: true, b2: true };
const OWN = { mode: "custom", expr: "auth.id == record.id" };

/** Logs in with the route (one attempt): true when `password` is `u`'s. */
async function logsIn(
  s: TestServer,
  entity: string,
  email: string,
  password: string,
): Promise<boolean> {
  const r = await s.request("POST", `/api/v1/auth/${entity}/login`, {
    body: { identity: email, password },
  });
  return r.status === 200;
}

async function everyPath(t: Deno.TestContext, s: TestServer) {
  await t.step(
    "user PATCH (JSON) keeps only the caller's token",
    async () => {
      const f = await freshFixture(s, OWN);
      const r = await s.request("PATCH", f.path(f.a), {
        token: f.tokens.a1,
        body: { password: NEW_PW, oldPassword: PW },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await f.alive(), { ...ALL, a2: false });
    },
  );

  await t.step(
    "user PATCH (multipart) ends the other sessions",
    async () => {
      const f = await freshFixture(s, OWN);
      const form = new FormData();
      form.append("password", NEW_PW);
      form.append("oldPassword", PW);
      const r = await s.request("PATCH", f.path(f.a), {
        token: f.tokens.a2,
        raw: form,
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await f.alive(), { ...ALL, a1: false });
    },
  );

  await t.step(
    "admin PATCH of a user ends every user session",
    async () => {
      const f = await freshFixture(s, OWN);
      const r = await s.request("PATCH", f.path(f.a), {
        token: f.admin,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await f.alive(), { ...ALL, a1: false, a2: false });
      // The admin's own token is another entity's: untouched.
      const me = await s.request("GET", "/api/v1/sys/admins", {
        token: f.admin,
      });
      assert.equal(me.status, 200, me.text);
    },
  );

  await t.step(
    "user A changing user B's password (rule allows) keeps none of B's",
    async () => {
      const f = await freshFixture(s, { mode: "auth", expr: "" });
      const r = await s.request("PATCH", f.path(f.b), {
        token: f.tokens.a1,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await f.alive(), { ...ALL, b1: false, b2: false });
    },
  );

  await t.step(
    "password with an invalid field: 400, nothing stored, no session ends",
    async () => {
      const f = await freshFixture(s, OWN);
      for (
        const body of [
          { password: NEW_PW, oldPassword: PW, age: "not a number" },
          { password: NEW_PW, oldPassword: PW, nosuch: 1 },
          { password: "x", oldPassword: PW },
          { password: NEW_PW, oldPassword: PW, email: `b@${f.name}.test` },
        ]
      ) {
        const r = await s.request("PATCH", f.path(f.a), {
          token: f.tokens.a1,
          body,
        });
        assert.ok(
          r.status === 400 || r.status === 409,
          `${JSON.stringify(body)}: ${r.status} ${r.text}`,
        );
      }
      assert.deepEqual(await f.alive(), ALL);
      assert.equal(await logsIn(s, f.name, `a@${f.name}.test`, PW), true);
    },
  );

  await t.step(
    "a write the rule refuses ends no session (before or after the change)",
    async () => {
      const f = await freshFixture(s, {
        mode: "custom",
        expr:
          "auth.id == record.id && record.nick != 'blocked' && req.body.nick != 'veto'",
      });
      // B may not touch A's record: 404, A keeps every session.
      let r = await s.request("PATCH", f.path(f.a), {
        token: f.tokens.b1,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 404, r.text);
      // A guest: the rule hides the record.
      r = await s.request("PATCH", f.path(f.a), {
        body: { password: NEW_PW },
      });
      assert.ok(r.status === 401 || r.status === 404, r.text);
      // A's own writes the rule refuses: by the request body (before the
      // write), and by the record after the change (checked inside the
      // write's transaction, which rolls back).
      for (const nick of ["veto", "blocked"]) {
        r = await s.request("PATCH", f.path(f.a), {
          token: f.tokens.a1,
          body: { password: NEW_PW, oldPassword: PW, nick },
        });
        assert.ok(
          r.status === 404 || r.status === 403,
          `${nick}: ${r.text}`,
        );
      }
      // A wrong current password.
      r = await s.request("PATCH", f.path(f.a), {
        token: f.tokens.a1,
        body: { password: NEW_PW, oldPassword: "wrong-password-9" },
      });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(await f.alive(), ALL);
      assert.equal(await logsIn(s, f.name, `a@${f.name}.test`, PW), true);
    },
  );

  await t.step(
    "a file token cannot PATCH, and is no session to keep",
    async () => {
      const f = await freshFixture(s, OWN);
      const ft = await s.request("POST", "/api/v1/files/token", {
        token: f.tokens.a1,
      });
      assert.equal(ft.status, 200, ft.text);
      const fileToken = ft.data.token as string;
      const r = await s.request("PATCH", f.path(f.a), {
        token: fileToken,
        body: { password: NEW_PW, oldPassword: PW },
      });
      assert.equal(r.status, 401, r.text);
      assert.deepEqual(await f.alive(), ALL);
      // Library: a file token's id named as the session to keep saves
      // only that file token, never an API session.
      const keep = (await s.app.sessions.resolve(`Bearer ${fileToken}`, "file"))
        .session;
      assert.ok(keep);
      await f.entity.update(f.a.id, { password: NEW_PW }, {
        keepSession: keep,
      });
      assert.deepEqual(await f.alive(), { ...ALL, a1: false, a2: false });
    },
  );

  await t.step(
    "library: another user's token as keepSession saves nothing",
    async () => {
      const f = await freshFixture(s, OWN);
      const bSession = (await s.app.sessions.resolve(`Bearer ${f.tokens.b1}`))
        .session;
      assert.ok(bSession);
      await f.entity.update(f.a.id, { password: NEW_PW }, {
        keepSession: bSession,
      });
      assert.deepEqual(await f.alive(), { ...ALL, a1: false, a2: false });
    },
  );

  await t.step(
    "library: a failing update (invalid, missing id) ends nothing",
    async () => {
      const f = await freshFixture(s, OWN);
      await assert.rejects(
        f.entity.update(f.a.id, { password: NEW_PW, age: "x" }),
        { code: "invalid" },
      );
      await assert.rejects(
        f.entity.update(f.a.id, {
          password: NEW_PW,
          email: `b@${f.name}.test`,
        }),
      );
      assert.equal(
        await f.entity.update("no-such-id", { password: NEW_PW }),
        undefined,
      );
      assert.deepEqual(await f.alive(), ALL);
    },
  );

  await t.step(
    "refresh of a session the change ended is refused; the kept one refreshes",
    async () => {
      const f = await freshFixture(s, OWN);
      const r = await s.request("PATCH", f.path(f.a), {
        token: f.tokens.a1,
        body: { password: NEW_PW, oldPassword: PW },
      });
      assert.equal(r.status, 200, r.text);
      const dead = await s.request(
        "POST",
        `/api/v1/auth/${f.name}/refresh`,
        {
          token: f.tokens.a2,
        },
      );
      assert.equal(dead.status, 401, dead.text);
      const kept = await s.request(
        "POST",
        `/api/v1/auth/${f.name}/refresh`,
        {
          token: f.tokens.a1,
        },
      );
      assert.equal(kept.status, 200, kept.text);
      assert.equal(await f.works(kept.data.token), true);
    },
  );
}

/** Seeds an admin and returns its id and two tokens. */
async function seedAdmin(s: TestServer, email: string) {
  const admins = s.app.schemas.get("mb_admins")!;
  const rec = await fastUser(s, "mb_admins", { email });
  const t1 = (await s.app.sessions.issue(admins, rec)).token;
  const t2 = (await s.app.sessions.issue(admins, rec)).token;
  return { id: rec.id, t1, t2 };
}

async function adminWorks(s: TestServer, token: string): Promise<boolean> {
  return (await s.request("GET", "/api/v1/sys/admins", { token })).status ===
    200;
}

async function adminChanges(t: Deno.TestContext, s: TestServer) {
  await s.adminToken();
  await t.step(
    "PATCH of another admin ends all of theirs, keeps the caller's",
    async () => {
      const me = await seedAdmin(s, "me1@example.com");
      const other = await seedAdmin(s, "other1@example.com");
      const r = await s.request("PATCH", `/api/v1/sys/admins/${other.id}`, {
        token: me.t1,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        [
          await adminWorks(s, me.t1),
          await adminWorks(s, me.t2),
          await adminWorks(s, other.t1),
          await adminWorks(s, other.t2),
        ],
        [true, true, false, false],
      );
    },
  );
  await t.step(
    "PATCH of self keeps the caller's token, ends the other",
    async () => {
      const me = await seedAdmin(s, "me2@example.com");
      const r = await s.request("PATCH", `/api/v1/sys/admins/${me.id}`, {
        token: me.t2,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        [await adminWorks(s, me.t1), await adminWorks(s, me.t2)],
        [false, true],
      );
    },
  );
  await t.step(
    "PATCH with an invalid field or of a missing admin ends nothing",
    async () => {
      const me = await seedAdmin(s, "me3@example.com");
      const other = await seedAdmin(s, "other3@example.com");
      for (
        const body of [
          { password: NEW_PW, nosuch: 1 },
          { password: "x" },
          { password: NEW_PW, email: "me3@example.com" },
        ]
      ) {
        const r = await s.request(
          "PATCH",
          `/api/v1/sys/admins/${other.id}`,
          { token: me.t1, body },
        );
        assert.ok(
          r.status === 400 || r.status === 409,
          `${JSON.stringify(body)}: ${r.text}`,
        );
      }
      const r = await s.request("PATCH", "/api/v1/sys/admins/nobody", {
        token: me.t1,
        body: { password: NEW_PW },
      });
      assert.equal(r.status, 404, r.text);
      assert.deepEqual(
        [await adminWorks(s, other.t1), await adminWorks(s, other.t2)],
        [true, true],
      );
    },
  );
}

forEachDb("passwords: a change ends the other sessions", async (t, db) => {
  // One server; each part has entities or admins of its own.
  const s = await startServer(db);
  try {
    await t.step(
      "a change ends the user's other sessions",
      (t) => libraryAndApi(t, s),
    );
    await t.step(
      "password changes end the other sessions on every path",
      (t) => everyPath(t, s),
    );
    await t.step(
      "admin password changes end the other sessions",
      (t) => adminChanges(t, s),
    );
  } finally {
    await s.close();
  }
});
