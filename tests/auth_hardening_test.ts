/**
 * Auth hardening (issue 13, items 6, 7 and 11), on every database: the
 * sign-up throttle and login priority over sign-ups, `oldPassword` for a
 * user's own password or email change, `verified` reset on a new email,
 * tokens of auth entities without API, the documented rule that blocks
 * self-promotion, 401 for invalid file tokens, and the legacy refresh/logout
 * routes applying the scoped checks.
 *
 * One server per database, with `trustProxy`; every request that could
 * count against a rate limit carries its own `X-Forwarded-For` address.
 * Users are seeded with a precomputed hash and their sessions issued
 * directly, except where a login or a new password is what is tested.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { fastUser, issue, USER_PW } from "./_auth_fixtures.ts";
import { SIGNUP_LIMIT } from "../lib/auth/rate_limit.ts";
import { poll, within } from "./_wait.ts";
import { kdfGate } from "../lib/auth/password.ts";

/** Seeded with its precomputed hash (`fastUser`): no scrypt per user. */
const PW = USER_PW;
const ROUTE_NOT_FOUND = '{"status":404,"data":null,"error":"Route Not Found"}';

let ipSeq = 0;
/** A fresh client address. */
function nextIp(): string {
  ipSeq++;
  return `10.9.${(ipSeq >> 8) & 255}.${ipSeq & 255}`;
}

function is(r: Reply, status: number, msg: string): void {
  assert.equal(r.status, status, `${msg}: ${r.text.slice(0, 300)}`);
}

/** Logs in from a fresh address; returns the token. */
async function login(
  s: TestServer,
  entity: string,
  identity: string,
  password = PW,
): Promise<string> {
  const r = await s.request("POST", `/api/v1/auth/${entity}/login`, {
    body: { identity, password },
    headers: { "x-forwarded-for": nextIp() },
  });
  is(r, 200, `login ${identity}`);
  return r.data.token;
}

/** Creates a public sign-up auth entity `name` (fields: name, role). */
async function authEntity(s: TestServer, name: string): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: {
      name,
      type: "auth",
      fields: [
        { name: "name", type: "string" },
        { name: "role", type: "string" },
      ],
      rules: {
        add: { mode: "public", expr: "" },
        get: { mode: "auth", expr: "" },
        update: { mode: "custom", expr: "record.id == auth.id" },
      },
    },
  });
  is(r, 201, `${name} schema`);
}

function patch(
  s: TestServer,
  path: string,
  token: string,
  body: Record<string, unknown>,
): Promise<Reply> {
  return s.request("PATCH", path, {
    token,
    body,
    headers: { "x-forwarded-for": nextIp() },
  });
}

async function signUpThrottle(t: Deno.TestContext, s: TestServer) {
  await t.step("sign-ups past the limit from one IP → 429", async () => {
    const ip = "203.0.113.7";
    // Invalid passwords: refused before hashing, still counted.
    const replies = await Promise.all(
      Array.from(
        { length: SIGNUP_LIMIT + 5 },
        (_, i) =>
          s.request("POST", "/api/v1/entities/users", {
            body: { email: `flood${i}@example.com`, password: "short" },
            headers: { "x-forwarded-for": ip },
          }),
      ),
    );
    const limited = replies.filter((r) => r.status === 429);
    assert.equal(limited.length, 5, replies.map((r) => r.status).join());
    assert.equal(
      replies.filter((r) => r.status === 400).length,
      SIGNUP_LIMIT,
    );
    for (const r of limited) {
      assert.equal(r.headers.get("x-ratelimit-limit"), String(SIGNUP_LIMIT));
      assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
      assert.ok(Number(r.headers.get("x-ratelimit-reset")) > 0);
      assert.match(r.error, /^Cannot sign up: too many sign-ups/);
    }
    // Answers under the limit carry the headers too.
    const counted = replies.find((r) => r.status === 400)!;
    assert.equal(
      counted.headers.get("x-ratelimit-limit"),
      String(SIGNUP_LIMIT),
    );
    // Another address is not limited.
    const other = await s.request("POST", "/api/v1/entities/users", {
      body: { email: "fresh@example.com", password: PW },
      headers: { "x-forwarded-for": "203.0.113.8" },
    });
    is(other, 201, "another IP");
    assert.equal(
      other.headers.get("x-ratelimit-remaining"),
      String(SIGNUP_LIMIT - 1),
    );
  });

  await t.step("admins are not throttled", async () => {
    const admin = await s.adminToken();
    for (let i = 0; i < SIGNUP_LIMIT + 2; i++) {
      const r = await s.request("POST", "/api/v1/entities/users", {
        token: admin,
        body: { email: `adm${i}@example.com`, password: "short" },
        headers: { "x-forwarded-for": "203.0.113.9" },
      });
      is(r, 400, `admin create ${i}`);
    }
  });

  await t.step("a login is answered while sign-ups wait", async () => {
    await fastUser(s, "users", { email: "ada@example.com" });
    // Eight sign-ups queued: more than twice what one scrypt slot gets
    // through while the login runs, so the login waits for at most a few.
    const n = 8;
    let done = 0;
    const signups = Array.from(
      { length: n },
      (_, i) =>
        s.request("POST", "/api/v1/entities/users", {
          body: { email: `queued${i}@example.com`, password: PW },
          headers: { "x-forwarded-for": `198.18.0.${i + 1}` },
        }).then((r) => {
          done++;
          return r;
        }),
    );
    // Every sign-up has reached the hashing queue (or is through it).
    await poll(
      "the sign-ups queued",
      () => kdfGate.running + kdfGate.waiting + done >= n || undefined,
    );
    // The deadline only turns a hang into a failure; the order below is the
    // claim.
    await within(
      "the login",
      60_000,
      login(s, "users", "ada@example.com"),
    );
    const doneAtLogin = done;
    const all = await Promise.all(signups);
    assert.ok(all.every((r) => r.status === 201), "every sign-up succeeds");
    // Without priority the login waits behind every queued sign-up.
    assert.ok(
      doneAtLogin < n / 2,
      `login answered after ${doneAtLogin} of ${n} sign-ups`,
    );
  });
}

async function accountChanges(t: Deno.TestContext, s: TestServer) {
  const admin = await s.adminToken();
  const user = async (email: string) => {
    const u = await fastUser(s, "users", { email });
    // Issued directly: the logins below are the checks.
    return { id: u.id, token: await issue(s, "users", u.id) };
  };

  await t.step(
    "own password: missing or wrong oldPassword → 400",
    async () => {
      const u = await user("pw@example.com");
      const path = `/api/v1/entities/users/${u.id}`;
      let r = await patch(s, path, u.token, { password: "new-password-1" });
      is(r, 400, "no oldPassword");
      assert.equal(r.data.fields.oldPassword.code, "required");
      r = await patch(s, path, u.token, {
        password: "new-password-1",
        oldPassword: "wrong-password",
      });
      is(r, 400, "wrong oldPassword");
      assert.equal(r.data.fields.oldPassword.code, "invalid");
      await login(s, "users", "pw@example.com", PW); // unchanged
      r = await patch(s, path, u.token, {
        password: "new-password-1",
        oldPassword: PW,
      });
      is(r, 200, "right oldPassword");
      assert.equal(r.data.oldPassword, undefined);
      await login(s, "users", "pw@example.com", "new-password-1");
    },
  );

  await t.step(
    "own email: needs oldPassword and resets verified",
    async () => {
      const u = await user("em@example.com");
      const path = `/api/v1/entities/users/${u.id}`;
      is(
        await patch(s, path, admin, { verified: true }),
        200,
        "admin verifies",
      );
      let r = await patch(s, path, u.token, { email: "em2@example.com" });
      is(r, 400, "no oldPassword");
      assert.ok(r.data.fields.oldPassword);
      // The same email again (any case) is no change: no password needed.
      r = await patch(s, path, u.token, {
        email: "EM@example.com",
        name: "E",
      });
      is(r, 200, "unchanged email");
      assert.deepEqual([r.data.email, r.data.verified], [
        "em@example.com",
        true,
      ]);
      r = await patch(s, path, u.token, {
        email: "em2@example.com",
        oldPassword: PW,
      });
      is(r, 200, "with oldPassword");
      assert.deepEqual([r.data.email, r.data.verified], [
        "em2@example.com",
        false,
      ]);
    },
  );

  await t.step("admins need no oldPassword and keep verified", async () => {
    const u = await user("ad@example.com");
    const path = `/api/v1/entities/users/${u.id}`;
    let r = await patch(s, path, admin, { verified: true });
    r = await patch(s, path, admin, {
      email: "ad2@example.com",
      password: "admin-set-pass-1",
    });
    is(r, 200, "admin change");
    assert.deepEqual([r.data.email, r.data.verified], [
      "ad2@example.com",
      true,
    ]);
    r = await patch(s, path, admin, {
      email: "ad3@example.com",
      verified: false,
    });
    assert.equal(r.data.verified, false, "admin sets verified explicitly");
    await login(s, "users", "ad3@example.com", "admin-set-pass-1");
  });

  await t.step("other fields need no oldPassword", async () => {
    const u = await user("nm@example.com");
    const r = await patch(s, `/api/v1/entities/users/${u.id}`, u.token, {
      name: "Nora",
    });
    is(r, 200, "name change");
  });
}

async function tokensWithoutApi(t: Deno.TestContext, s: TestServer) {
  const admin = await s.adminToken();
  // An entity of its own: its API is switched off and on.
  await authEntity(s, "offline");
  await t.step(
    "has_api false → 401 everywhere; back on → accepted",
    async () => {
      const u = await fastUser(s, "offline", { email: "off@example.com" });
      const token = await issue(s, "offline", u.id);
      is(
        await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "notes",
            type: "base",
            fields: [{ name: "t", type: "string" }],
            rules: { list: { mode: "auth", expr: "" } },
          },
        }),
        201,
        "notes",
      );
      is(
        await s.request("GET", "/api/v1/entities/notes", { token }),
        200,
        "before",
      );
      is(
        await s.request("PATCH", "/api/v1/schemas/offline", {
          token: admin,
          body: { has_api: false },
        }),
        200,
        "has_api off",
      );
      for (
        const [method, path] of [
          ["GET", "/api/v1/entities/notes"],
          ["POST", "/api/v1/files/token"],
          ["POST", "/api/v1/auth/refresh"],
          ["POST", "/api/v1/auth/logout"],
        ]
      ) {
        is(
          await s.request(method, path, { token }),
          401,
          `${method} ${path}`,
        );
      }
      is(
        await s.request("PATCH", "/api/v1/schemas/offline", {
          token: admin,
          body: { has_api: true },
        }),
        200,
        "has_api on",
      );
      const r = await s.request("GET", `/api/v1/entities/offline/${u.id}`, {
        token,
      });
      is(r, 200, "accepted again (the token was never revoked)");
    },
  );
}

async function selfPromotion(t: Deno.TestContext, s: TestServer) {
  const admin = await s.adminToken();
  // An entity of its own: its update rule is replaced.
  await authEntity(s, "editors");
  const safe = "record.id == auth.id && req.body.role == null";
  is(
    await s.request("PATCH", "/api/v1/schemas/editors", {
      token: admin,
      body: { rules: { update: { mode: "custom", expr: safe } } },
    }),
    200,
    "safe update rule",
  );
  is(
    await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "articles",
        type: "base",
        fields: [{ name: "title", type: "string" }],
        rules: {
          add: { mode: "custom", expr: 'auth.user.role == "editor"' },
        },
      },
    }),
    201,
    "articles",
  );
  const u = await fastUser(s, "editors", { email: "eve@example.com" });
  const token = await issue(s, "editors", u.id);
  const path = `/api/v1/entities/editors/${u.id}`;

  await t.step("a user cannot set their own role", async () => {
    for (
      const body of [{ role: "editor" }, { name: "Eve", role: "editor" }]
    ) {
      const r = await patch(s, path, token, body);
      assert.ok(r.status === 404 || r.status === 403, r.text);
    }
    const form = new FormData();
    form.append("role", "editor");
    const m = await s.request("PATCH", path, { token, raw: form });
    assert.ok(m.status === 404 || m.status === 403, `multipart: ${m.text}`);
    const r = await s.request("GET", path, { token: admin });
    assert.equal(r.data.role, null, "role unchanged");
    is(
      await s.request("POST", "/api/v1/entities/articles", {
        token,
        body: { title: "x" },
      }),
      403,
      "still no editor",
    );
  });

  await t.step("the rest of the profile stays editable", async () => {
    const r = await patch(s, path, token, { name: "Eve" });
    is(r, 200, "name");
    assert.equal(r.data.name, "Eve");
  });

  await t.step("an admin can promote", async () => {
    is(await patch(s, path, admin, { role: "editor" }), 200, "promote");
    is(
      await s.request("POST", "/api/v1/entities/articles", {
        token,
        body: { title: "x" },
      }),
      201,
      "editor writes",
    );
  });
}

async function fileTokens(t: Deno.TestContext, s: TestServer) {
  const admin = await s.adminToken();
  is(
    await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "docs",
        type: "base",
        fields: [{ name: "doc", type: "file" }],
        rules: { get: { mode: "auth", expr: "" } },
      },
    }),
    201,
    "docs",
  );
  const form = new FormData();
  form.append("doc", new Blob(["secret"]), "a.txt");
  const up = await s.request("POST", "/api/v1/entities/docs", {
    token: admin,
    raw: form,
  });
  is(up, 201, "upload");
  const file = `/api/files/docs/${up.data.doc}`;
  const missing = "/api/files/docs/none_0123456789abcdef.txt";

  await t.step("garbage or revoked ?token= → 401, for any name", async () => {
    for (const path of [file, missing]) {
      const r = await s.request("GET", `${path}?token=garbage`);
      is(r, 401, `${path} garbage`);
      assert.ok(!r.text.includes("secret"));
    }
    const f = await fastUser(s, "users", { email: "f@example.com" });
    const token = await issue(s, "users", f.id);
    let r = await s.request("GET", `${file}?token=${token}`);
    assert.equal(r.text, "secret", "valid token");
    is(
      await s.request("POST", "/api/v1/auth/users/logout", { token }),
      200,
      "logout",
    );
    r = await s.request("GET", `${file}?token=${token}`);
    is(r, 401, "revoked ?token=");
    r = await s.request("GET", file);
    is(r, 404, "a guest still sees a missing file");
  });
}

async function legacyRoutes(t: Deno.TestContext, s: TestServer) {
  const admin = await s.adminToken();
  await t.step("an admin token → Route Not Found, not revoked", async () => {
    for (const path of ["/api/v1/auth/refresh", "/api/v1/auth/logout"]) {
      const r = await s.request("POST", path, { token: admin });
      assert.equal(r.text, ROUTE_NOT_FOUND, path);
    }
    is(
      await s.request("GET", "/api/v1/schemas", { token: admin }),
      200,
      "admin token still valid",
    );
  });

  await t.step("a user token works as on the scoped routes", async () => {
    const lg = await fastUser(s, "users", { email: "lg@example.com" });
    const token = await issue(s, "users", lg.id);
    const r = await s.request("POST", "/api/v1/auth/refresh", { token });
    is(r, 200, "legacy refresh");
    is(
      await s.request("POST", "/api/v1/auth/logout", {
        token: r.data.token,
      }),
      200,
      "legacy logout",
    );
    is(
      await s.request("POST", "/api/v1/auth/refresh", {
        token: r.data.token,
      }),
      401,
      "after logout",
    );
  });
}

forEachDb("auth hardening", async (t, db) => {
  // One server; each part stands alone (the parts that change an entity's
  // schema have an entity of their own).
  const s = await startServer(db, { trustProxy: true });
  try {
    await authEntity(s, "users");
    await t.step("sign-up throttle", (t) => signUpThrottle(t, s));
    await t.step(
      "account changes need the current password",
      (t) => accountChanges(t, s),
    );
    await t.step(
      "tokens of an auth entity without API",
      (t) => tokensWithoutApi(t, s),
    );
    await t.step(
      "the documented self-edit rule blocks self-promotion",
      (t) => selfPromotion(t, s),
    );
    await t.step("files: an invalid token is a 401", (t) => fileTokens(t, s));
    await t.step(
      "legacy refresh/logout apply the scoped checks",
      (t) => legacyRoutes(t, s),
    );
  } finally {
    await s.close();
  }
});
