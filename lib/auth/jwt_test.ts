import {
  deepStrictEqual as assertEquals,
  ok as assert,
} from "node:assert/strict";
import { SignJWT, UnsecuredJWT } from "jose";
import { TokenSigner } from "./jwt.ts";

const SECRET = "unit-test-secret-0123456789abcdefghij";
const key = new TextEncoder().encode(SECRET);

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function b64url(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

function unb64url(text: string): string {
  return atob(text.replaceAll("-", "+").replaceAll("_", "/"));
}

Deno.test("jwt: sign/verify round trip with the documented claims", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  assertEquals(signer.ttl, 3600);
  const { token, claims } = await signer.sign("user-1", "users");
  const header = JSON.parse(unb64url(token.split(".")[0]));
  assertEquals(header.alg, "HS256");
  assertEquals(claims.sub, "user-1");
  assertEquals(claims.entity, "users");
  assertEquals(claims.exp - claims.iat, 3600);
  assert(Math.abs(claims.iat - now()) <= 2);
  assert(claims.jti.length > 0);
  const verified = await signer.verify(token);
  assertEquals(verified, claims);
  // A second verification (cached path) agrees.
  assertEquals(await signer.verify(token), claims);
  // Another signer with the same secret accepts it (no per-process state).
  assertEquals(await new TokenSigner(SECRET, 60).verify(token), claims);
});

Deno.test("jwt: every token gets its own jti", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const a = await signer.sign("u", "users");
  const b = await signer.sign("u", "users");
  assert(a.claims.jti !== b.claims.jti);
  assert(a.token !== b.token);
});

Deno.test("jwt: a tampered payload is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const { token } = await signer.sign("user-1", "users");
  const [h, p, s] = token.split(".");
  const payload = JSON.parse(unb64url(p));
  payload.sub = "admin-1";
  payload.entity = "mb_admins";
  const forged = `${h}.${b64url(JSON.stringify(payload))}.${s}`;
  assertEquals(await signer.verify(forged), undefined);
  // Even after the genuine token was verified (and cached).
  assert(await signer.verify(token));
  assertEquals(await signer.verify(forged), undefined);
});

Deno.test("jwt: a tampered signature is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const { token } = await signer.sign("user-1", "users");
  const [h, p, s] = token.split(".");
  const flipped = (s[0] === "A" ? "B" : "A") + s.slice(1);
  assertEquals(await signer.verify(`${h}.${p}.${flipped}`), undefined);
  assertEquals(await signer.verify(`${h}.${p}.`), undefined);
  assertEquals(await signer.verify(`${h}.${p}`), undefined);
  assertEquals(await signer.verify(token + "x"), undefined);
  assertEquals(await signer.verify(""), undefined);
  assertEquals(await signer.verify("not a token"), undefined);
});

Deno.test("jwt: alg none is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const unsecured = new UnsecuredJWT({ entity: "mb_admins" })
    .setSubject("admin-1")
    .setJti("j1")
    .setIssuedAt(t)
    .setExpirationTime(t + 600)
    .encode();
  assertEquals(unsecured.split(".")[2], "");
  assertEquals(await signer.verify(unsecured), undefined);
  // Same, with a header spelling "None"/"HS256"-less variants.
  const [, p] = unsecured.split(".");
  for (const alg of ["None", "NONE", "none"]) {
    const h = b64url(JSON.stringify({ alg, typ: "JWT" }));
    assertEquals(await signer.verify(`${h}.${p}.`), undefined, alg);
  }
});

Deno.test("jwt: HS512 with the same secret is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const hs512 = await new SignJWT({ entity: "users" })
    .setProtectedHeader({ alg: "HS512", typ: "JWT" })
    .setSubject("user-1")
    .setJti("j1")
    .setIssuedAt(t)
    .setExpirationTime(t + 600)
    .sign(key);
  assertEquals(await signer.verify(hs512), undefined);
  const hs384 = await new SignJWT({ entity: "users" })
    .setProtectedHeader({ alg: "HS384" })
    .setSubject("user-1")
    .setJti("j1")
    .setIssuedAt(t)
    .setExpirationTime(t + 600)
    .sign(key);
  assertEquals(await signer.verify(hs384), undefined);
});

Deno.test("jwt: a forged HS256 token with all claims and the right secret passes", async () => {
  // Control for the negative cases below: they fail for the stated reason.
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const ok = await new SignJWT({ entity: "users" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("user-1")
    .setJti("j1")
    .setIssuedAt(t)
    .setExpirationTime(t + 600)
    .sign(key);
  assertEquals(await signer.verify(ok), {
    sub: "user-1",
    entity: "users",
    jti: "j1",
    iat: t,
    exp: t + 600,
  });
});

Deno.test("jwt: a token without exp is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const noExp = await new SignJWT({ entity: "users" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("user-1")
    .setJti("j1")
    .setIssuedAt(t)
    .sign(key);
  assertEquals(await signer.verify(noExp), undefined);
});

Deno.test("jwt: tokens missing sub, jti, iat or entity are rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const base = () =>
    new SignJWT({ entity: "users" }).setProtectedHeader({ alg: "HS256" })
      .setExpirationTime(t + 600);
  const noSub = await base().setJti("j").setIssuedAt(t).sign(key);
  const noJti = await base().setSubject("u").setIssuedAt(t).sign(key);
  const noIat = await base().setSubject("u").setJti("j").sign(key);
  const noEntity = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("u").setJti("j").setIssuedAt(t).setExpirationTime(t + 600)
    .sign(key);
  const numericEntity = await new SignJWT({ entity: 5 })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("u").setJti("j").setIssuedAt(t).setExpirationTime(t + 600)
    .sign(key);
  for (
    const [name, tok] of Object.entries({
      noSub,
      noJti,
      noIat,
      noEntity,
      numericEntity,
    })
  ) {
    assertEquals(await signer.verify(tok), undefined, name);
  }
});

Deno.test("jwt: an expired token is rejected", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const expired = await new SignJWT({ entity: "users" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("user-1")
    .setJti("j1")
    .setIssuedAt(t - 7200)
    .setExpirationTime(t - 3600)
    .sign(key);
  assertEquals(await signer.verify(expired), undefined);
  // A zero lifetime gives tokens that are already expired.
  const zero = new TokenSigner(SECRET, 0);
  const { token } = await zero.sign("u", "users");
  assertEquals(await zero.verify(token), undefined);
});

Deno.test("jwt: a cached token stops verifying once it expires", async () => {
  const signer = new TokenSigner(SECRET, 60);
  const { token } = await signer.sign("u", "users");
  assert(await signer.verify(token));
  const realNow = Date.now;
  try {
    Date.now = () => realNow() + 120_000;
    assertEquals(await signer.verify(token), undefined);
  } finally {
    Date.now = realNow;
  }
});

Deno.test("jwt: forget drops a token from the cache", async () => {
  const signer = new TokenSigner(SECRET, 60);
  const { token } = await signer.sign("u", "users");
  assert(await signer.verify(token));
  signer.forget(token);
  // Still a valid signature: verify recomputes it.
  assert(await signer.verify(token));
});

Deno.test("jwt: another secret is rejected", async () => {
  const a = new TokenSigner(SECRET, 3600);
  const b = new TokenSigner(SECRET + "-other", 3600);
  const { token } = await a.sign("user-1", "users");
  assertEquals(await b.verify(token), undefined);
  assert(await a.verify(token));
});

Deno.test("jwt: oversized tokens are rejected without verifying", async () => {
  const signer = new TokenSigner(SECRET, 3600);
  const t = now();
  const big = await new SignJWT({ entity: "users", pad: "x".repeat(5000) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("u").setJti("j").setIssuedAt(t).setExpirationTime(t + 600)
    .sign(key);
  assertEquals(await signer.verify(big), undefined);
});
