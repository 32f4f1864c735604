/**
 * `checkDiscovery` against local issuers: a good document, and each way a
 * check fails (refused URL, unreachable, slow, too large, not JSON, another
 * issuer, a missing or plain-http endpoint, a redirect, an error status).
 *
 * @module
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../errors.ts";
import { checkDiscovery, type DiscoveryLimits } from "./oidc_discovery.ts";

const SMALL: DiscoveryLimits = { timeoutMs: 300, maxBytes: 2_000 };

/** Serves `answer` for every request on a loopback port; returns the base URL. */
async function issuerServing(
  answer: (base: string, req: Request) => Response | Promise<Response>,
  fn: (base: string) => Promise<void>,
): Promise<void> {
  const ac = new AbortController();
  let base = "";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    (req) => answer(base, req),
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await fn(base);
  } finally {
    ac.abort();
    await server.finished;
  }
}

function doc(issuer: string, extra: Record<string, unknown> = {}) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    ...extra,
  };
}

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

Deno.test("discovery: a good document gives its endpoints", async () => {
  await issuerServing((base, req) => {
    assert.equal(
      new URL(req.url).pathname,
      "/.well-known/openid-configuration",
    );
    return Response.json(doc(base));
  }, async (base) => {
    assert.deepEqual(await checkDiscovery({ issuer: base + "/" }, SMALL), {
      issuer: base,
      authorization_endpoint: `${base}/auth`,
      token_endpoint: `${base}/token`,
      jwks_uri: `${base}/jwks`,
    });
  });
});

Deno.test("discovery: issuers that are not https are refused unfetched", async () => {
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
    await refusal(checkDiscovery({ issuer }, SMALL), "invalid", /https URL/);
  }
});

Deno.test("discovery: each failure is a 502 saying what failed", async () => {
  const cases: [
    string,
    (base: string) => Response | Promise<Response>,
    RegExp,
  ][] = [
    [
      "another issuer",
      () => Response.json(doc("https://other.example.com")),
      /names the issuer "https:\/\/other\.example\.com"/,
    ],
    [
      "no token endpoint",
      (b) => Response.json(doc(b, { token_endpoint: undefined })),
      /no valid token_endpoint/,
    ],
    [
      "plain http endpoint",
      (b) => Response.json(doc(b, { jwks_uri: "http://idp.example.com/jwks" })),
      /no valid jwks_uri/,
    ],
    ["not JSON", () => new Response("<html>hello</html>"), /not JSON/],
    ["a list", () => Response.json([1, 2]), /not an object/],
    [
      "an error status",
      () => new Response("{}", { status: 404 }),
      /answered HTTP 404/,
    ],
    [
      "a redirect",
      (b) => Response.redirect(`${b}/elsewhere`, 302),
      /could not be reached/,
    ],
    [
      "too large (declared)",
      (b) => Response.json(doc(b, { pad: "x".repeat(5_000) })),
      /larger than 2000 bytes/,
    ],
    [
      "too large (streamed)",
      (b) => {
        const body = JSON.stringify(doc(b, { pad: "x".repeat(5_000) }));
        return new Response(
          ReadableStream.from([new TextEncoder().encode(body)]),
        );
      },
      /larger than 2000 bytes/,
    ],
    [
      "too slow",
      () => new Promise<Response>(() => {}),
      /did not answer within 0.3 s/,
    ],
    [
      "too slow in the body",
      () =>
        new Response(
          new ReadableStream({
            start(c) {
              c.enqueue(new TextEncoder().encode("{"));
            },
          }),
        ),
      /did not answer within 0.3 s/,
    ],
  ];
  for (const [what, answer, text] of cases) {
    await issuerServing(answer, async (base) => {
      await refusal(
        checkDiscovery({ issuer: base }, SMALL),
        "bad_gateway",
        text,
      ).catch(
        (e) => {
          throw new Error(`${what}: ${e.message}`);
        },
      );
    });
  }
});

Deno.test("discovery: an unreachable issuer is a 502", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await refusal(
    checkDiscovery({ issuer: `http://127.0.0.1:${port}` }, SMALL),
    "bad_gateway",
    /could not be reached/,
  );
});
