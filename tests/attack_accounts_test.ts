/**
 * Attacks on the accounts foundation and OAuth2 sign-in (issue 30), on both
 * databases: write-only secrets that could be sent elsewhere, a provider's
 * unverified email passing as verified, pre-hijacked accounts kept through
 * an OAuth2 link, Unicode emails folding into another address, and a
 * provider's malformed key set. A real OpenID provider (tests/_oidc.ts)
 * runs the sign-ins it can; an issuer of the test's own (`startForger`)
 * signs the id tokens a real provider would not.
 *
 * @module
 */

import { exportJWK, generateKeyPair, SignJWT } from "jose";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { fastUser, nextIp } from "./_auth_fixtures.ts";
import { type OidcServer, startOidc } from "./_oidc.ts";
import { startSmtp } from "./_smtp.ts";
import {
  account,
  FAST_MAIL,
  nthMailTo,
  tokenOf,
  useSmtp,
} from "./_account_fixtures.ts";

const REDIRECT = "http://127.0.0.1:9/callback";

/** An issuer that signs whatever id token and key set a step asks for. */
interface Forger {
  readonly issuer: (n: number) => string;
  /** The claims of the next id token of issuer `n` (iss, aud, nonce… filled in). */
  claims: Map<number, Record<string, unknown>>;
  /** The key set of issuer `n` (default: the signing key's). */
  jwks: Map<number, unknown>;
  /** Userinfo answers of issuer `n`. */
  userinfo: Map<number, Record<string, unknown>>;
  /** The nonce of the sign-in in flight, per issuer. */
  nonces: Map<number, string>;
  close(): Promise<void>;
}

/** One RS256 key pair per test process (RSA key generation is slow-ish). */
let forgerKeys: ReturnType<typeof generateKeyPair> | undefined;

async function startForger(): Promise<Forger> {
  forgerKeys ??= generateKeyPair("RS256", { extractable: true });
  const { privateKey, publicKey } = await forgerKeys;
  const pub = {
    ...(await exportJWK(publicKey)),
    kid: "k1",
    use: "sig",
    alg: "RS256",
  };
  let base = "";
  const f = {
    issuer: (n: number) => `${base}/i${n}`,
    claims: new Map<number, Record<string, unknown>>(),
    jwks: new Map<number, unknown>(),
    userinfo: new Map<number, Record<string, unknown>>(),
    nonces: new Map<number, string>(),
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const m = /^\/i(\d+)(\/.*)$/.exec(new URL(req.url).pathname);
      if (!m) return new Response("not found", { status: 404 });
      const n = Number(m[1]), iss = f.issuer(n);
      switch (m[2]) {
        case "/.well-known/openid-configuration":
          return Response.json({
            issuer: iss,
            authorization_endpoint: `${iss}/auth`,
            token_endpoint: `${iss}/token`,
            jwks_uri: `${iss}/jwks`,
            userinfo_endpoint: `${iss}/me`,
          });
        case "/jwks":
          return Response.json(f.jwks.get(n) ?? { keys: [pub] });
        case "/token": {
          await req.text();
          const now = Math.floor(Date.now() / 1000);
          const idToken = await new SignJWT({
            iss,
            aud: "app",
            exp: now + 300,
            iat: now,
            nonce: f.nonces.get(n),
            ...f.claims.get(n),
          }).setProtectedHeader({ alg: "RS256", kid: "k1" }).sign(privateKey);
          return Response.json({ access_token: "at", id_token: idToken });
        }
        case "/me":
          return Response.json(f.userinfo.get(n) ?? {});
      }
      return new Response("not found", { status: 404 });
    },
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  return { ...f, close: () => server.shutdown() };
}

function provider(name: string, issuer: string) {
  return {
    name,
    issuer,
    client_id: "app",
    client_secret: "app-secret",
    scopes: ["openid", "email", "profile"],
  };
}

interface Link {
  name: string;
  auth_url: string;
  state: string;
  code_verifier: string;
}

async function link(s: TestServer, entity: string, name: string) {
  const r = await s.request(
    "GET",
    `/api/v1/auth/${entity}/methods?redirect_url=${
      encodeURIComponent(REDIRECT)
    }`,
  );
  assertStatus(r, 200);
  const l = (r.data.oauth2.providers as Link[]).find((p) => p.name === name);
  assert(l, `methods lists ${name}`);
  return l;
}

function login(
  s: TestServer,
  entity: string,
  body: Record<string, unknown>,
): Promise<Reply> {
  return s.request("POST", `/api/v1/auth/${entity}/login-oauth2`, {
    body,
    headers: { "x-forwarded-for": nextIp() },
  });
}

/** Signs `account` in at the real provider through `entity`'s provider `name`. */
async function signIn(
  s: TestServer,
  idp: OidcServer,
  entity: string,
  name: string,
  account: string,
): Promise<Reply> {
  const l = await link(s, entity, name);
  const back = await idp.authorize(l.auth_url, account);
  return await login(s, entity, {
    provider: name,
    code: back.code,
    code_verifier: l.code_verifier,
    redirect_url: REDIRECT,
    state: back.state,
  });
}

/** Signs in at the forger's issuer `n` (provider `f<n>`) with `claims`. */
async function forged(
  s: TestServer,
  forger: Forger,
  entity: string,
  n: number,
  claims: Record<string, unknown>,
): Promise<Reply> {
  const l = await link(s, entity, `f${n}`);
  forger.nonces.set(n, new URL(l.auth_url).searchParams.get("nonce")!);
  forger.claims.set(n, claims);
  return await login(s, entity, {
    provider: `f${n}`,
    code: "any-code",
    code_verifier: l.code_verifier,
    redirect_url: REDIRECT,
  });
}

forEachDb("attack: accounts and OAuth2", async (t, db) => {
  const idp = await startOidc({
    clients: [{
      client_id: "app",
      client_secret: "app-secret",
      redirect_uris: [REDIRECT],
    }],
    accounts: {
      // An address the provider has not verified: anyone may claim it there.
      mallory: { email: "kate@example.com", email_verified: false },
      kate: { email: "kate@example.com", email_verified: true },
      // Claims an address its owner later proves by a mailed reset.
      eve: { email: "lena@example.com", email_verified: false },
      // The Kelvin sign (U+212A) lower-cases to an ASCII "k".
      kelvin: { email: "\u212Aim@example.com", email_verified: true },
    },
  });
  const forger = await startForger();
  const s = await startServer(db, { trustProxy: true, mail: FAST_MAIL });
  const admin = await s.adminToken();
  try {
    const forgedProviders = Array.from(
      { length: 8 },
      (_, n) => provider(`f${n}`, forger.issuer(n)),
    );
    const created = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "members",
        type: "auth",
        fields: [],
        rules: {
          add: { mode: "public", expr: "" },
          get: { mode: "auth", expr: "" },
        },
        auth: {
          oauth2: {
            enabled: true,
            providers: [provider("idp", idp.issuer), ...forgedProviders],
          },
        },
      },
    });
    assertStatus(created, 201);

    await t.step(
      "a stored secret is not kept for another server: SMTP host, port, security; a provider's issuer",
      async () => {
        const patch = (body: unknown) =>
          s.request("PATCH", "/api/v1/sys/settings", { token: admin, body });
        assertStatus(
          await patch({
            mail: {
              smtp: {
                host: "smtp.example.com",
                port: 587,
                security: "starttls",
                username: "app",
                password: "smtp-secret",
              },
            },
          }),
          200,
        );
        for (
          const smtp of [
            { host: "collector.example.net" },
            { port: 2525 },
            { security: "none" },
            { host: "collector.example.net", password: "" },
          ]
        ) {
          const r = await patch({ mail: { smtp } });
          assertStatus(r, 400, JSON.stringify(smtp));
          assertEquals(
            Object.keys(r.data?.fields ?? {}),
            ["mail.smtp.password"],
          );
        }
        const kept = await s.request("GET", "/api/v1/sys/settings", {
          token: admin,
        });
        assertEquals(kept.data.mail.smtp.host, "smtp.example.com");
        assertEquals(kept.data.mail.smtp.password_set, true);
        // The GET's answer sent back, a new username: the secret stays.
        assertStatus(await patch(kept.data), 200);
        assertStatus(
          await patch({ mail: { smtp: { username: "app2" } } }),
          200,
        );
        // Given again, or cleared: the host changes.
        assertStatus(
          await patch({
            mail: { smtp: { host: "smtp2.example.com", password: "again" } },
          }),
          200,
        );
        const cleared = await patch({
          mail: { smtp: { host: "smtp3.example.com", password: null } },
        });
        assertStatus(cleared, 200);
        assertEquals(cleared.data.mail.smtp.password_set, false);

        // A provider's client secret goes to its issuer's token endpoint only.
        const providers = (list: unknown[]) =>
          s.request("PATCH", "/api/v1/schemas/members", {
            token: admin,
            body: { auth: { oauth2: { providers: list } } },
          });
        const { client_secret: _, ...rest } = forgedProviders[7];
        for (
          const moved of [
            { ...rest, issuer: "https://collector.example.net" },
            { ...rest, issuer: "", preset: "google" },
          ]
        ) {
          const r = await providers([
            provider("idp", idp.issuer),
            ...forgedProviders.slice(0, 7),
            moved,
          ]);
          assertStatus(r, 400);
          assertEquals(
            Object.keys(r.data?.fields ?? {}),
            ["auth.oauth2.providers.8.client_secret"],
          );
        }
        const same = await providers([
          provider("idp", idp.issuer),
          ...forgedProviders.slice(0, 7),
          rest,
        ]);
        assertStatus(same, 200);
        assertEquals(
          same.data.auth.oauth2.providers[8].client_secret_set,
          true,
          "same issuer: the secret stays",
        );
      },
    );

    // An unverified user, as a sign-up leaves it (seeded with a
    // precomputed hash: sign-up itself is auth_records_test's).
    const signUp = async (email: string) => {
      const u = await fastUser(s, "members", { email });
      assertEquals(u.verified, false);
      return u.id;
    };

    await t.step(
      "an id token's email_verified does not vouch for the email userinfo gives",
      async () => {
        const victim = await signUp("victim@example.com");
        forger.userinfo.set(0, {
          sub: "m1",
          email: "victim@example.com",
          email_verified: false,
        });
        const r = await forged(s, forger, "members", 0, {
          sub: "m1",
          email_verified: true,
        });
        assertStatus(r, 409, "the unverified email of a user never links");
        // A verified one from userinfo still links.
        forger.userinfo.set(1, {
          sub: "m2",
          email: "victim@example.com",
          email_verified: true,
        });
        const ok = await forged(s, forger, "members", 1, { sub: "m2" });
        assertStatus(ok, 200);
        assertEquals(ok.data.user.id, victim);
      },
    );

    await t.step(
      "an identity linked by an unverified email loses the account once the address's owner signs in",
      async () => {
        const early = await signIn(s, idp, "members", "idp", "mallory");
        assertStatus(early, 200);
        assertEquals(early.data.user.verified, false);
        const owner = await signIn(s, idp, "members", "idp", "kate");
        assertStatus(owner, 200);
        assertEquals(owner.data.user.id, early.data.user.id, "linked by email");
        assertEquals(owner.data.user.verified, true);
        const again = await signIn(s, idp, "members", "idp", "mallory");
        assertStatus(again, 409, "the early identity no longer signs in");
        const back = await signIn(s, idp, "members", "idp", "kate");
        assertStatus(back, 200);
        assertEquals(back.data.user.id, early.data.user.id);
      },
    );

    await t.step(
      "a verified email that lower-cases into another address does not link to it",
      async () => {
        await signUp("kim@example.com");
        const r = await signIn(s, idp, "members", "idp", "kelvin");
        assertStatus(r, 409, "kim@example.com is not the address verified");
      },
    );

    await t.step(
      "an identity linked by an unverified email loses the account once its owner resets the password by mail",
      async () => {
        const smtp = await startSmtp();
        try {
          await useSmtp(s, admin, smtp);
          const early = await signIn(s, idp, "members", "idp", "eve");
          assertStatus(early, 200);
          assertEquals(early.data.user.verified, false);
          const asked = await account(s, "members", "request-password-reset", {
            email: "lena@example.com",
          });
          assertStatus(asked, 204);
          const token = tokenOf(await nthMailTo(smtp, "lena@example.com"));
          const reset = await account(s, "members", "confirm-password-reset", {
            token,
            password: "lena-owns-this-1",
          });
          assertStatus(reset, 204);
          const again = await signIn(s, idp, "members", "idp", "eve");
          assertStatus(again, 409, "the early identity no longer signs in");
          const login = await s.request("POST", "/api/v1/auth/members/login", {
            body: {
              identity: "lena@example.com",
              password: "lena-owns-this-1",
            },
            headers: { "x-forwarded-for": nextIp() },
          });
          assertStatus(login, 200);
          assertEquals(login.data.user.id, early.data.user.id);
        } finally {
          await smtp.close();
        }
      },
    );

    await t.step(
      "a key set with keys WebCrypto cannot import: 502 naming it, not 500",
      async () => {
        const n0 = 2;
        const keys: unknown[] = [
          { kty: "RSA", kid: "k1", n: "AA", e: "AQAB" },
          { kty: "RSA", kid: "k1", alg: "RS256" },
          { kty: "RSA", kid: "k1", n: 5, e: "AQAB" },
        ];
        for (const [i, key] of keys.entries()) {
          forger.jwks.set(n0 + i, { keys: [key] });
          const r = await forged(s, forger, "members", n0 + i, {
            sub: `j${i}`,
            email: `j${i}@example.com`,
            email_verified: true,
          });
          assertStatus(r, 502, JSON.stringify(key));
          assert(/holds a key that cannot be used/.test(r.error), r.error);
        }
      },
    );
  } finally {
    await s.close();
    await forger.close();
    await idp.close();
  }
});
