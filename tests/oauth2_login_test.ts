/**
 * OAuth2 / OpenID Connect sign-in end to end, on both databases, against a
 * real OpenID provider (npm oidc-provider, tests/_oidc.ts): `methods` hands
 * out fresh state and PKCE values, the test signs an account in at the
 * provider and `login-oauth2` finds, links or creates the user. One
 * provider and one server per database; each step signs in accounts of its
 * own, from an address of its own (the login rate limit).
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
  startServer,
  type TestServer,
} from "./_server.ts";
import { fastUser, nextIp, USER_PW } from "./_auth_fixtures.ts";
import { type OidcServer, startMirror, startOidc } from "./_oidc.ts";

const REDIRECT = "http://127.0.0.1:9/callback";
const PICTURE = "https://img.example/alice.png";

const ACCOUNTS = {
  alice: {
    email: "alice@example.com",
    email_verified: true,
    name: "Alice A",
    picture: PICTURE,
  },
  alice2: { email: "alice2@example.com", email_verified: true },
  bob: { email: "bob@example.com", email_verified: true },
  carol: { email: "carol@example.com", email_verified: false },
  dave: { email: "dave@example.com", email_verified: false },
  erin: { email: "erin@example.com", email_verified: true },
  frank: { email: "frank@example.com", email_verified: true, name: "Frank" },
  gina: { email: "gina@example.com", email_verified: true },
  uv: { email: "uv@example.com", email_verified: false },
  vi: { email: "vi@example.com", email_verified: true },
  nomail: { name: "No Mail" },
};

function provider(name: string, issuer: string, client = "app") {
  return {
    name,
    display_name: name.toUpperCase(),
    issuer,
    client_id: client,
    client_secret: `${client}-secret`,
    scopes: ["openid", "email", "profile"],
  };
}

interface Link {
  name: string;
  display_name: string;
  auth_url: string;
  state: string;
  code_verifier: string;
  code_challenge: string;
  code_challenge_method: string;
}

async function methods(
  s: TestServer,
  entity: string,
  redirect = REDIRECT,
): Promise<Link[]> {
  const r = await s.request(
    "GET",
    `/api/v1/auth/${entity}/methods?redirect_url=${
      encodeURIComponent(redirect)
    }`,
  );
  assertStatus(r, 200);
  return r.data.oauth2.providers;
}

async function link(
  s: TestServer,
  entity: string,
  name: string,
): Promise<Link> {
  const l = (await methods(s, entity)).find((p) => p.name === name);
  assert(l, `methods lists ${name}`);
  return l;
}

function login(
  s: TestServer,
  entity: string,
  body: Record<string, unknown>,
  ip = nextIp(),
): Promise<Reply> {
  return s.request("POST", `/api/v1/auth/${entity}/login-oauth2`, {
    body,
    headers: { "x-forwarded-for": ip },
  });
}

/** Signs `account` in at `idp` through `entity`'s provider `name`. */
async function signIn(
  s: TestServer,
  idp: OidcServer,
  entity: string,
  name: string,
  account: string,
): Promise<{ reply: Reply; body: Record<string, unknown> }> {
  const l = await link(s, entity, name);
  const back = await idp.authorize(l.auth_url, account);
  assertEquals(back.state, l.state, "the provider returns the state");
  const body = {
    provider: name,
    code: back.code,
    code_verifier: l.code_verifier,
    redirect_url: REDIRECT,
    state: back.state,
  };
  return { reply: await login(s, entity, body), body };
}

function refused(r: Reply, status: number, pattern: RegExp): void {
  assertStatus(r, status);
  assert(
    pattern.test(r.error),
    `error ${JSON.stringify(r.error)} matches ${pattern}`,
  );
}

forEachDb("oauth2: sign-in with a real OpenID provider", async (t, db) => {
  const clients = [
    {
      client_id: "app",
      client_secret: "app-secret",
      redirect_uris: [REDIRECT],
    },
    {
      client_id: "other",
      client_secret: "other-secret",
      redirect_uris: [REDIRECT],
    },
  ];
  const idp = await startOidc({ clients, accounts: ACCOUNTS });
  // Claims in the id token itself (no userinfo call).
  const idp2 = await startOidc({
    clients,
    accounts: ACCOUNTS,
    conformIdTokenClaims: false,
  });
  const otherIssuer = await startMirror(idp.issuer);
  const otherAudience = await startMirror(idp.issuer, {
    id: "other",
    secret: "other-secret",
  });
  const flaky = await startMirror(idp.issuer);
  // The gitlab preset stands for a provider whose token endpoint uses
  // another client's credentials: id tokens of the real issuer, for the
  // audience "other".
  const doc =
    await (await fetch(`${idp.issuer}/.well-known/openid-configuration`))
      .json();
  const s = await startServer(db, {
    trustProxy: true,
    oauth2: {
      limits: { timeoutMs: 1500 },
      presets: {
        gitlab: {
          kind: "oidc",
          issuer: idp.issuer,
          authorization: doc.authorization_endpoint,
          token: `${otherAudience.issuer}/token`,
          jwks: doc.jwks_uri,
          userinfo: doc.userinfo_endpoint,
          algorithms: ["RS256"],
          basicAuth: true,
          defaultScopes: ["openid", "email"],
        },
      },
    },
  });
  const admin = await s.adminToken();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const downIssuer = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}`;
  closed.close();
  try {
    const schema = async (name: string, add: string, providers: unknown[]) => {
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name,
          type: "auth",
          fields: [
            { name: "name", type: "string" },
            { name: "avatar", type: "url" },
          ],
          rules: {
            add: { mode: add, expr: "" },
            get: { mode: "auth", expr: "" },
          },
          auth: {
            oauth2: {
              enabled: true,
              providers,
              fields: { name: "name", avatar: "avatar" },
            },
          },
        },
      });
      assertStatus(r, 201);
    };
    await schema("members", "public", [
      provider("idp", idp.issuer),
      provider("idp2", idp2.issuer),
      provider("otheriss", otherIssuer.issuer),
      { ...provider("otheraud", ""), preset: "gitlab" },
      provider("flaky", flaky.issuer),
      provider("down", downIssuer),
    ]);
    await schema("staff", "", [provider("idp", idp.issuer)]);

    await t.step(
      "methods: fresh state and PKCE S256 values on every call; a down issuer is left out",
      async () => {
        const [a, b] = [
          await methods(s, "members"),
          await methods(s, "members"),
        ];
        assertEquals(
          a.map((p) => p.name),
          ["idp", "idp2", "otheriss", "otheraud", "flaky"],
        );
        const l = a[0];
        assertEquals(l.display_name, "IDP");
        assertEquals(l.code_challenge_method, "S256");
        assertEquals(
          l.code_challenge,
          createHash("sha256").update(l.code_verifier).digest("base64url"),
        );
        assert(
          l.code_verifier !== b[0].code_verifier && l.state !== b[0].state,
        );
        const url = new URL(l.auth_url);
        assert(url.href.startsWith(`${idp.issuer}/auth?`), url.href);
        const q = url.searchParams;
        assertEquals(
          [
            q.get("client_id"),
            q.get("response_type"),
            q.get("state"),
            q.get("code_challenge"),
            q.get("code_challenge_method"),
            q.get("redirect_uri"),
            q.get("scope"),
          ],
          [
            "app",
            "code",
            l.state,
            l.code_challenge,
            "S256",
            REDIRECT,
            "openid email profile",
          ],
        );
        assert((q.get("nonce") ?? "").length >= 43, "a nonce");
        // Without a redirect URL, the client appends its own.
        const r = await s.request("GET", "/api/v1/auth/members/methods");
        assert(r.data.oauth2.providers[0].auth_url.endsWith("&redirect_uri="));
        // OAuth2 off: no providers.
        const off = await s.request("GET", "/api/v1/auth/staff/methods");
        assertStatus(off, 200);
      },
    );

    let alice = "";
    await t.step(
      "a new user: created with the provider's verified email, name and avatar (is_new)",
      async () => {
        const { reply } = await signIn(s, idp, "members", "idp", "alice");
        assertStatus(reply, 200);
        assertEquals(reply.data.meta, { is_new: true });
        const u = reply.data.user;
        assertEquals(
          [u.email, u.verified, u.name, u.avatar, u.password],
          ["alice@example.com", true, "Alice A", PICTURE, undefined],
        );
        alice = u.id;
        // The token is a session of the user.
        const me = await s.request("GET", `/api/v1/entities/members/${alice}`, {
          token: reply.data.token,
        });
        assertStatus(me, 200);
        // Created through the record write path: realtime journaled it.
        const events = await s.app.storage.query(
          `SELECT "action" FROM "mb_events" WHERE "record_id" = ?`,
          [alice],
        );
        assert(events.length >= 1, "a realtime event for the new user");
      },
    );

    await t.step(
      "the next sign-in finds the user by its link, even after the email changed at the provider",
      async () => {
        idp.accounts.set("alice", {
          ...ACCOUNTS.alice,
          email: "alice.new@example.com",
        });
        const { reply } = await signIn(s, idp, "members", "idp", "alice");
        assertStatus(reply, 200);
        assertEquals([reply.data.meta.is_new, reply.data.user.id], [
          false,
          alice,
        ]);
        assertEquals(reply.data.user.email, "alice@example.com");
      },
    );

    await t.step(
      "claims in the id token itself (no userinfo) work the same",
      async () => {
        const { reply } = await signIn(s, idp2, "members", "idp2", "frank");
        assertStatus(reply, 200);
        assertEquals(
          [reply.data.meta.is_new, reply.data.user.email, reply.data.user.name],
          [true, "frank@example.com", "Frank"],
        );
      },
    );

    await t.step(
      "a verified email links to the existing user, who becomes verified and loses the old password",
      async () => {
        // Seeded with a precomputed hash (no scrypt); not verified yet.
        const bob = await fastUser(s, "members", { email: "bob@example.com" });
        assertEquals(bob.verified, false);
        const { reply } = await signIn(s, idp, "members", "idp", "bob");
        assertStatus(reply, 200);
        assertEquals(
          [
            reply.data.meta.is_new,
            reply.data.user.id,
            reply.data.user.verified,
          ],
          [false, bob.id, true],
        );
        const old = await s.request("POST", "/api/v1/auth/members/login", {
          body: { identity: "bob@example.com", password: USER_PW },
          headers: { "x-forwarded-for": nextIp() },
        });
        assertStatus(old, 401);
      },
    );

    await t.step(
      "an unverified email never links: a taken one is refused (409), a free one makes an unverified user",
      async () => {
        const carol = await fastUser(s, "members", {
          email: "carol@example.com",
        });
        assertEquals(carol.verified, false);
        const { reply } = await signIn(s, idp, "members", "idp", "carol");
        refused(
          reply,
          409,
          /the provider has not verified the email, so it is not linked/,
        );
        const links = await s.app.storage.query(
          `SELECT "user_id" FROM "mb_oauth2_links" WHERE "user_id" = ?`,
          [carol.id],
        );
        assertEquals(links.length, 0);
        const dave = await signIn(s, idp, "members", "idp", "dave");
        assertStatus(dave.reply, 200);
        assertEquals(
          [dave.reply.data.meta.is_new, dave.reply.data.user.verified],
          [true, false],
        );
        const none = await signIn(s, idp, "members", "idp", "nomail");
        refused(none.reply, 403, /the provider gave no email address/);
      },
    );

    await t.step(
      "a wrong state, a replay, a wrong or forged code_verifier are refused (401)",
      async () => {
        const l = await link(s, "members", "idp");
        const back = await idp.authorize(l.auth_url, "gina");
        const body = {
          provider: "idp",
          code: back.code,
          code_verifier: l.code_verifier,
          redirect_url: REDIRECT,
        };
        refused(
          await login(s, "members", {
            ...body,
            state: (await link(s, "members", "idp")).state,
          }),
          401,
          /the state is not the one of this sign-in/,
        );
        // Another sign-in's verifier (made here, unspent) does not fit the code.
        const other = await link(s, "members", "idp");
        refused(
          await login(s, "members", {
            ...body,
            code_verifier: other.code_verifier,
          }),
          401,
          /the provider refused the code \(invalid_grant/,
        );
        const forged = "A".repeat(71);
        refused(
          await login(s, "members", { ...body, code_verifier: forged }),
          401,
          /the code_verifier was not issued by this server/,
        );
        // Bound to the provider: the same verifier for another provider.
        refused(
          await login(s, "members", { ...body, provider: "idp2" }),
          401,
          /not issued by this server for this provider/,
        );
        // The code was spent by the wrong verifier's attempt (the provider
        // burns it): start again, sign in, then replay.
        const ok = await signIn(s, idp, "members", "idp", "gina");
        assertStatus(ok.reply, 200);
        refused(
          await login(s, "members", ok.body),
          401,
          /this sign-in \(its code_verifier\) was already used/,
        );
      },
    );

    await t.step(
      "an id token of another issuer or another audience is refused (401)",
      async () => {
        const iss = await signIn(s, idp, "members", "otheriss", "erin");
        refused(iss.reply, 401, /the id token is invalid \(iss/);
        // The code is issued to client "other", whose credentials the
        // misbehaving issuer uses: the id token's audience is "other".
        const l = await link(s, "members", "otheraud");
        const url = new URL(l.auth_url);
        url.searchParams.set("client_id", "other");
        const back = await idp.authorize(url.toString(), "erin");
        const aud = await login(s, "members", {
          provider: "otheraud",
          code: back.code,
          code_verifier: l.code_verifier,
          redirect_url: REDIRECT,
        });
        refused(aud, 401, /the id token is invalid \(aud/);
      },
    );

    await t.step(
      "a guest who may not add: no new user (403)",
      async () => {
        const { reply } = await signIn(s, idp, "staff", "idp", "erin");
        refused(reply, 403, /staff does not let guests sign up/);
        const count = await s.app.storage.query(
          `SELECT COUNT(*) AS n FROM "staff"`,
        );
        assertEquals(Number(count[0].n), 0);
      },
    );

    await t.step(
      "a provider that is down or slow: 502 with the reason, soon",
      async () => {
        // The token endpoint does not answer.
        flaky.hang = true;
        const slow = await signIn(s, idp, "members", "flaky", "erin");
        refused(
          slow.reply,
          502,
          /^Cannot log in with flaky: the token endpoint did not answer within 1\.5 s/,
        );
        // The issuer is gone (and its document no longer cached).
        const l = await link(s, "members", "flaky");
        await flaky.close();
        s.app.oauth2.resolver.forget();
        const down = await login(s, "members", {
          provider: "flaky",
          code: "whatever",
          code_verifier: l.code_verifier,
          redirect_url: REDIRECT,
        });
        refused(
          down,
          502,
          /^Cannot log in with flaky: the discovery document .* could not be reached/,
        );
      },
    );

    await t.step(
      "bad bodies: 400 naming the fields; OAuth2 off: 403; not an auth entity: 404",
      async () => {
        const r = await login(s, "members", { provider: "nope", code: "" });
        assertStatus(r, 400);
        assertEquals(
          Object.keys(r.data.fields).sort(),
          ["code", "code_verifier", "redirect_url"],
        );
        const unknown = await login(s, "members", {
          provider: "nope",
          code: "c",
          code_verifier: "A".repeat(71),
          redirect_url: REDIRECT,
        });
        assertStatus(unknown, 400);
        assertEquals(Object.keys(unknown.data.fields), ["provider"]);
        const plain = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: { name: "plain", type: "auth", fields: [] },
        });
        assertStatus(plain, 201);
        refused(await login(s, "plain", {}), 403, /does not offer it/);
        const nf = await login(s, "nosuch", {});
        assertEquals([nf.status, nf.error], [404, "Route Not Found"]);
      },
    );

    await t.step(
      "MFA: OAuth2 is a first login (401 {mfa_id}) and a second one (with mfa_id)",
      async () => {
        const r = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "secure",
            type: "auth",
            fields: [],
            auth: {
              mfa: { enabled: true },
              oauth2: {
                enabled: true,
                providers: [provider("idp", idp.issuer)],
              },
            },
          },
        });
        assertStatus(r, 201);
        const passwordLogin = (identity: string, mfaId?: string) =>
          s.request("POST", "/api/v1/auth/secure/login", {
            body: { identity, password: USER_PW, mfa_id: mfaId },
            headers: { "x-forwarded-for": nextIp() },
          });
        const oauthBody = async (account: string) => {
          const l = await link(s, "secure", "idp");
          const back = await idp.authorize(l.auth_url, account);
          return {
            provider: "idp",
            code: back.code,
            code_verifier: l.code_verifier,
            redirect_url: REDIRECT,
            state: back.state,
          };
        };
        // A verified user: password first, OAuth2 second, and back.
        const alice = await fastUser(s, "secure", {
          email: "alice2@example.com",
        });
        assertStatus(
          await s.request("PATCH", `/api/v1/entities/secure/${alice.id}`, {
            token: admin,
            body: { verified: true },
          }),
          200,
        );
        const first = await passwordLogin("alice2@example.com");
        assertStatus(first, 401);
        const second = await login(s, "secure", {
          ...await oauthBody("alice2"),
          mfa_id: first.data.mfa_id,
        });
        assertStatus(second, 200);
        assertEquals(second.data.user.id, alice.id);
        const again = await signIn(s, idp, "secure", "idp", "alice2");
        assertStatus(again.reply, 401);
        assertEquals(Object.keys(again.reply.data), ["mfa_id"]);
        const done = await passwordLogin(
          "alice2@example.com",
          again.reply.data.mfa_id,
        );
        assertStatus(done, 200);
        assertEquals(done.data.user.id, alice.id);
        // An unverified user: linking replaces the password the first login
        // proved, so that first login no longer counts (the password change
        // removes the user's pending second factors).
        await fastUser(s, "secure", { email: "gina@example.com" });
        const byPassword = await passwordLogin("gina@example.com");
        assertStatus(byPassword, 401);
        const linked = await login(s, "secure", {
          ...await oauthBody("gina"),
          mfa_id: byPassword.data.mfa_id,
        });
        refused(linked, 401, /invalid or expired mfa_id/);
      },
    );

    await t.step(
      "require_verified: an unverified email gets 403 after the provider vouched for the account",
      async () => {
        const id = (await s.request("GET", "/api/v1/schemas/members", {
          token: admin,
        })).data.id;
        const set = (on: boolean) =>
          s.request("PATCH", `/api/v1/schemas/${id}`, {
            token: admin,
            body: { auth: { require_verified: on } },
          });
        assertStatus(await set(true), 200);
        try {
          const uv = await signIn(s, idp, "members", "idp", "uv");
          assertEquals([uv.reply.status, uv.reply.error], [
            403,
            "Cannot log in: email not verified",
          ]);
          const vi = await signIn(s, idp, "members", "idp", "vi");
          assertStatus(vi.reply, 200);
          assertEquals(vi.reply.data.user.verified, true);
        } finally {
          assertStatus(await set(false), 200);
        }
      },
    );

    await t.step("the login rate limit covers login-oauth2", async () => {
      const ip = nextIp();
      let last: Reply | undefined;
      for (let i = 0; i < 6; i++) last = await login(s, "members", {}, ip);
      assertStatus(last!, 429);
      assertEquals(last!.headers.get("x-ratelimit-limit"), "5");
      assert(last!.headers.get("retry-after"));
    });
  } finally {
    await s.close();
    await otherIssuer.close();
    await otherAudience.close();
    await flaky.close();
    await idp.close();
    await idp2.close();
  }
});
