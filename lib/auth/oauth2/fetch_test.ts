import assert from "node:assert/strict";
import { MoonbaseError } from "../../errors.ts";
import { fetchJson } from "./fetch.ts";

/** A loopback server for one test; `handler` answers every request. */
async function serve(
  handler: (req: Request) => Response | Promise<Response>,
  run: (url: string) => Promise<void>,
): Promise<void> {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  try {
    await run(`http://127.0.0.1:${server.addr.port}/doc`);
  } finally {
    await server.shutdown();
  }
}

async function refusal(p: Promise<unknown>): Promise<MoonbaseError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof MoonbaseError);
    return err;
  }
  throw new Error("expected a refusal");
}

Deno.test("fetchJson: a provider that does not answer in time is a 502 naming the limit", async () => {
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  await serve(async () => {
    await held;
    return Response.json({});
  }, async (url) => {
    const err = await refusal(
      fetchJson(url, {}, "slowidp", "the discovery document", {
        timeoutMs: 200,
        maxBytes: 1000,
      }),
    );
    release();
    assert.equal(err.code, "bad_gateway");
    assert.match(
      err.message,
      /^Cannot log in with slowidp: the discovery document did not answer within 0\.2 s/,
    );
  });
});

Deno.test("fetchJson: a body past the size limit, or not JSON, is a 502", async () => {
  await serve(() => new Response("x".repeat(5000)), async (url) => {
    const big = await refusal(
      fetchJson(url, {}, "idp", "the key set", {
        timeoutMs: 5000,
        maxBytes: 1000,
      }),
    );
    assert.match(big.message, /the key set answered more than 1000 bytes/);
  });
  // Streamed without a length: counted as it comes.
  await serve(() =>
    new Response(
      new ReadableStream({
        start(c) {
          for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(500));
          c.close();
        },
      }),
    ), async (url) => {
    const big = await refusal(
      fetchJson(url, {}, "idp", "the key set", {
        timeoutMs: 5000,
        maxBytes: 1000,
      }),
    );
    assert.match(big.message, /more than 1000 bytes/);
  });
  await serve(() => new Response("<html>", { status: 500 }), async (url) => {
    const html = await refusal(fetchJson(url, {}, "idp", "the token endpoint"));
    assert.equal(html.code, "bad_gateway");
    assert.match(
      html.message,
      /the token endpoint answered HTTP 500 without JSON/,
    );
  });
});

Deno.test("fetchJson: an unreachable provider is a 502", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const err = await refusal(
    fetchJson(
      `http://127.0.0.1:${port}/`,
      {},
      "downidp",
      "the discovery document",
    ),
  );
  assert.equal(err.code, "bad_gateway");
  assert.match(err.message, /the discovery document could not be reached/);
});
