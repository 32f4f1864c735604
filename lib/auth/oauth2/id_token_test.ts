import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { MoonbaseError } from "../../errors.ts";
import { FETCH_LIMITS } from "./fetch.ts";
import { KeySets, verifyIdToken } from "./id_token.ts";
import type { Endpoints } from "./types.ts";

const ISS = "https://idp.example";
const NOW = 1_800_000_000;

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair("RS256", {
    extractable: true,
  });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

function sign(
  key: CryptoKey,
  kid: string,
  claims: JWTPayload,
  alg = "RS256",
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, kid }).sign(key);
}

const good: JWTPayload = {
  iss: ISS,
  sub: "u1",
  aud: "client-1",
  exp: NOW + 300,
  iat: NOW,
  nonce: "n-1",
};

Deno.test("id token: signature, issuer, audience, expiry and nonce are each checked", async () => {
  const k1 = await keyPair("k1"), other = await keyPair("k1");
  const k2 = await keyPair("k2");
  let fetches = 0, published = [k1.jwk];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => {
      fetches++;
      return Response.json({ keys: published });
    },
  );
  const endpoints: Endpoints = {
    kind: "oidc",
    issuer: ISS,
    authorization: `${ISS}/auth`,
    token: `${ISS}/token`,
    jwks: `http://127.0.0.1:${server.addr.port}/jwks`,
    algorithms: ["RS256"],
    basicAuth: true,
    defaultScopes: ["openid"],
  };
  let clock = NOW * 1000;
  const keySets = new KeySets(FETCH_LIMITS, () => clock);
  const check = {
    provider: "idp",
    endpoints,
    clientId: "client-1",
    nonce: "n-1",
    now: NOW * 1000,
  };
  try {
    const ok = await verifyIdToken(
      await sign(k1.privateKey, "k1", good),
      check,
      keySets,
    );
    assert.equal(ok.sub, "u1");
    const hs = new TextEncoder().encode("a shared secret of 32 bytes!!!!!");
    const cases: [string, Promise<string>, RegExp][] = [
      [
        "another issuer",
        sign(k1.privateKey, "k1", { ...good, iss: "https://evil.example" }),
        /iss/,
      ],
      [
        "another audience",
        sign(k1.privateKey, "k1", { ...good, aud: "client-2" }),
        /aud/,
      ],
      [
        "expired",
        sign(k1.privateKey, "k1", { ...good, exp: NOW - 120 }),
        /expired/,
      ],
      ["no exp", sign(k1.privateKey, "k1", { ...good, exp: undefined }), /exp/],
      [
        "another nonce",
        sign(k1.privateKey, "k1", { ...good, nonce: "n-2" }),
        /nonce/,
      ],
      [
        "no nonce",
        sign(k1.privateKey, "k1", { ...good, nonce: undefined }),
        /nonce/,
      ],
      [
        "a key the issuer does not publish",
        sign(other.privateKey, "k1", good),
        /bad signature/,
      ],
      [
        "an unknown key id",
        sign(other.privateKey, "k9", good),
        /key the issuer does not publish/,
      ],
      [
        "several audiences, azp not this client",
        sign(k1.privateKey, "k1", {
          ...good,
          aud: ["client-1", "client-2"],
          azp: "client-2",
        }),
        /azp/,
      ],
      [
        "HS256 (the client secret as key)",
        new SignJWT(good).setProtectedHeader({ alg: "HS256", kid: "k1" }).sign(
          hs,
        ),
        /algorithm not allowed/,
      ],
    ];
    for (const [name, token, why] of cases) {
      try {
        await verifyIdToken(await token, check, keySets);
        assert.fail(`${name}: accepted`);
      } catch (err) {
        assert.ok(err instanceof MoonbaseError, name);
        assert.equal(err.code, "unauthenticated", name);
        assert.match(
          err.message,
          /^Cannot log in with idp: the id token is invalid/,
          name,
        );
        assert.match(err.message, why, name);
      }
    }
    // Within a minute of a fetch, an unknown kid does not fetch again.
    assert.equal(fetches, 1);
    // The issuer rotated its keys: a minute on, a new kid fetches the set.
    published = [k1.jwk, k2.jwk];
    clock += 61_000;
    const rotated = await verifyIdToken(
      await sign(k2.privateKey, "k2", good),
      check,
      keySets,
    );
    assert.equal(rotated.sub, "u1");
    assert.equal(fetches, 2);
  } finally {
    await server.shutdown();
  }
});

Deno.test("id token: Microsoft's tenant issuer takes the token's tid", async () => {
  const k1 = await keyPair("k1");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({ keys: [k1.jwk] }),
  );
  const template = "https://login.microsoftonline.com/{tenantid}/v2.0";
  const tid = "9188040d-6c67-4c5b-b112-36a304b66dad";
  const check = {
    provider: "microsoft",
    endpoints: {
      kind: "oidc" as const,
      issuer: template,
      authorization:
        "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
      token: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
      jwks: `http://127.0.0.1:${server.addr.port}/keys`,
      basicAuth: false,
      tenantIssuer: true,
      defaultScopes: ["openid"],
    },
    clientId: "client-1",
    nonce: "n-1",
    now: NOW * 1000,
  };
  const keySets = new KeySets(FETCH_LIMITS);
  try {
    const iss = template.replace("{tenantid}", tid);
    const ok = await verifyIdToken(
      await sign(k1.privateKey, "k1", { ...good, iss, tid }),
      check,
      keySets,
    );
    assert.equal(ok.tid, tid);
    const otherTenant = "00000000-0000-0000-0000-000000000001";
    await assert.rejects(
      verifyIdToken(
        await sign(k1.privateKey, "k1", { ...good, iss, tid: otherTenant }),
        check,
        keySets,
      ),
      /its issuer is not the tenant's/,
    );
  } finally {
    await server.shutdown();
  }
});
