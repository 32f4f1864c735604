/**
 * Records of auth entities (docs/guide/users-and-auth.md): sign-up
 * validation, lower-cased unique emails, the write-only password, password
 * and email changes through PATCH, and who may set `verified`.
 *
 * @module
 */

import { assert, assertEquals, assertStatus, forEachDb } from "./_server.ts";
import {
  fastUser,
  issue,
  login,
  nextIp,
  signup,
  USER_PW,
  userToken,
  withAuthServer,
} from "./_auth_fixtures.ts";

/** One refused sign-up: the body and the field the error names. */
interface SignupCase {
  name: string;
  entity?: string;
  body: Record<string, unknown>;
  status: number;
  field?: "email" | "password";
  /** `fields.<field>.code` when the case fixes it. */
  code?: string;
}

const BAD_EMAILS = ["not-an-email", "a@", "@b.io", "a b@c.io", ""];
const BAD_PASSWORDS = ["1234567", "", 12345678, null];

const SIGNUP_CASES: SignupCase[] = [
  {
    name: "missing email",
    body: { password: USER_PW },
    status: 400,
    field: "email",
    code: "required",
  },
  ...BAD_EMAILS.map((email): SignupCase => ({
    name: `email ${JSON.stringify(email)}`,
    body: { email, password: USER_PW },
    status: 400,
    field: "email",
  })),
  ...BAD_PASSWORDS.map((password): SignupCase => ({
    name: `password ${JSON.stringify(password)}`,
    body: { email: "pw@example.com", password },
    status: 400,
    field: "password",
  })),
  {
    name: "missing password",
    body: { email: "nopw@example.com" },
    status: 400,
    field: "password",
  },
  {
    name: "entity without API: no record routes",
    entity: "hidden",
    body: { email: "hid@example.com", password: USER_PW },
    status: 404,
  },
];

forEachDb(
  "auth records: sign-up, PATCH and verified",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // Each step creates its own users (distinct emails) and counts only
      // what it adds, so the steps do not depend on each other.
      await t.step("refused sign-ups", async (t) => {
        // Every row is refused and writes nothing.
        for (const c of SIGNUP_CASES) {
          await t.step(c.name, async () => {
            const r = await s.request(
              "POST",
              `/api/v1/entities/${c.entity ?? "users"}`,
              { body: c.body, headers: { "x-forwarded-for": nextIp() } },
            );
            assertStatus(r, c.status, c.name);
            if (c.field) {
              assert(r.data.fields[c.field], `fields.${c.field}: ${r.text}`);
            }
            if (c.code) assertEquals(r.data.fields[c.field!].code, c.code);
            assert(!r.text.includes("1234567"), "password not echoed");
          });
        }
      });

      const countUsers = async () => {
        const r = await s.request("GET", `/api/v1/entities/users?count=true`, {
          token: admin,
        });
        assertStatus(r, 200);
        return r;
      };

      await t.step(
        "email is lower-cased and unique ignoring case",
        async () => {
          const before = (await countUsers()).data.total;
          const ada = await signup(s, "users", {
            email: "Ada@Example.COM",
            password: USER_PW,
            name: "Ada",
          });
          assertEquals(ada.email, "ada@example.com");
          assertEquals(ada.verified, false);
          assertEquals(ada.name, "Ada");
          assert(!("password" in ada), "no password in the created record");
          assert(typeof ada.id === "string" && ada.id.length > 0);
          const dup = await s.request("POST", "/api/v1/entities/users", {
            body: { email: "ADA@EXAMPLE.COM", password: USER_PW },
            headers: { "x-forwarded-for": nextIp() },
          });
          assertStatus(dup, 409, "duplicate ADA@EXAMPLE.COM");
          assert(!dup.text.includes(USER_PW), "no password in the 409");
          assert(!dup.text.includes("scrypt$"), "no hash in the 409");
          const r = await countUsers();
          assertEquals(r.data.total, before + 1, "the duplicate added no row");
          const emails = r.data.items.map((u: { email: string }) => u.email);
          assertEquals(
            emails.filter((e: string) => e.toLowerCase() === "ada@example.com"),
            ["ada@example.com"],
          );
          for (const item of r.data.items) {
            assert(!("password" in item), "no password in lists");
          }
          // The same address may exist in another auth entity.
          const m = await signup(s, "members", {
            email: "ada@example.com",
            password: USER_PW,
          });
          assertEquals(m.email, "ada@example.com");
        },
      );

      await t.step("a password of exactly 8 characters is enough", async () => {
        const eight = await signup(s, "users", {
          email: "eight@example.com",
          password: "12345678",
        });
        assertEquals(eight.verified, false);
        await userToken(s, "users", "eight@example.com", "12345678");
        const r = await s.request("GET", `/api/v1/entities/users/${eight.id}`, {
          token: admin,
        });
        assertStatus(r, 200);
        assertEquals(Object.keys(r.data).includes("password"), false);
      });

      await t.step("PATCH keeps or changes the password", async () => {
        await fastUser(s, "users", { email: "taken@example.com" });
        const u = await fastUser(s, "users", {
          email: "patch@example.com",
          name: "P",
        });
        const id = u.id;
        const tok = await issue(s, "users", id);
        // Without password: the password stays.
        let r = await s.request("PATCH", `/api/v1/entities/users/${id}`, {
          token: tok,
          body: { name: "Patched" },
        });
        assertStatus(r, 200);
        assertEquals(r.data.name, "Patched");
        assert(!("password" in r.data));
        await userToken(s, "users", "patch@example.com");
        // A short password is refused and the old one still works.
        r = await s.request("PATCH", `/api/v1/entities/users/${id}`, {
          token: tok,
          body: { password: "short", oldPassword: USER_PW },
        });
        assertStatus(r, 400);
        assert(r.data.fields.password, r.text);
        // Email change is lower-cased; a duplicate is a 409.
        // (A user's own email or password change needs `oldPassword`.)
        r = await s.request("PATCH", `/api/v1/entities/users/${id}`, {
          token: tok,
          body: { email: "Taken@example.com", oldPassword: USER_PW },
        });
        assertStatus(r, 409, "email taken (other case)");
        r = await s.request("PATCH", `/api/v1/entities/users/${id}`, {
          token: tok,
          body: { email: "Patch2@Example.com", oldPassword: USER_PW },
        });
        assertStatus(r, 200);
        assertEquals(r.data.email, "patch2@example.com");
        // With password: the new one works, the old one no longer does.
        r = await s.request("PATCH", `/api/v1/entities/users/${id}`, {
          token: tok,
          body: { password: "brand-new-pass", oldPassword: USER_PW },
        });
        assertStatus(r, 200);
        assert(!("password" in r.data));
        assert(!r.text.includes("brand-new-pass"));
        r = await login(s, "/api/v1/auth/users/login", {
          identity: "patch2@example.com",
          password: USER_PW,
        });
        assertStatus(r, 401, "old password after change");
        await userToken(s, "users", "PATCH2@example.com", "brand-new-pass");
      });

      await t.step(
        "verified defaults to false and can be set by an admin",
        async () => {
          const u = await fastUser(s, "users", { email: "ver@example.com" });
          assertEquals(u.verified, false);
          let r = await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
            token: admin,
            body: { verified: true },
          });
          assertStatus(r, 200);
          assertEquals(r.data.verified, true);
          r = await s.request("GET", `/api/v1/entities/users/${u.id}`, {
            token: await issue(s, "users", u.id),
          });
          assertStatus(r, 200);
          assertEquals(r.data.verified, true);
        },
      );

      await t.step("a user cannot mark itself verified", async () => {
        const problems: string[] = [];
        // Signup (public add rule) with verified: true: refused (400) or ignored.
        let r = await s.request("POST", "/api/v1/entities/users", {
          body: {
            email: "self@example.com",
            password: USER_PW,
            verified: true,
          },
          headers: { "x-forwarded-for": nextIp() },
        });
        if (r.status === 201 && r.data.verified !== false) {
          problems.push(
            `guest signup with verified:true → 201 verified=${r.data.verified}`,
          );
        } else if (r.status !== 201 && r.status !== 400) {
          problems.push(`guest signup with verified:true → ${r.status}`);
        }
        // Self-PATCH (update rule record.id == auth.id) of verified.
        const u = await fastUser(s, "users", { email: "selfp@example.com" });
        const tok = await issue(s, "users", u.id);
        r = await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
          token: tok,
          body: { verified: true },
        });
        const after = await s.request("GET", `/api/v1/entities/users/${u.id}`, {
          token: admin,
        });
        if (after.data.verified !== false) {
          problems.push(
            `self-PATCH verified:true → ${r.status}, stored verified=${after.data.verified}`,
          );
        }
        // An admin may verify a user (control).
        r = await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
          token: admin,
          body: { verified: true },
        });
        assertStatus(r, 200);
        assertEquals(r.data.verified, true);
        assertEquals(problems, [], "users verify themselves");
      });
    }),
);
