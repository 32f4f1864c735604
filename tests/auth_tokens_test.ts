/**
 * Tokens and sessions (docs/reference/auth.md and
 * docs/operations/security.md): HS256 claims and
 * lifetime, the `tokenTtl` setting, expiry, forged and tampered tokens, file
 * tokens, tokens of logged-out or deleted users; refresh and logout, scoped
 * (`/api/v1/auth/<entity>/refresh|logout`) and legacy (the entity taken from
 * the token): a refresh revokes the old token, a logout only the token it is
 * called with, and a token never works on another entity's routes.
 *
 * @module
 */

import { SignJWT, UnsecuredJWT } from "jose";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import {
  assertTokenRejected,
  assertTokenWorks,
  AUTH,
  b64urlDecode,
  b64urlEncode,
  claimsOf,
  createSchema,
  fastUser,
  fixtureAdmin,
  headerOf,
  issue,
  nowSec,
  probe,
  PUBLIC,
  userToken,
  withAuthServer,
} from "./_auth_fixtures.ts";
import { ShiftedClock } from "./_wait.ts";

/** Claims, `tokenTtl`, file tokens, logged-out and deleted users. */
async function claimsAndRevocation(
  t: Deno.TestContext,
  s: TestServer,
  admin: string,
): Promise<void> {
  // Each step creates its own users; none reads another's.
  await t.step(
    "claims sub/entity/jti/iat/exp, HS256, 1 h by default",
    async () => {
      const { id } = await fastUser(s, "users", {
        email: "claims@example.com",
      });
      const before = nowSec();
      const tok = await issue(s, "users", id);
      const after = nowSec();
      assertEquals(headerOf(tok).alg, "HS256");
      const c = claimsOf(tok);
      assertEquals(c.sub, id);
      assertEquals(c.entity, "users");
      assert(
        typeof c.jti === "string" && c.jti.length >= 16,
        `jti ${c.jti}`,
      );
      assert(c.iat >= before - 1 && c.iat <= after + 1, `iat ${c.iat}`);
      assertEquals(c.exp - c.iat, 3600);
      const tok2 = await issue(s, "users", id);
      assert(claimsOf(tok2).jti !== c.jti, "each token has its own jti");
      await assertTokenWorks(s, id, tok, "fresh token");
      // Admin tokens carry the same claims.
      const a = claimsOf(admin);
      assertEquals(a.entity, "mb_admins");
      assertEquals(a.exp - a.iat, 3600);
    },
  );

  await t.step("tokenTtl configures the lifetime", async () => {
    const short = await startServer(s.db, {
      trustProxy: true,
      tokenTtl: 120,
    });
    try {
      const sa = await fixtureAdmin(short);
      await createSchema(short, sa, {
        name: "users",
        type: "auth",
        rules: { add: PUBLIC, get: AUTH },
      });
      await fastUser(short, "users", { email: "ttl@example.com" });
      const tok = await userToken(short, "users", "ttl@example.com");
      const c = claimsOf(tok);
      assertEquals(c.exp - c.iat, 120);
      assertEquals(claimsOf(sa).exp - claimsOf(sa).iat, 120);
      const r = await short.request("POST", "/api/v1/auth/users/refresh", {
        token: tok,
      });
      assertStatus(r, 200);
      const n = claimsOf(r.data.token);
      assertEquals(n.exp - n.iat, 120);
    } finally {
      await short.close();
    }
  });

  await t.step(
    "a file token opens no API route and cannot be refreshed",
    async () => {
      const { id } = await fastUser(s, "users", {
        email: "ft@example.com",
      });
      const tok = await issue(s, "users", id);
      let r = await s.request("POST", "/api/v1/files/token", {
        token: tok,
      });
      assertStatus(r, 200);
      const ft = r.data.token;
      const c = claimsOf(ft);
      assertEquals(c.sub, id);
      assert(c.exp - c.iat <= 120, `short-lived: ${c.exp - c.iat}`);
      await assertTokenRejected(s, id, ft, "file token on a record route");
      for (
        const path of [
          "/api/v1/auth/users/refresh",
          "/api/v1/auth/refresh",
          "/api/v1/auth/users/logout",
          "/api/v1/files/token",
        ]
      ) {
        r = await s.request("POST", path, { token: ft });
        assertStatus(r, 401, `file token on ${path}`);
      }
    },
  );

  await t.step("revoked and deleted-user tokens → 401", async () => {
    // Bob reads Ada's record (get rule `auth`) with his tokens.
    const { id } = await fastUser(s, "users", {
      email: "ada2@example.com",
    });
    const bob = await fastUser(s, "users", { email: "bob2@example.com" });
    const tok = await issue(s, "users", bob.id);
    await assertTokenWorks(s, id, tok, "bob before logout");
    let r = await s.request("POST", "/api/v1/auth/users/logout", {
      token: tok,
    });
    assertStatus(r, 200);
    await assertTokenRejected(s, id, tok, "revoked");
    const bobTok = await issue(s, "users", bob.id);
    await assertTokenWorks(s, id, bobTok, "bob new token");
    r = await s.request("DELETE", `/api/v1/entities/users/${bob.id}`, {
      token: admin,
    });
    assertStatus(r, 204);
    await assertTokenRejected(s, id, bobTok, "deleted user");
    r = await s.request("POST", "/api/v1/auth/users/refresh", {
      token: bobTok,
    });
    assertStatus(r, 401, "deleted user cannot refresh");
  });
}

/** What a forged-token row may build its token from. */
interface ForgeKit {
  /** A token signed with `secret` (the right one by default). */
  forge(
    claims?: Record<string, unknown>,
    alg?: string,
    secret?: string,
  ): Promise<string>;
  /** Ada's id (the record every user row reads). */
  id: string;
  bobId: string;
  adminId: string;
  /** The parts of a genuine token of Ada's. */
  real: { h: string; p: string; sig: string; payload: Record<string, unknown> };
}

/** One refused token: on Ada's record, or on an admin route. */
interface ForgedCase {
  name: string;
  token?: (k: ForgeKit) => string | Promise<string>;
  /** An Authorization header other than `Bearer <token>`. */
  authorization?: (k: ForgeKit) => string;
  admin?: boolean;
}

/** An `alg: none` token that would be valid for 10 minutes. */
const unsecured = (entity: string, sub: string) =>
  new UnsecuredJWT({ entity })
    .setSubject(sub)
    .setJti(crypto.randomUUID())
    .setIssuedAt(nowSec())
    .setExpirationTime(nowSec() + 600)
    .encode();
/** Ada's genuine token with claims changed and its signature kept. */
const withPayload = (k: ForgeKit, change: Record<string, unknown>) =>
  `${k.real.h}.${
    b64urlEncode(JSON.stringify({ ...k.real.payload, ...change }))
  }.${k.real.sig}`;

const FORGED_CASES: ForgedCase[] = [
  {
    name: "expired",
    token: (k) => k.forge({ iat: nowSec() - 7200, exp: nowSec() - 3600 }),
  },
  {
    name: "just expired",
    token: (k) => k.forge({ iat: nowSec() - 100, exp: nowSec() - 1 }),
  },
  {
    name: "other secret",
    token: (k) =>
      k.forge({}, "HS256", "another-secret-0123456789-abcdefghijkl"),
  },
  { name: "HS512", token: (k) => k.forge({}, "HS512") },
  { name: "alg none", token: (k) => unsecured("users", k.id) },
  {
    name: "alg none that claims to be an admin",
    token: (k) => unsecured("mb_admins", k.adminId),
    admin: true,
  },
  // Tampered: a genuine token with a claim changed, signature kept.
  { name: "tampered sub", token: (k) => withPayload(k, { sub: k.bobId }) },
  {
    name: "tampered to admin",
    token: (k) => withPayload(k, { sub: k.adminId, entity: "mb_admins" }),
    admin: true,
  },
  {
    name: "tampered exp",
    token: (k) => withPayload(k, { exp: Number(k.real.payload.exp) + 86400 }),
  },
  {
    name: "bad signature",
    token: (k) =>
      `${k.real.h}.${k.real.p}.${
        (k.real.sig[0] === "A" ? "B" : "A") + k.real.sig.slice(1)
      }`,
  },
  { name: "no signature", token: (k) => `${k.real.h}.${k.real.p}.` },
  { name: "garbage", token: () => "garbage" },
  {
    name: "alg none header on a genuine payload",
    token: (k) =>
      `${b64urlEncode(JSON.stringify({ alg: "none" }))}.${k.real.p}.`,
  },
  {
    name: "no exp",
    token: (k) =>
      new SignJWT({ entity: "users" })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(k.id)
        .setJti(crypto.randomUUID())
        .setIssuedAt(nowSec())
        .sign(new TextEncoder().encode(TEST_JWT_SECRET)),
  },
  {
    name: "user id as an admin",
    token: (k) => k.forge({ entity: "mb_admins" }),
  },
  { name: "non-auth entity", token: (k) => k.forge({ entity: "posts" }) },
  { name: "missing entity", token: (k) => k.forge({ entity: "nope" }) },
  // No or malformed Authorization header on a route that needs a token.
  { name: "guest" },
  {
    name: "not Bearer",
    authorization: (k) => `Basic ${k.real.h}.${k.real.p}.${k.real.sig}`,
  },
];

/** Forged and tampered tokens, one row each (scenario table). */
async function forgedTokens(
  t: Deno.TestContext,
  s: TestServer,
  admin: string,
): Promise<void> {
  // The rows only read Ada's record and the schema list: they share the
  // users and the genuine token made here.
  const ada = await fastUser(s, "users", { email: "victim@example.com" });
  const bob = await fastUser(s, "users", { email: "bob@example.com" });
  const genuine = await issue(s, "users", ada.id);
  const [h, p, sig] = genuine.split(".");
  const kit: ForgeKit = {
    forge(claims = {}, alg = "HS256", secret = TEST_JWT_SECRET) {
      const now = nowSec();
      return new SignJWT({ entity: "users", ...claims })
        .setProtectedHeader({ alg, typ: "JWT" })
        .setSubject(String(claims.sub ?? ada.id))
        .setJti(crypto.randomUUID())
        .setIssuedAt(Number(claims.iat ?? now))
        .setExpirationTime(Number(claims.exp ?? now + 600))
        .sign(new TextEncoder().encode(secret));
    },
    id: ada.id,
    bobId: bob.id,
    adminId: claimsOf(admin).sub,
    real: { h, p, sig, payload: JSON.parse(b64urlDecode(p)) },
  };
  // Used once, so a verification cache holds the genuine token.
  await assertTokenWorks(s, ada.id, genuine, "genuine (and now cached)");

  await t.step("a token forged with the right secret works", async () => {
    await assertTokenWorks(s, ada.id, await kit.forge(), "control");
  });

  for (const c of FORGED_CASES) {
    await t.step(c.name, async () => {
      const token = c.token ? await c.token(kit) : undefined;
      if (c.admin) {
        const r = await s.request("GET", "/api/v1/schemas", { token });
        assertStatus(r, 401, c.name);
      } else if (c.authorization) {
        const r = await s.request(
          "GET",
          `/api/v1/entities/users/${ada.id}`,
          {
            headers: { authorization: c.authorization(kit) },
          },
        );
        assertStatus(r, 401, c.name);
      } else if (token === undefined) {
        assertStatus(await probe(s, ada.id), 401, c.name);
      } else {
        await assertTokenRejected(s, ada.id, token, c.name);
      }
      // The genuine token is unaffected.
      await assertTokenWorks(s, ada.id, genuine, "genuine still works");
    });
  }
}

forEachDb(
  "auth tokens: a token stops working when it expires",
  async (_t, db) => {
    // Fake time: the app's clock is moved past the lifetime, not waited for.
    const clock = new ShiftedClock();
    const s = await startServer(db, {
      trustProxy: true,
      tokenTtl: 60,
      clock: clock.now,
    });
    try {
      await s.app.schemas.create({
        name: "users",
        type: "auth",
        fields: [],
        rules: { add: PUBLIC, get: AUTH },
      });
      const u = await fastUser(s, "users", { email: "exp@example.com" });
      const tok = await issue(s, "users", u.id);
      const c = claimsOf(tok);
      assertEquals(c.exp - c.iat, 60);
      // Used while valid (so a verification cache would hold it), then expired.
      const first = await probe(s, u.id, tok);
      assertStatus(first, 200, "before it expires");
      assertEquals(first.data.id, u.id);
      // Moved relative to the token's own `exp` (its `iat` is a whole
      // second, up to a second before the issue), not by a fixed amount.
      clock.advance(c.exp * 1000 - 5_000 - clock.now());
      assertStatus(await probe(s, u.id, tok), 200, "seconds before expiry");
      clock.advance(10_000);
      await assertTokenRejected(s, u.id, tok, "expired real token");
      const r = await s.request("POST", "/api/v1/auth/users/refresh", {
        token: tok,
      });
      assertStatus(r, 401, "expired token cannot refresh");
    } finally {
      await s.close();
    }
  },
);

/** A token refused on another entity's session route. */
interface CrossCase {
  name: string;
  path: string;
  holder: "users" | "members" | "admin";
}

const CROSS_CASES: CrossCase[] = ["refresh", "logout"].flatMap((op) => [
  {
    name: `users token on members/${op}`,
    path: `/api/v1/auth/members/${op}`,
    holder: "users" as const,
  },
  {
    name: `members token on users/${op}`,
    path: `/api/v1/auth/users/${op}`,
    holder: "members" as const,
  },
  {
    name: `admin token on users/${op}`,
    path: `/api/v1/auth/users/${op}`,
    holder: "admin" as const,
  },
  {
    name: `user token on sys/admins/${op}`,
    path: `/api/v1/sys/admins/${op}`,
    holder: "users" as const,
  },
]);

/** Scoped and legacy refresh and logout; tokens on other entities. */
async function refreshAndLogout(
  t: Deno.TestContext,
  s: TestServer,
  admin: string,
): Promise<void> {
  // Ada and a member are seeded once and only read; every step issues the
  // tokens it revokes, so no step depends on another.
  const ada = await fastUser(s, "users", {
    email: "ada@example.com",
    name: "Ada",
  });
  const member = await fastUser(s, "members", { email: "mem@example.com" });
  const id = ada.id;
  const adminId = claimsOf(admin).sub;

  for (
    const [label, base] of [
      ["scoped", "/api/v1/auth/users"],
      ["legacy", "/api/v1/auth"],
    ]
  ) {
    await t.step(
      `${label} refresh → {token, user}; old token revoked`,
      async () => {
        const old = await issue(s, "users", id);
        const r = await s.request("POST", `${base}/refresh`, {
          token: old,
        });
        assertStatus(r, 200);
        assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
        assertEquals(r.data.user.id, id);
        assertEquals(r.data.user.name, "Ada");
        assert(!("password" in r.data.user));
        const o = claimsOf(old), n = claimsOf(r.data.token);
        assert(r.data.token !== old, "a new token");
        assert(n.jti !== o.jti, "a new jti");
        assert(n.exp >= o.exp, `later expiry: ${n.exp} >= ${o.exp}`);
        assertEquals(n.exp - n.iat, 3600);
        assertEquals(n.sub, id);
        assertEquals(n.entity, "users");
        await assertTokenRejected(s, id, old, "old token after refresh");
        await assertTokenWorks(s, id, r.data.token, "new token");
        const again = await s.request("POST", `${base}/refresh`, {
          token: old,
        });
        assertStatus(again, 401, "refresh with the old token");
        // Logout with the new one.
        const out = await s.request("POST", `${base}/logout`, {
          token: r.data.token,
        });
        assertStatus(out, 200);
        assertEquals(out.body, { status: 200, data: null, error: "" });
        await assertTokenRejected(s, id, r.data.token, "after logout");
        const twice = await s.request("POST", `${base}/logout`, {
          token: r.data.token,
        });
        assertStatus(twice, 401, "logout twice");
        const ref = await s.request("POST", `${base}/refresh`, {
          token: r.data.token,
        });
        assertStatus(ref, 401, "refresh after logout");
        // Without a token.
        assertStatus(await s.request("POST", `${base}/refresh`), 401);
        assertStatus(await s.request("POST", `${base}/logout`), 401);
      },
    );
  }

  await t.step(
    "logout of one token leaves the user's other tokens alone",
    async () => {
      const a = await issue(s, "users", id);
      const b = await issue(s, "users", id);
      const r = await s.request("POST", "/api/v1/auth/users/logout", {
        token: a,
      });
      assertStatus(r, 200);
      await assertTokenRejected(s, id, a, "logged out");
      await assertTokenWorks(s, id, b, "other session");
    },
  );

  /** Asserts a token of `holder` still works. */
  const stillWorks = async (holder: CrossCase["holder"], token: string) => {
    if (holder === "admin") {
      const r = await s.request("GET", "/api/v1/schemas", { token });
      assertStatus(r, 200, "admin token intact");
    } else {
      await assertTokenWorks(s, id, token, `${holder} token intact`);
    }
  };

  for (const c of CROSS_CASES) {
    await t.step(`401, nothing revoked: ${c.name}`, async () => {
      const token = c.holder === "admin"
        ? await issue(s, "mb_admins", adminId)
        : await issue(s, c.holder, c.holder === "users" ? id : member.id);
      const r = await s.request("POST", c.path, { token });
      assertStatus(r, 401, c.name);
      assertEquals(r.body?.data, null);
      await stillWorks(c.holder, token);
    });
  }

  await t.step("a member's token refreshes on its own entity", async () => {
    const mt = await issue(s, "members", member.id);
    const ok = await s.request("POST", "/api/v1/auth/members/refresh", {
      token: mt,
    });
    assertStatus(ok, 200);
    assertEquals(ok.data.user.id, member.id);
    assertEquals(claimsOf(ok.data.token).entity, "members");
  });

  await t.step(
    "legacy refresh/logout take the entity from the token",
    async () => {
      const mt = await issue(s, "members", member.id);
      const r = await s.request("POST", "/api/v1/auth/refresh", {
        token: mt,
      });
      assertStatus(r, 200);
      assertEquals(r.data.user.id, member.id);
      assertEquals(claimsOf(r.data.token).entity, "members");
      const out = await s.request("POST", "/api/v1/auth/logout", {
        token: r.data.token,
      });
      assertStatus(out, 200);
      const after = await s.request("POST", "/api/v1/auth/refresh", {
        token: r.data.token,
      });
      assertStatus(after, 401);
    },
  );
}

forEachDb(
  "auth tokens and sessions",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // Each group creates its own users (distinct emails) and tokens.
      await t.step(
        "claims, lifetime, file tokens, revocation",
        (t) => claimsAndRevocation(t, s, admin),
      );
      await t.step(
        "forged and tampered tokens → 401",
        (t) => forgedTokens(t, s, admin),
      );
      await t.step("refresh and logout", (t) => refreshAndLogout(t, s, admin));
    }),
);
