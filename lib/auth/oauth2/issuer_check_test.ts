/**
 * `checkIssuer` against local issuers: a good document (fetched anew, not
 * from the resolver's cache), refused URLs, and failures reworded for the
 * admin's check. The fetch's own bounds (time, size, redirects, JSON) are
 * discovery_test.ts's and fetch_test.ts's.
 *
 * @module
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../../errors.ts";
import { ProviderResolver } from "./discovery.ts";
import { checkIssuer } from "./issuer_check.ts";

const resolver = () =>
  new ProviderResolver({ timeoutMs: 300, maxBytes: 4_000 });

/** Serves `answer` on a loopback port while `fn` runs. */
async function issuerServing(
  answer: (base: string) => Response | Promise<Response>,
  fn: (base: string) => Promise<void>,
): Promise<void> {
  const ac = new AbortController();
  let base = "";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    () => answer(base),
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await fn(base);
  } finally {
    ac.abort();
    await server.finished;
  }
}

const doc = (issuer: string, base = issuer) => ({
  issuer,
  authorization_endpoint: `${base}/auth`,
  token_endpoint: `${base}/token`,
  jwks_uri: `${base}/jwks`,
});

async function refusal(
  p: Promise<unknown>,
  code: "invalid" | "bad_gateway",
  text: RegExp,
): Promise<void> {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof MoonbaseError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, text);
    return true;
  });
}

Deno.test("issuer check: the endpoints, fetched anew each time", async () => {
  let named = "";
  await issuerServing(
    (base) => Response.json(doc(named || base, base)),
    async (base) => {
      const r = resolver();
      assert.deepEqual(await checkIssuer(r, { issuer: base + "/" }), {
        issuer: base,
        authorization_endpoint: `${base}/auth`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks`,
      });
      // The issuer changes its document: the next check sees it.
      named = "https://other.example.com";
      await refusal(
        checkIssuer(r, { issuer: base }),
        "bad_gateway",
        /^Cannot check the issuer: the discovery document .* names the issuer "https:\/\/other\.example\.com", not http:\/\/127\.0\.0\.1:\d+$/,
      );
    },
  );
});

Deno.test("issuer check: URLs that are not https are refused unfetched", async () => {
  for (
    const issuer of [
      "http://idp.example.com",
      "ftp://localhost",
      "https://idp.example.com/?a=1",
      "https://idp.example.com/#x",
      "not a url",
      "",
      42,
      undefined,
    ]
  ) {
    await refusal(checkIssuer(resolver(), { issuer }), "invalid", /https URL/);
  }
});

Deno.test("issuer check: slow and unreachable issuers are 502 saying so", async () => {
  await issuerServing(() => new Promise<Response>(() => {}), async (base) => {
    await refusal(
      checkIssuer(resolver(), { issuer: base }),
      "bad_gateway",
      /^Cannot check the issuer: .*did not answer within 0\.3 s$/,
    );
  });
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await refusal(
    checkIssuer(resolver(), { issuer: `http://127.0.0.1:${port}` }),
    "bad_gateway",
    /^Cannot check the issuer: .*could not be reached/,
  );
});
