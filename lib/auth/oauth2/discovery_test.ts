import assert from "node:assert/strict";
import { FETCH_LIMITS } from "./fetch.ts";
import { FAILURE_TTL_MS, ProviderResolver } from "./discovery.ts";
import type { ProviderConfig } from "./types.ts";

function provider(issuer: string, preset = ""): ProviderConfig {
  return {
    name: "idp",
    display_name: "IdP",
    issuer,
    preset,
    client_id: "c",
    client_secret: "s",
    scopes: [],
  };
}

Deno.test("discovery: the document must name its issuer and https (or loopback) endpoints; cached, failures for 30 s", async () => {
  let doc: Record<string, unknown> = {};
  let fetches = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => {
      fetches++;
      return Response.json(doc);
    },
  );
  const issuer = `http://127.0.0.1:${server.addr.port}`;
  const valid = {
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    token_endpoint_auth_methods_supported: ["client_secret_post"],
    id_token_signing_alg_values_supported: ["RS256", "HS256", "none"],
  };
  let clock = 0;
  try {
    const bad: [string, Record<string, unknown>, RegExp][] = [
      [
        "another issuer",
        { ...valid, issuer: "https://evil.example" },
        /names the issuer "https:\/\/evil\.example", not/,
      ],
      ["no jwks_uri", { ...valid, jwks_uri: undefined }, /no valid jwks_uri/],
      ["plain http elsewhere", {
        ...valid,
        token_endpoint: "http://idp.example/token",
      }, /no valid token_endpoint/],
    ];
    for (const [name, d, why] of bad) {
      doc = d;
      const r = new ProviderResolver(FETCH_LIMITS, {}, () => clock);
      await assert.rejects(r.resolve(provider(issuer)), why, name);
    }
    doc = valid;
    fetches = 0;
    const r = new ProviderResolver(FETCH_LIMITS, {}, () => clock);
    const e = await r.resolve(provider(`${issuer}/`));
    assert.equal(e.token, `${issuer}/token`);
    assert.equal(e.basicAuth, false, "only client_secret_post listed");
    assert.deepEqual(e.algorithms, ["RS256"], "symmetric and none dropped");
    await r.resolve(provider(issuer));
    assert.equal(fetches, 1, "cached");
    // A failure is kept for 30 s: a down issuer costs one wait, not one per request.
    doc = { ...valid, issuer: "https://evil.example" };
    r.forget();
    await assert.rejects(r.resolve(provider(issuer)));
    doc = valid;
    await assert.rejects(r.resolve(provider(issuer)));
    assert.equal(fetches, 2);
    clock += FAILURE_TTL_MS + 1;
    assert.equal((await r.resolve(provider(issuer))).issuer, issuer);
    assert.equal(fetches, 3);
  } finally {
    await server.shutdown();
  }
});

Deno.test("discovery: GitHub and Discord presets resolve without a fetch", async () => {
  const r = new ProviderResolver({ timeoutMs: 1, maxBytes: 1 });
  const gh = await r.resolve(provider("", "github"));
  assert.equal(gh.kind, "github");
  assert.equal(gh.token, "https://github.com/login/oauth/access_token");
  assert.equal((await r.resolve(provider("", "discord"))).kind, "discord");
});

Deno.test("discovery: a remote issuer cannot name endpoints on this machine", async () => {
  const issuer = "https://idp.example";
  const valid = {
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    userinfo_endpoint: `${issuer}/userinfo`,
  };
  let doc: Record<string, unknown> = valid;
  const real = globalThis.fetch;
  // The issuer's document, without a network: only its URL is asked for.
  globalThis.fetch = (input) => {
    assert.equal(String(input), `${issuer}/.well-known/openid-configuration`);
    return Promise.resolve(Response.json(doc));
  };
  try {
    const local = [
      "http://127.0.0.1:6379/",
      "https://127.0.0.1/token",
      "https://localhost/token",
      "https://admin.localhost./token",
      "http://[::1]:5432/",
      "https://[::ffff:127.0.0.1]/token",
      "https://0.0.0.0/token",
    ];
    for (const key of ["token_endpoint", "jwks_uri", "userinfo_endpoint"]) {
      for (const url of local) {
        doc = { ...valid, [key]: url };
        const r = new ProviderResolver(FETCH_LIMITS);
        await assert.rejects(
          r.resolve(provider(issuer)),
          new RegExp(key === "userinfo_endpoint" ? "invalid userinfo" : key),
          `${key} ${url}`,
        );
      }
    }
    doc = valid;
    const e = await new ProviderResolver(FETCH_LIMITS).resolve(
      provider(issuer),
    );
    assert.equal(e.token, `${issuer}/token`);
  } finally {
    globalThis.fetch = real;
  }
});
