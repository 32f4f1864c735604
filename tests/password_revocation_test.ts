/**
 * A new password ends a user's other sessions wherever it is set: the
 * records API, the admins API, and `Entity.update` from a program embedding
 * Moonbase (the revocation lives in the auth entity's update, not in a route).
 */

import assert from "node:assert/strict";
import {
  forEachDb,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";

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
  const user = await seedUser(s, "members", {
    email: "m@example.com",
  }, "first-password-1");
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

forEachDb(
  "passwords: a change ends the user's other sessions",
  async (t, db) => {
    const s = await startServer(db);
    try {
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
                oldPassword: "first-password-1",
              },
            },
          );
          assert.equal(r.status, 200, r.text);
          assert.deepEqual([await works(a), await works(b)], [true, false]);
          await s.app.schemas.remove("members");
        },
      );
    } finally {
      await s.close();
    }
  },
);
