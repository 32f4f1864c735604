import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { FLOW_TTL_S, FlowSeal } from "./flow.ts";

const binding = { entityId: "e1", provider: "google", redirect: "" };
const T = 1_800_000_000_000;
const ALPHABET =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Deno.test("flow: fresh values on every issue, S256 challenge, verifier in RFC 7636's alphabet", () => {
  const seal = new FlowSeal("secret");
  const a = seal.issue(binding, T), b = seal.issue(binding, T);
  assert.notEqual(a.code_verifier, b.code_verifier);
  assert.notEqual(a.state, b.state);
  assert.notEqual(a.nonce, b.nonce);
  assert.match(a.code_verifier, /^[A-Za-z0-9_~.-]{43,128}$/);
  assert.equal(
    a.code_challenge,
    createHash("sha256").update(a.code_verifier).digest("base64url"),
  );
  assert.equal(a.code_challenge_method, "S256");
  const opened = seal.open(a.code_verifier, binding, T);
  assert.equal(opened?.state, a.state);
  assert.equal(opened?.nonce, a.nonce);
  assert.equal(opened?.expires, T / 1000 + FLOW_TTL_S);
});

Deno.test("flow: a verifier opens only for its binding, key and lifetime, in its canonical spelling", () => {
  const seal = new FlowSeal("secret");
  const v = seal.issue(binding, T).code_verifier;
  const cases: [string, string, typeof binding, number, FlowSeal][] = [
    ["other provider", v, { ...binding, provider: "gitlab" }, T, seal],
    ["other entity", v, { ...binding, entityId: "e2" }, T, seal],
    ["other redirect", v, { ...binding, redirect: "https://a/cb" }, T, seal],
    ["expired", v, binding, T + (FLOW_TTL_S + 1) * 1000, seal],
    ["other secret", v, binding, T, new FlowSeal("other")],
    [
      "one character changed",
      v.slice(0, 30) + (v[30] === "A" ? "B" : "A") + v.slice(31),
      binding,
      T,
      seal,
    ],
    [
      "non-canonical last character",
      v.slice(0, 70) + ALPHABET[ALPHABET.indexOf(v[70]) ^ 1],
      binding,
      T,
      seal,
    ],
    ["too short", v.slice(0, 43), binding, T, seal],
    ["not base64url", v.slice(0, 70) + "=", binding, T, seal],
  ];
  for (const [name, verifier, b, now, s] of cases) {
    assert.equal(s.open(verifier, b, now), undefined, name);
  }
  assert.ok(seal.open(v, binding, T + FLOW_TTL_S * 1000), "good until expiry");
});

Deno.test("flow: a verifier issued for a redirect URL opens only for it", () => {
  const seal = new FlowSeal("secret");
  const b = { ...binding, redirect: "https://app.example/cb" };
  const v = seal.issue(b, T).code_verifier;
  assert.ok(seal.open(v, b, T));
  assert.equal(seal.open(v, { ...b, redirect: "" }, T), undefined);
});
