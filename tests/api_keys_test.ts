/**
 * API keys and impersonation (docs/guide/users-and-auth.md): keys
 * made, listed and deleted by admins; a user's key sees what the user may
 * (rules apply), an admin's key acts as the admin; expired, deleted, forged
 * keys and keys of deleted users are 401; keys are refused on the login,
 * refresh, logout and account routes; a key never shows in a list or in the
 * logs. Impersonation tokens act as the user, cannot be refreshed, are
 * admin-only and logged.
 *
 * One server per database: the fixture (`members`, `notes`, alice and bob,
 * their notes, the admin) is read by every step and changed by none; each
 * step makes the keys and users it changes.
 *
 * @module
 */

import { createHash } from "node:crypto";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  type TestServer,
} from "./_server.ts";
import { startServer } from "./_server.ts";
import { openSse } from "./_realtime_client.ts";
import { poll } from "./_wait.ts";
import {
  AUTH,
  claimsOf,
  createSchema,
  fastUser,
  fixtureAdmin,
  login,
  USER_PW,
  userToken,
} from "./_auth_fixtures.ts";

const KEYS = "/api/v1/sys/api-keys";
const OWN = { mode: "custom", expr: "record.owner == auth.id" };
const SELF = { mode: "custom", expr: "record.id == auth.id" };

interface Fixture {
  admin: string;
  adminId: string;
  alice: string;
  bob: string;
  aliceToken: string;
  notes: Record<string, string>;
}

async function fixture(s: TestServer): Promise<Fixture> {
  const admin = await fixtureAdmin(s);
  const adminId = claimsOf(admin).sub;
  await createSchema(s, admin, {
    name: "members",
    type: "auth",
    rules: { get: SELF, update: SELF, list: SELF },
  });
  await createSchema(s, admin, {
    name: "notes",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "owner", type: "string" },
    ],
    rules: { list: OWN, get: OWN, add: AUTH, update: OWN, delete: OWN },
  });
  const alice = (await fastUser(s, "members", { email: "alice@example.com" }))
    .id;
  const bob = (await fastUser(s, "members", { email: "bob@example.com" })).id;
  const notes: Record<string, string> = {};
  for (const [title, owner] of [["a1", alice], ["a2", alice], ["b1", bob]]) {
    const r = await s.request("POST", "/api/v1/entities/notes", {
      token: admin,
      body: { title, owner },
    });
    assertStatus(r, 201, `note ${title}`);
    notes[title] = r.data.id;
  }
  const aliceToken = await userToken(s, "members", "alice@example.com");
  return { admin, adminId, alice, bob, aliceToken, notes };
}

/** Makes a key through the API; returns the reply's data (with `key`). */
async function makeKey(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
): Promise<Record<string, string> & { key: string; id: string }> {
  const r = await s.request("POST", KEYS, {
    token: admin,
    body: { name: "job", ...body },
  });
  assertStatus(r, 201, "make key");
  return r.data;
}

function titles(r: Reply): string[] {
  assertStatus(r, 200);
  return (r.data.items as { title: string }[]).map((n) => n.title).sort();
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

/** One request and its expected status (and error text). */
interface Case {
  name: string;
  method: string;
  path: string | ((f: Fixture) => string);
  /** The caller: a key made for the case, a token, or none. */
  as:
    | "guest"
    | "user-token"
    | "admin-token"
    | "user-key"
    | "admin-key";
  body?: unknown | ((f: Fixture) => unknown);
  status: number;
  error?: RegExp;
}

async function callerOf(
  s: TestServer,
  f: Fixture,
  as: Case["as"],
): Promise<string | undefined> {
  switch (as) {
    case "guest":
      return undefined;
    case "user-token":
      return f.aliceToken;
    case "admin-token":
      return f.admin;
    case "user-key":
      return (await makeKey(s, f.admin, {
        entity: "members",
        user_id: f.alice,
      })).key;
    case "admin-key":
      return (await makeKey(s, f.admin, {
        entity: "mb_admins",
        user_id: f.adminId,
      })).key;
  }
}

async function runCases(
  t: Deno.TestContext,
  s: TestServer,
  f: Fixture,
  cases: Case[],
): Promise<void> {
  for (const c of cases) {
    await t.step(c.name, async () => {
      const token = await callerOf(s, f, c.as);
      const path = typeof c.path === "function" ? c.path(f) : c.path;
      const body = typeof c.body === "function" ? c.body(f) : c.body;
      const r = await s.request(c.method, path, {
        token,
        body,
        headers: { "x-forwarded-for": `203.0.113.${cases.indexOf(c) + 1}` },
      });
      assertStatus(r, c.status, c.name);
      if (c.error) assert(c.error.test(r.error), `error: ${r.error}`);
      if (token?.startsWith("mbk_")) {
        assert(!r.text.includes(token), "a reply never echoes the key");
      }
    });
  }
}

const future = () => new Date(Date.now() + 86_400_000).toISOString();

/** Creating keys: who may, and what a body must hold. */
const CREATE: Case[] = [
  {
    name: "create: a user's key, 201",
    method: "POST",
    path: KEYS,
    as: "admin-token",
    body: (f: Fixture) => ({
      name: "nightly",
      entity: "members",
      user_id: f.alice,
      expires: future(),
    }),
    status: 201,
  },
  {
    name: "create: an admin's key (mb_admins), never expiring, 201",
    method: "POST",
    path: KEYS,
    as: "admin-token",
    body: (f: Fixture) => ({
      name: "ops",
      entity: "mb_admins",
      user_id: f.adminId,
      expires: null,
    }),
    status: 201,
  },
  ...[
    ["no name", { name: "" }, /name/],
    ["a base entity", { entity: "notes" }, /entity/],
    ["an unknown entity", { entity: "nope" }, /entity/],
    [
      "an unknown user",
      { user_id: "0190f0f0-0000-7000-8000-000000000000" },
      /user_id/,
    ],
    ["a past expiry", { expires: "2001-01-01T00:00:00Z" }, /expires/],
    ["an expiry that is no time", { expires: "tomorrow" }, /expires/],
    ["an unknown key", { scopes: ["all"] }, /scopes/],
  ].map(([what, patch, error]): Case => ({
    name: `create: ${what} → 400`,
    method: "POST",
    path: KEYS,
    as: "admin-token",
    body: (f: Fixture) => ({
      name: "job",
      entity: "members",
      user_id: f.alice,
      ...(patch as Record<string, unknown>),
    }),
    status: 400,
    error: error as RegExp,
  })),
  ...(["guest", "user-token", "user-key"] as const).map((as): Case => ({
    name: `create: as ${as} → ${as === "guest" ? 401 : 403}`,
    method: "POST",
    path: KEYS,
    as,
    body: (f: Fixture) => ({ name: "x", entity: "members", user_id: f.alice }),
    status: as === "guest" ? 401 : 403,
  })),
  {
    name: "list: as a user's key → 403",
    method: "GET",
    path: KEYS,
    as: "user-key",
    status: 403,
  },
  {
    name: "delete: an unknown key → 404",
    method: "DELETE",
    path: `${KEYS}/0190f0f0-0000-7000-8000-000000000000`,
    as: "admin-token",
    status: 404,
  },
];

/** What a key opens, and where it is refused. */
const USE: Case[] = [
  {
    name: "a user's key: own note → 200",
    method: "GET",
    path: (f) => `/api/v1/entities/notes/${f.notes.a1}`,
    as: "user-key",
    status: 200,
  },
  {
    name: "a user's key: another's note → 404 (the rule applies)",
    method: "GET",
    path: (f) => `/api/v1/entities/notes/${f.notes.b1}`,
    as: "user-key",
    status: 404,
  },
  {
    name: "a user's key: add a note → 201",
    method: "POST",
    path: "/api/v1/entities/notes",
    as: "user-key",
    body: (f: Fixture) => ({ title: "by key", owner: f.alice }),
    status: 201,
  },
  {
    name: "a user's key: admin route → 403",
    method: "GET",
    path: "/api/v1/schemas",
    as: "user-key",
    status: 403,
  },
  {
    name: "an admin's key: admin route → 200",
    method: "GET",
    path: "/api/v1/schemas",
    as: "admin-key",
    status: 200,
  },
  {
    name: "an admin's key: any note → 200",
    method: "GET",
    path: (f) => `/api/v1/entities/notes/${f.notes.b1}`,
    as: "admin-key",
    status: 200,
  },
  ...([
    [
      "/api/v1/auth/members/login",
      "user-key",
      /^Cannot log in with an API key/,
    ],
    [
      "/api/v1/auth/members/refresh",
      "user-key",
      /^Cannot refresh with an API key/,
    ],
    [
      "/api/v1/auth/members/logout",
      "user-key",
      /^Cannot log out with an API key/,
    ],
    ["/api/v1/auth/login", "user-key", /^Cannot log in with an API key/],
    ["/api/v1/auth/refresh", "user-key", /^Cannot refresh with an API key/],
    ["/api/v1/auth/logout", "user-key", /^Cannot log out with an API key/],
    ["/api/v1/sys/admins/login", "admin-key", /^Cannot log in with an API key/],
    [
      "/api/v1/sys/admins/refresh",
      "admin-key",
      /^Cannot refresh with an API key/,
    ],
    [
      "/api/v1/sys/admins/logout",
      "admin-key",
      /^Cannot log out with an API key/,
    ],
    [
      "/api/v1/auth/members/impersonate/x",
      "admin-key",
      /^Cannot impersonate with an API key/,
    ],
  ] as const).map(([path, as, error]): Case => ({
    name: `refused: ${path} with ${as} → 403`,
    method: "POST",
    path,
    as,
    // A body the route would accept without the key.
    body: { identity: "alice@example.com", password: USER_PW },
    status: 403,
    error,
  })),
  {
    name: "refused: a user's key changing the user's password → 403",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.alice}`,
    as: "user-key",
    body: { password: "new-password-1", oldPassword: USER_PW },
    status: 403,
    error: /^Cannot change password or email with an API key/,
  },
  {
    name: "a user's key may change the user's other fields → 200",
    method: "PATCH",
    path: (f) => `/api/v1/entities/members/${f.alice}`,
    as: "user-key",
    body: {},
    status: 200,
  },
];

/** Impersonation: who may, for whom, for how long. */
const IMPERSONATE: Case[] = [
  ...(["guest", "user-token"] as const).map((as): Case => ({
    name: `impersonate: as ${as} → ${as === "guest" ? 401 : 403}`,
    method: "POST",
    path: (f) => `/api/v1/auth/members/impersonate/${f.bob}`,
    as,
    body: {},
    status: as === "guest" ? 401 : 403,
  })),
  ...["notes", "nope", "mb_admins"].map((entity): Case => ({
    name: `impersonate: entity ${entity} → 404 Route Not Found`,
    method: "POST",
    path: (f) => `/api/v1/auth/${entity}/impersonate/${f.bob}`,
    as: "admin-token",
    body: {},
    status: 404,
    error: /^Route Not Found$/,
  })),
  {
    name: "impersonate: an unknown user → 404",
    method: "POST",
    path:
      "/api/v1/auth/members/impersonate/0190f0f0-0000-7000-8000-000000000000",
    as: "admin-token",
    body: {},
    status: 404,
  },
  ...[59, 86_401, "600", 1.5].map((duration): Case => ({
    name: `impersonate: duration ${JSON.stringify(duration)} → 400`,
    method: "POST",
    path: (f) => `/api/v1/auth/members/impersonate/${f.bob}`,
    as: "admin-token",
    body: { duration },
    status: 400,
    error: /duration/,
  })),
];

forEachDb("api keys and impersonation", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const f = await fixture(s);

    await runCases(t, s, f, CREATE);
    await runCases(t, s, f, USE);
    await runCases(t, s, f, IMPERSONATE);

    await t.step("the key is shown once; lists never show it", async () => {
      const made = await makeKey(s, f.admin, {
        name: "shown once",
        entity: "members",
        user_id: f.alice,
        expires: "2099-01-01T00:00:00Z",
      });
      assert(/^mbk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/.test(made.key), made.key);
      assertEquals(Object.keys(made).sort(), [
        "created",
        "entity",
        "expires",
        "id",
        "key",
        "last_used",
        "name",
        "user_id",
      ]);
      assertEquals(made.expires, "2099-01-01T00:00:00.000Z");
      const stored = await s.app.storage.query(
        `SELECT "hash" FROM "mb_api_keys" WHERE "id" = ?`,
        [made.id],
      );
      assertEquals(stored[0].hash, sha256(made.key), "stored as its SHA-256");
      const r = await s.request("GET", KEYS, { token: f.admin });
      assertStatus(r, 200);
      const listed = (r.data as Record<string, unknown>[]).find((k) =>
        k.id === made.id
      );
      const { key: _key, ...info } = made;
      assertEquals(listed, info);
      assert(!r.text.includes(made.key), "no key in the list");
      assert(!r.text.includes(sha256(made.key)), "no hash in the list");
      assert(!r.text.includes("mbk_"), "nothing key-like in the list");
    });

    await t.step("a user's key lists only what the user may", async () => {
      const { key } = await makeKey(s, f.admin, {
        entity: "members",
        user_id: f.bob,
      });
      const r = await s.request("GET", "/api/v1/entities/notes", {
        token: key,
      });
      assertEquals(titles(r), ["b1"]);
      const all = await s.request("GET", "/api/v1/entities/notes", {
        token: (await makeKey(s, f.admin, {
          entity: "mb_admins",
          user_id: f.adminId,
        })).key,
      });
      assert(titles(all).includes("a1") && titles(all).includes("b1"));
    });

    await t.step("use is recorded in last_used", async () => {
      const made = await makeKey(s, f.admin, {
        entity: "members",
        user_id: f.alice,
      });
      assertEquals(made.last_used, null);
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: made.key }),
        200,
      );
      await s.app.apiKeys.settled(); // the write goes out after the answer
      const r = await s.request("GET", KEYS, { token: f.admin });
      const k = (r.data as Record<string, string>[]).find((x) =>
        x.id === made.id
      );
      assert(k?.last_used, `last_used: ${JSON.stringify(k)}`);
    });

    await t.step("forged, altered and malformed keys → 401", async () => {
      const { key } = await makeKey(s, f.admin, {
        entity: "members",
        user_id: f.alice,
      });
      const last = key.at(-1) === "A" ? "B" : "A";
      const other = `mbk_${"0".repeat(32)}_${key.slice(-43)}`;
      for (
        const bad of [
          key.slice(0, -1) + last, // the right id, a wrong secret
          other, // no such id
          "mbk_", // malformed
          key + "x",
        ]
      ) {
        const r = await s.request("GET", "/api/v1/entities/notes", {
          token: bad,
        });
        assertStatus(r, 401, bad);
      }
      // The right key still works.
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: key }),
        200,
      );
    });

    await t.step("an expired key → 401", async () => {
      const { key, id } = await makeKey(s, f.admin, {
        entity: "members",
        user_id: f.alice,
        expires: future(),
      });
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: key }),
        200,
      );
      // Its expiry passes (written back: no waiting a day).
      await s.app.storage.run(
        `UPDATE "mb_api_keys" SET "expires" = ? WHERE "id" = ?`,
        [new Date(Date.now() - 1000).toISOString(), id],
      );
      const r = await s.request("GET", "/api/v1/entities/notes", {
        token: key,
      });
      assertStatus(r, 401);
      assert(/API key/.test(r.error), r.error);
    });

    await t.step(
      "a deleted key → 401 at once; deleted twice → 404",
      async () => {
        const { key, id } = await makeKey(s, f.admin, {
          entity: "members",
          user_id: f.alice,
        });
        assertStatus(
          await s.request("GET", "/api/v1/entities/notes", { token: key }),
          200,
        );
        assertStatus(
          await s.request("DELETE", `${KEYS}/${id}`, { token: f.admin }),
          204,
        );
        assertStatus(
          await s.request("GET", "/api/v1/entities/notes", { token: key }),
          401,
        );
        assertStatus(
          await s.request("DELETE", `${KEYS}/${id}`, { token: f.admin }),
          404,
        );
        const list = await s.request("GET", KEYS, { token: f.admin });
        assert(
          !(list.data as { id: string }[]).some((k) => k.id === id),
          "gone from the list",
        );
      },
    );

    await t.step(
      "a realtime stream opened with a key ends when the key is deleted",
      async () => {
        const { key, id } = await makeKey(s, f.admin, {
          entity: "members",
          user_id: f.alice,
        });
        const c = await openSse(s, "topics=notes", { token: key });
        try {
          assertEquals(c.status, 200, JSON.stringify(c.body));
          assertEquals((await c.next())?.event, "ready");
          assertStatus(
            await s.request("DELETE", `${KEYS}/${id}`, { token: f.admin }),
            204,
          );
          let ended = false;
          c.ended.then(() => ended = true);
          await poll("the stream to end", () => ended, { deadline: 15_000 });
          const last = (await c.drain(0)).at(-1);
          assertEquals(last?.event, "error");
          assertEquals(last?.data.status, 401);
        } finally {
          c.close();
        }
      },
    );

    await t.step("a key dies with its user", async () => {
      const carol = await fastUser(s, "members", {
        email: "carol@example.com",
      });
      const { key, id } = await makeKey(s, f.admin, {
        entity: "members",
        user_id: carol.id,
      });
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: key }),
        200,
      );
      assertStatus(
        await s.request("DELETE", `/api/v1/entities/members/${carol.id}`, {
          token: f.admin,
        }),
        204,
      );
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: key }),
        401,
      );
      const list = await s.request("GET", KEYS, { token: f.admin });
      assert(
        !(list.data as { id: string }[]).some((k) => k.id === id),
        "a dead key leaves the list",
      );
    });

    await t.step("a key outlives a password change of its user", async () => {
      const dave = await fastUser(s, "members", { email: "dave@example.com" });
      const { key } = await makeKey(s, f.admin, {
        entity: "members",
        user_id: dave.id,
      });
      assertStatus(
        await s.request("PATCH", `/api/v1/entities/members/${dave.id}`, {
          token: f.admin,
          body: { password: "dave-new-password-1" },
        }),
        200,
      );
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", { token: key }),
        200,
      );
    });

    let impersonated = "";
    await t.step("impersonation: a token acting as the user", async () => {
      const r = await s.request(
        "POST",
        `/api/v1/auth/members/impersonate/${f.bob}`,
        { token: f.admin, body: {} },
      );
      assertStatus(r, 200);
      assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
      assertEquals(r.data.user.id, f.bob);
      assert(!("password" in r.data.user), "no password");
      impersonated = r.data.token;
      const c = claimsOf(impersonated) as unknown as Record<string, unknown>;
      assertEquals([c.sub, c.entity, c.imp], [f.bob, "members", f.adminId]);
      assertEquals(Number(c.exp) - Number(c.iat), 3600, "1 h by default");
      const notes = await s.request("GET", "/api/v1/entities/notes", {
        token: impersonated,
      });
      assertEquals(titles(notes), ["b1"], "bob's notes only");
      const short = await s.request(
        "POST",
        `/api/v1/auth/members/impersonate/${f.bob}`,
        { token: f.admin, body: { duration: 600 } },
      );
      assertStatus(short, 200);
      const sc = claimsOf(short.data.token);
      assertEquals(sc.exp - sc.iat, 600);
    });

    await t.step("impersonation: the token cannot be refreshed", async () => {
      for (
        const path of [
          "/api/v1/auth/members/refresh",
          "/api/v1/auth/refresh",
        ]
      ) {
        const r = await s.request("POST", path, { token: impersonated });
        assertStatus(r, 403, path);
        assert(/cannot be refreshed/.test(r.error), r.error);
      }
      // Still valid: a refused refresh does not spend it.
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", {
          token: impersonated,
        }),
        200,
      );
      // A logout ends it.
      assertStatus(
        await s.request("POST", "/api/v1/auth/members/logout", {
          token: impersonated,
        }),
        200,
      );
      assertStatus(
        await s.request("GET", "/api/v1/entities/notes", {
          token: impersonated,
        }),
        401,
      );
    });

    await t.step("an ordinary login still refreshes", async () => {
      const r = await login(s, "/api/v1/auth/members/login", {
        identity: "bob@example.com",
        password: USER_PW,
      });
      assertStatus(r, 200);
      assertStatus(
        await s.request("POST", "/api/v1/auth/members/refresh", {
          token: r.data.token,
        }),
        200,
      );
    });

    await t.step(
      "logs: impersonation named, never a key or a token",
      async () => {
        const made = await makeKey(s, f.admin, {
          entity: "members",
          user_id: f.alice,
        });
        // Used where it works, where it is refused, and where it fails.
        await s.request("GET", "/api/v1/entities/notes", { token: made.key });
        await s.request("POST", "/api/v1/auth/members/refresh", {
          token: made.key,
        });
        await s.request("GET", "/api/v1/entities/notes", {
          token: made.key + "x",
        });
        await s.app.log.flush();
        const r = await s.request(
          "GET",
          "/api/v1/sys/logs?limit=500",
          { token: f.admin },
        );
        assertStatus(r, 200);
        assert(!r.text.includes("mbk_"), "no key in the logs");
        assert(!r.text.includes(impersonated), "no token in the logs");
        const items = r.data.items as {
          message: string;
          data: Record<string, unknown> | null;
        }[];
        const imp = items.filter((e) => e.message === "impersonation");
        assert(imp.length >= 2, `impersonation lines: ${imp.length}`);
        assertEquals(imp.at(-1)!.data?.admin, f.adminId);
        assertEquals(imp.at(-1)!.data?.user, f.bob);
        assertEquals(imp.at(-1)!.data?.entity, "members");
        assert(
          items.some((e) =>
            e.message === "api key created" && e.data?.id === made.id
          ),
          "key creation logged by id",
        );
      },
    );
  } finally {
    await s.close();
  }
});
