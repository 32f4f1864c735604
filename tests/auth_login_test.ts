/**
 * Logins (docs/reference/auth.md): `POST /api/v1/auth/<entity>/login`, the legacy
 * `POST /api/v1/auth/login` with the entity in the body, and the admin login
 * `POST /api/v1/sys/admins/login`; refused credentials answer one identical
 * 401, malformed bodies a 400 naming the field. Auth routes of entities that
 * have none (unknown, base, the admins' system entity, without API, a name
 * in the wrong case) all answer the same `404 Route Not Found`, whatever the
 * token, and a 404 logout revokes nothing.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  type TestServer,
} from "./_server.ts";
import {
  assertTokenWorks,
  claimsOf,
  createSchema,
  fastUser,
  issue,
  login,
  nextIp,
  PUBLIC,
  ROUTE_NOT_FOUND,
  USER_PW,
  withAuthServer,
} from "./_auth_fixtures.ts";

/** The users every login case reads. */
interface LoginUsers {
  ada: { id: string };
  member: { id: string };
}

/**
 * Ada (users, editor), a member of team red and a user of the API-less
 * `hidden`, all with `USER_PW`.
 */
async function loginUsers(s: TestServer): Promise<LoginUsers> {
  const ada = await fastUser(s, "users", {
    email: "ada@example.com",
    name: "Ada",
    role: "editor",
  });
  const member = await fastUser(s, "members", {
    email: "mem@example.com",
    team: "red",
  });
  await fastUser(s, "hidden", { email: "hid@example.com" });
  return { ada, member };
}

/** Accepted logins: scoped by identity, by path, legacy, admin. */
async function acceptedLogins(
  t: Deno.TestContext,
  s: TestServer,
  admin: string,
  { ada, member }: LoginUsers,
): Promise<void> {
  const identities = [
    { name: "email", identity: "ada@example.com" },
    { name: "email in another case", identity: "ADA@Example.Com" },
    { name: "user id", identity: ada.id },
  ];
  for (const c of identities) {
    await t.step(`login by ${c.name} → {token, user}`, async () => {
      const r = await login(s, "/api/v1/auth/users/login", {
        identity: c.identity,
        password: USER_PW,
      });
      assertStatus(r, 200, c.identity);
      assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
      assertEquals(r.error, "");
      assert(typeof r.data.token === "string");
      assertEquals(r.data.token.split(".").length, 3);
      const u = r.data.user;
      assertEquals(u.id, ada.id);
      assertEquals(u.email, "ada@example.com");
      assertEquals(u.name, "Ada");
      assertEquals(u.role, "editor");
      assertEquals(u.verified, false);
      assert(!("password" in u), "user without password");
      assert(!r.text.includes("scrypt$"), "no hash in login reply");
      assert(!r.text.includes(USER_PW), "no password in login reply");
      const claims = claimsOf(r.data.token);
      assertEquals(claims.sub, ada.id);
      assertEquals(claims.entity, "users");
    });
  }

  await t.step("the path decides the entity", async () => {
    let r = await login(s, "/api/v1/auth/members/login", {
      identity: "mem@example.com",
      password: USER_PW,
    });
    assertStatus(r, 200);
    assertEquals(r.data.user.id, member.id);
    assertEquals(r.data.user.team, "red");
    assertEquals(claimsOf(r.data.token).entity, "members");
    r = await login(s, "/api/v1/auth/users/login", {
      identity: "mem@example.com",
      password: USER_PW,
    });
    assertStatus(r, 401, "member on users");
    r = await login(s, "/api/v1/auth/users/login", {
      identity: member.id,
      password: USER_PW,
    });
    assertStatus(r, 401, "member id on users");
  });

  await t.step(
    "legacy POST /api/v1/auth/login takes entity in the body",
    async () => {
      let r = await login(s, "/api/v1/auth/login", {
        entity: "users",
        identity: "ADA@example.com",
        password: USER_PW,
      });
      assertStatus(r, 200);
      assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
      assertEquals(r.data.user.id, ada.id);
      assert(!("password" in r.data.user));
      assertEquals(claimsOf(r.data.token).entity, "users");
      await assertTokenWorks(s, ada.id, r.data.token, "legacy token");
      r = await login(s, "/api/v1/auth/login", {
        entity: "members",
        identity: member.id,
        password: USER_PW,
      });
      assertStatus(r, 200);
      assertEquals(r.data.user.id, member.id);
    },
  );

  await t.step("admin login → {token, user} for mb_admins", async () => {
    const r = await login(s, "/api/v1/sys/admins/login", {
      identity: "ADMIN@example.com",
      password: s.adminPassword,
    });
    assertStatus(r, 200);
    assertEquals(r.data.user.email, "admin@example.com");
    assert(!("password" in r.data.user));
    const claims = claimsOf(r.data.token);
    assertEquals(claims.entity, "mb_admins");
    assertEquals(claims.sub, claimsOf(admin).sub);
    const list = await s.request("GET", "/api/v1/schemas", {
      token: r.data.token,
    });
    assertStatus(list, 200, "admin token from login works");
    // A user's credentials do not open the admin login.
    const u = await login(s, "/api/v1/sys/admins/login", {
      identity: "ada@example.com",
      password: USER_PW,
    });
    assertStatus(u, 401);
  });
}

/** A refused login and the reference answer its body must equal. */
interface WrongCase {
  name: string;
  path: string;
  body: Record<string, unknown>;
  same: "user" | "admin";
}

/** A malformed login body and the field its 400 names. */
interface BadBodyCase {
  name: string;
  path: string;
  body?: Record<string, unknown>;
  raw?: string;
  field?: "identity" | "password";
}

const SCOPED = "/api/v1/auth/users/login";
const ADMIN_LOGIN = "/api/v1/sys/admins/login";

const BAD_BODIES: [Record<string, unknown>, "identity" | "password"][] = [
  [{}, "identity"],
  [{ password: USER_PW }, "identity"],
  [{ identity: "", password: USER_PW }, "identity"],
  [{ identity: 5, password: USER_PW }, "identity"],
  [{ identity: "ada@example.com" }, "password"],
  [{ identity: "ada@example.com", password: "" }, "password"],
  [{ identity: "ada@example.com", password: 12345678 }, "password"],
];

const BAD_BODY_CASES: BadBodyCase[] = [
  ...BAD_BODIES.flatMap(([body, field]) =>
    [SCOPED, ADMIN_LOGIN].map((path): BadBodyCase => ({
      name: `${path} ${JSON.stringify(body)}`,
      path,
      body,
      field,
    }))
  ),
  {
    name: "legacy without credentials",
    path: "/api/v1/auth/login",
    body: { entity: "users" },
  },
  { name: "malformed JSON", path: SCOPED, raw: "{not json" },
];

/** Refused logins: identical 401s and 400s naming the field. */
async function refusedLogins(
  t: Deno.TestContext,
  s: TestServer,
  { ada }: LoginUsers,
): Promise<void> {
  const wrongCases: WrongCase[] = [
    {
      name: "unknown email",
      path: SCOPED,
      body: { identity: "nobody@example.com", password: USER_PW },
      same: "user",
    },
    {
      name: "unknown id",
      path: SCOPED,
      body: {
        identity: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        password: USER_PW,
      },
      same: "user",
    },
    {
      name: "wrong password",
      path: SCOPED,
      body: { identity: "ada@example.com", password: "wrong-password" },
      same: "user",
    },
    {
      name: "id with a password in the wrong case",
      path: SCOPED,
      body: { identity: ada.id, password: USER_PW.toUpperCase() },
      same: "user",
    },
    {
      name: "legacy login, wrong password",
      path: "/api/v1/auth/login",
      body: {
        entity: "users",
        identity: "ada@example.com",
        password: "wrong-password",
      },
      same: "user",
    },
    {
      name: "admin login, unknown admin",
      path: ADMIN_LOGIN,
      body: { identity: "ghost@example.com", password: "wrong-password" },
      same: "admin",
    },
  ];
  // The reference answers: a known user and a known admin with a wrong
  // password.
  const refused = async (path: string, body: Record<string, unknown>) => {
    const r = await login(s, path, body);
    assertStatus(r, 401, `${path} ${JSON.stringify(body)}`);
    assertEquals(r.body?.data, null);
    assert(r.error.length > 0);
    return r;
  };
  const reference: Record<WrongCase["same"], Reply> = {
    user: await refused(SCOPED, {
      identity: ada.id,
      password: "another-wrong-password",
    }),
    admin: await refused(ADMIN_LOGIN, {
      identity: "admin@example.com",
      password: "wrong-password",
    }),
  };
  assert(!reference.user.text.includes(ada.id), "no identity echoed");

  for (const c of wrongCases) {
    await t.step(`identical 401: ${c.name}`, async () => {
      const r = await refused(c.path, c.body);
      assertEquals(r.text, reference[c.same].text, "same 401 body");
      assert(!r.text.includes("ada@example.com"), "no identity echoed");
    });
  }

  for (const c of BAD_BODY_CASES) {
    await t.step(`400: ${c.name}`, async () => {
      const r = c.raw === undefined
        ? await login(s, c.path, c.body ?? {})
        : await s.request("POST", c.path, {
          raw: c.raw,
          headers: {
            "content-type": "application/json",
            "x-forwarded-for": nextIp(),
          },
        });
      assertStatus(r, 400, c.name);
      if (c.field) {
        assert(
          r.data?.fields?.[c.field],
          `fields.${c.field} for ${c.name}: ${r.text}`,
        );
      }
    });
  }
}

const NOT_AUTH_ENTITIES = [
  "nope",
  "posts",
  "mb_admins",
  "hidden",
  "Users",
  "USERS",
];
const OPS = ["login", "refresh", "logout"];

const SCOPED_CASES = NOT_AUTH_ENTITIES.flatMap((entity) =>
  OPS.map((op) => ({ name: `${op} on ${entity}`, entity, op }))
);

const LEGACY_CASES = ["nope", "posts", "mb_admins", "hidden", undefined].map(
  (entity) => ({ name: `legacy login, entity ${entity}`, entity }),
);

/** Auth routes of entities without them: the same 404 for all. */
async function routeNotFound(
  t: Deno.TestContext,
  s: TestServer,
  admin: string,
  { ada }: LoginUsers,
): Promise<void> {
  const adminId = claimsOf(admin).sub;

  for (const c of SCOPED_CASES) {
    await t.step(`identical 404: ${c.name}`, async () => {
      const ut = await issue(s, "users", ada.id);
      const at = await issue(s, "mb_admins", adminId);
      for (const token of [undefined, ut, at]) {
        const r = await s.request(
          "POST",
          `/api/v1/auth/${c.entity}/${c.op}`,
          {
            token,
            body: c.op === "login"
              ? { identity: "ada@example.com", password: USER_PW }
              : undefined,
            headers: { "x-forwarded-for": nextIp() },
          },
        );
        assertStatus(r, 404, c.name);
        assertEquals(r.text, ROUTE_NOT_FOUND, c.name);
      }
      // The 404 answers revoked nothing.
      await assertTokenWorks(s, ada.id, ut, "user token after the 404s");
      const r = await s.request("GET", "/api/v1/schemas", { token: at });
      assertStatus(r, 200, "admin token after the 404s");
    });
  }

  for (const c of LEGACY_CASES) {
    await t.step(`identical 404: ${c.name}`, async () => {
      const r = await login(s, "/api/v1/auth/login", {
        entity: c.entity,
        identity: "admin@example.com",
        password: s.adminPassword,
      });
      assertStatus(r, 404, c.name);
      assertEquals(r.text, ROUTE_NOT_FOUND, c.name);
    });
  }

  await t.step("a correct login on the API-less entity → 404", async () => {
    const r = await login(s, "/api/v1/auth/hidden/login", {
      identity: "hid@example.com",
      password: USER_PW,
    });
    assertEquals(r.text, ROUTE_NOT_FOUND);
  });

  await t.step("has_api false also closes the legacy refresh", async () => {
    // A user holds a token, then the entity's API is switched off.
    await createSchema(s, admin, {
      name: "closing",
      type: "auth",
      rules: { add: PUBLIC },
    });
    const u = await fastUser(s, "closing", { email: "c@example.com" });
    const tok = await issue(s, "closing", u.id);
    const r0 = await s.request("PATCH", "/api/v1/schemas/closing", {
      token: admin,
      body: { has_api: false },
    });
    assertStatus(r0, 200);
    let r = await s.request("POST", "/api/v1/auth/closing/refresh", {
      token: tok,
    });
    assertEquals(r.text, ROUTE_NOT_FOUND, "scoped refresh");
    // The legacy forms are aliases of the scoped ones: no new token for an
    // entity without API (404 like the scoped form, or 401).
    r = await s.request("POST", "/api/v1/auth/refresh", { token: tok });
    assert(
      r.status === 404 || r.status === 401,
      `legacy refresh for a has_api:false entity: expected 404 or 401, got ${r.status} ${
        r.text.slice(0, 100)
      }`,
    );
  });
}

forEachDb(
  "auth login: accepted, refused, Route Not Found",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // The users are seeded once and only read: a login issues its own
      // session, a refused one writes nothing, and every Route Not Found row
      // issues its own tokens (a row that wrongly revoked one fails alone).
      // So no case depends on another.
      const users = await loginUsers(s);
      await t.step(
        "accepted credentials",
        (t) => acceptedLogins(t, s, admin, users),
      );
      await t.step(
        "refused credentials and bodies",
        (t) => refusedLogins(t, s, users),
      );
      await t.step("Route Not Found", (t) => routeNotFound(t, s, admin, users));
    }),
);
