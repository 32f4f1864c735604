/**
 * Admins (docs/reference/admins.md): the `/api/v1/sys/admins` routes (admins only),
 * admin refresh and logout, password changes that revoke that admin's other
 * tokens, deleting admins (never the last one), and first-admin setup with
 * the setup token.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  adminProbe,
  claimsOf,
  fastUser,
  fixtureAdmin,
  issue,
  login,
  USER_PW,
  withAuthServer,
} from "./_auth_fixtures.ts";

const ADMIN_LOGIN = "/api/v1/sys/admins/login";

/** An admin inserted directly, with the password `USER_PW` (no scrypt). */
function seedAdmin(
  s: TestServer,
  email: string,
): Promise<Record<string, unknown> & { id: string }> {
  return fastUser(s, "mb_admins", { email });
}

/** The admins list, sorted by email. */
async function listAdmins(s: TestServer, admin: string): Promise<Reply> {
  const r = await s.request("GET", "/api/v1/sys/admins?sort=email", {
    token: admin,
  });
  assertStatus(r, 200);
  return r;
}

/** One admins route that guests and users may not call. */
interface GuardCase {
  name: string;
  method: string;
  path: (adminId: string) => string;
  body?: Record<string, unknown>;
}

const GUARD_CASES: GuardCase[] = [
  { name: "list", method: "GET", path: () => "/api/v1/sys/admins" },
  {
    name: "create",
    method: "POST",
    path: () => "/api/v1/sys/admins",
    body: { email: "x@example.com", password: "password-x1" },
  },
  { name: "get", method: "GET", path: (id) => `/api/v1/sys/admins/${id}` },
  {
    name: "patch the password",
    method: "PATCH",
    path: (id) => `/api/v1/sys/admins/${id}`,
    body: { password: "hijacked-pw1" },
  },
  {
    name: "delete",
    method: "DELETE",
    path: (id) => `/api/v1/sys/admins/${id}`,
  },
];

forEachDb(
  "auth admins: routes, accounts and sessions",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // Each step creates the admins it changes (distinct emails) and compares
      // the admins list with what it saw before, so the steps stand alone.
      const adminId = claimsOf(admin).sub;
      const ada = await fastUser(s, "users", { email: "ada@example.com" });

      for (const c of GUARD_CASES) {
        await t.step(`guest 401, user 403: ${c.name}`, async () => {
          const ut = await issue(s, "users", ada.id);
          const before = (await listAdmins(s, admin)).data.items;
          const path = c.path(adminId);
          let r = await s.request(c.method, path, { body: c.body });
          assertStatus(r, 401, `guest ${c.method} ${path}`);
          r = await s.request(c.method, path, { body: c.body, token: ut });
          assertStatus(r, 403, `user ${c.method} ${path}`);
          // Nothing changed.
          assertEquals((await listAdmins(s, admin)).data.items, before);
          if (c.method === "PATCH") {
            r = await login(s, ADMIN_LOGIN, {
              identity: "admin@example.com",
              password: s.adminPassword,
            });
            assertStatus(r, 200, "the admin logs in with the old password");
          }
        });
      }

      await t.step("create, list, get, patch admins", async () => {
        const before = (await listAdmins(s, admin)).data.items.map(
          (a: { email: string }) => a.email,
        );
        let r = await s.request("POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "Second@Example.com", password: "second-pass-1" },
        });
        assertStatus(r, 201);
        assertEquals(r.data.email, "second@example.com");
        assert(!("password" in r.data));
        assert(!r.text.includes("second-pass-1"));
        const second = r.data.id;
        r = await s.request("POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "SECOND@example.com", password: "second-pass-2" },
        });
        assertStatus(r, 409, "duplicate admin email");
        assert(
          !r.text.includes("second-pass-2") && !r.text.includes("scrypt$"),
        );
        r = await s.request("POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "bad-email", password: "second-pass-2" },
        });
        assertStatus(r, 400);
        assert(r.data.fields.email, r.text);
        r = await s.request("POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "third@example.com", password: "short" },
        });
        assertStatus(r, 400);
        assert(r.data.fields.password, r.text);
        r = await listAdmins(s, admin);
        assertEquals(
          r.data.items.map((a: { email: string }) => a.email),
          [...before, "second@example.com"].sort(),
        );
        assert(!r.text.includes("scrypt$") && !r.text.includes("password"));
        r = await s.request("GET", `/api/v1/sys/admins/${second}`, {
          token: admin,
        });
        assertStatus(r, 200);
        assertEquals(r.data.id, second);
        assertEquals(r.data.email, "second@example.com");
        r = await s.request("GET", `/api/v1/sys/admins/no-such-admin`, {
          token: admin,
        });
        assertStatus(r, 404);
        r = await s.request("PATCH", `/api/v1/sys/admins/${second}`, {
          token: admin,
          body: { email: "Deux@Example.com" },
        });
        assertStatus(r, 200);
        assertEquals(r.data.email, "deux@example.com");
        r = await s.request("PATCH", `/api/v1/sys/admins/no-such-admin`, {
          token: admin,
          body: { email: "x@example.com" },
        });
        assertStatus(r, 404);
        // The new admin logs in and is an admin.
        r = await login(s, ADMIN_LOGIN, {
          identity: "deux@example.com",
          password: "second-pass-1",
        });
        assertStatus(r, 200);
        assertStatus(await adminProbe(s, r.data.token), 200);
      });

      await t.step("admin refresh and logout", async () => {
        const { id } = await seedAdmin(s, "refresh@example.com");
        const a = await issue(s, "mb_admins", id);
        let r = await s.request("POST", "/api/v1/sys/admins/refresh", {
          token: a,
        });
        assertStatus(r, 200);
        assertEquals(r.data.user.id, id);
        assert(!("password" in r.data.user));
        const n = r.data.token;
        assert(claimsOf(n).jti !== claimsOf(a).jti);
        assert(claimsOf(n).exp >= claimsOf(a).exp);
        assertEquals(claimsOf(n).entity, "mb_admins");
        r = await adminProbe(s, a);
        assertStatus(r, 401, "old admin token after refresh");
        r = await adminProbe(s, n);
        assertStatus(r, 200, "new admin token");
        r = await s.request("POST", "/api/v1/sys/admins/logout", { token: n });
        assertStatus(r, 200);
        assertEquals(r.body, { status: 200, data: null, error: "" });
        r = await adminProbe(s, n);
        assertStatus(r, 401, "admin token after logout");
        r = await s.request("POST", "/api/v1/sys/admins/refresh", { token: n });
        assertStatus(r, 401, "refresh after logout");
        // Legacy refresh with an admin token (the entity comes from the
        // token): 404 Route Not Found, as docs/reference/auth.md says
        // (admins refresh at /api/v1/sys/admins/refresh), and no token.
        const b = await issue(s, "mb_admins", id);
        r = await s.request("POST", "/api/v1/auth/refresh", { token: b });
        assertStatus(r, 404, "legacy refresh with an admin token");
        assertEquals([r.error, r.data], ["Route Not Found", null]);
      });

      await t.step(
        "a password change revokes that admin's other tokens",
        async () => {
          const email = "pwchange@example.com";
          const { id } = await seedAdmin(s, email);
          const t1 = await issue(s, "mb_admins", id);
          const t2 = await issue(s, "mb_admins", id);
          // The admin changes their own password with t1: t1 stays, t2 goes.
          let r = await s.request("PATCH", `/api/v1/sys/admins/${id}`, {
            token: t1,
            body: { password: "second-pass-NEW" },
          });
          assertStatus(r, 200);
          assert(!("password" in r.data));
          r = await adminProbe(s, t1);
          assertStatus(r, 200, "the token used for the PATCH keeps working");
          r = await adminProbe(s, t2);
          assertStatus(r, 401, "the admin's other token is revoked");
          r = await adminProbe(s, admin);
          assertStatus(r, 200, "another admin's token is untouched");
          r = await login(s, ADMIN_LOGIN, {
            identity: email,
            password: USER_PW,
          });
          assertStatus(r, 401, "old password");
          const t3 = (await login(s, ADMIN_LOGIN, {
            identity: email,
            password: "second-pass-NEW",
          })).data.token;
          r = await adminProbe(s, t3);
          assertStatus(r, 200, "a token issued after the change works");
          // Another admin changes it: every token of that admin goes.
          r = await s.request("PATCH", `/api/v1/sys/admins/${id}`, {
            token: admin,
            body: { password: "second-pass-3rd" },
          });
          assertStatus(r, 200);
          for (const [name, tok] of [["t1", t1], ["t3", t3]]) {
            r = await adminProbe(s, tok);
            assertStatus(r, 401, `${name} after another admin's change`);
          }
          r = await adminProbe(s, admin);
          assertStatus(r, 200, "the changing admin keeps its token");
          // A PATCH without password revokes nothing.
          const t4 = await issue(s, "mb_admins", id);
          r = await s.request("PATCH", `/api/v1/sys/admins/${id}`, {
            token: admin,
            body: { verified: true },
          });
          assertStatus(r, 200);
          r = await adminProbe(s, t4);
          assertStatus(r, 200, "no password in PATCH: tokens stay");
          // A short password is refused.
          r = await s.request("PATCH", `/api/v1/sys/admins/${id}`, {
            token: admin,
            body: { password: "short" },
          });
          assertStatus(r, 400);
          assert(r.data.fields.password, r.text);
          r = await adminProbe(s, t4);
          assertStatus(r, 200, "a refused change revokes nothing");
        },
      );
    }),
);

forEachDb("auth admins: delete admins; the last one stays", async (_t, db) => {
  // Its own server: "the last admin" needs to know every admin there is.
  const s = await startServer(db);
  try {
    const admin = await fixtureAdmin(s);
    const adminId = claimsOf(admin).sub;
    const second = (await seedAdmin(s, "deux@example.com")).id;
    const t4 = await issue(s, "mb_admins", second);
    let r = await s.request("DELETE", `/api/v1/sys/admins/no-such-admin`, {
      token: admin,
    });
    assertStatus(r, 404);
    r = await s.request("DELETE", `/api/v1/sys/admins/${second}`, {
      token: admin,
    });
    assertStatus(r, 204);
    assertEquals(r.text, "");
    r = await adminProbe(s, t4);
    assertStatus(r, 401, "token of a deleted admin");
    r = await s.request("GET", `/api/v1/sys/admins/${second}`, {
      token: admin,
    });
    assertStatus(r, 404);
    r = await s.request("DELETE", `/api/v1/sys/admins/${adminId}`, {
      token: admin,
    });
    assertStatus(r, 409, "last admin");
    assert(r.error.length > 0);
    r = await s.request("GET", "/api/v1/sys/admins", { token: admin });
    assertEquals(r.data.items.map((a: { id: string }) => a.id), [adminId]);
    r = await adminProbe(s, admin);
    assertStatus(r, 200, "the last admin still works");
    // An admin may delete itself when it is not the last one.
    r = await s.request("POST", "/api/v1/sys/admins", {
      token: admin,
      body: { email: "third@example.com", password: "third-pass-1" },
    });
    assertStatus(r, 201);
    const third = r.data.id;
    const t3 = await issue(s, "mb_admins", third);
    r = await s.request("DELETE", `/api/v1/sys/admins/${third}`, {
      token: t3,
    });
    assertStatus(r, 204, "self-delete while another admin exists");
    r = await adminProbe(s, t3);
    assertStatus(r, 401);
  } finally {
    await s.close();
  }
});

const SETUP_ORDERS = [
  ["/api/v1/sys/admins/setup", "/api/v1/auth/setup/admin"],
  ["/api/v1/auth/setup/admin", "/api/v1/sys/admins/setup"],
];

forEachDb(
  "auth admins: first-admin setup with the setup token",
  async (t, db) => {
    for (const [first, other] of SETUP_ORDERS) {
      // Each row needs a server without any admin: a server of its own.
      await t.step(`${first} → 201, then 403 (also on ${other})`, async () => {
        const s = await startServer(db, { trustProxy: true });
        try {
          const setup = s.app.setupToken;
          assert(
            typeof setup === "string" && setup.length >= 16,
            "setup token",
          );
          const body = {
            email: "Root@Example.com",
            password: "root-password-1",
          };
          let r = await s.request("POST", first, { body });
          assertStatus(r, 401, "without the setup token");
          r = await s.request("POST", first, { body, token: "wrong-token" });
          assertStatus(r, 401, "with a wrong token");
          r = await s.request("POST", first, {
            token: setup,
            body: { email: "not-an-email", password: "root-password-1" },
          });
          assertStatus(r, 400, "invalid email");
          assert(r.data.fields.email, r.text);
          r = await s.request("POST", first, {
            token: setup,
            body: { email: "root@example.com", password: "short" },
          });
          assertStatus(r, 400, "short password");
          assert(r.data.fields.password, r.text);
          // Two setups at once (both forms): exactly one wins.
          const both = await Promise.all([
            s.request("POST", first, { token: setup, body }),
            s.request("POST", other, { token: setup, body }),
          ]);
          assertEquals(
            both.map((x) => x.status).sort(),
            [201, 403],
            "concurrent setups",
          );
          r = both[0].status === 201 ? both[0] : both[1];
          assertStatus(r, 201);
          assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
          assertEquals(r.data.user.email, "root@example.com");
          assert(!("password" in r.data.user));
          assertEquals(claimsOf(r.data.token).entity, "mb_admins");
          const tok = r.data.token;
          assertStatus(
            await adminProbe(s, tok),
            200,
            "the setup token is an admin token",
          );
          for (const path of [first, other]) {
            r = await s.request("POST", path, {
              token: setup,
              body: { email: "x@example.com", password: "x-password-1" },
            });
            assertStatus(r, 403, `${path} once an admin exists`);
            r = await s.request("POST", path, {
              token: tok,
              body: { email: "y@example.com", password: "y-password-1" },
            });
            assertStatus(r, 403, `${path} with an admin token`);
          }
          r = await s.request("GET", "/api/v1/sys/admins", { token: tok });
          assertEquals(
            r.data.items.map((a: { email: string }) => a.email),
            ["root@example.com"],
          );
          r = await login(s, ADMIN_LOGIN, {
            identity: "root@example.com",
            password: "root-password-1",
          });
          assertStatus(r, 200, "the set-up admin logs in");
        } finally {
          await s.close();
        }
      });
    }
  },
);
