/**
 * Unit tests of the server on bare handlers: a streamed response outlives
 * the idle timeout, handler errors and client resets never end the server,
 * the abort signal and `shutdown()` settle `finished`, the fallback to
 * `Deno.serve` when Deno's per-connection serving is missing, bad limits.
 */

import assert from "node:assert/strict";
import { listen, Server } from "./server.ts";
import { pause, poll, within } from "../../tests/_wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

function url(server: Deno.HttpServer<Deno.NetAddr>, path = "/"): string {
  return `http://127.0.0.1:${server.addr.port}${path}`;
}

Deno.test(
  "server: a streamed response slower than the idle timeout is not cut",
  opts,
  async () => {
    const server = listen(() => {
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          await pause(250);
          if (n++ === 10) c.close();
          else c.enqueue(new TextEncoder().encode("x"));
        },
      });
      return Promise.resolve(new Response(body));
    }, {
      port: 0,
      hostname: "127.0.0.1",
      limits: { idleTimeoutMs: 500, headerTimeoutMs: 500 },
    });
    try {
      const res = await fetch(url(server));
      assert.equal(await res.text(), "x".repeat(10));
    } finally {
      await server.shutdown();
    }
  },
);

Deno.test(
  "server: handler errors and client resets never end it",
  opts,
  async () => {
    const logged: string[] = [];
    const server = listen((req) => {
      if (req.url.endsWith("/throw")) throw new Error("boom");
      return Promise.resolve(new Response("ok"));
    }, {
      port: 0,
      hostname: "127.0.0.1",
      log: (_level, message) => logged.push(message),
    });
    let settled = false;
    server.finished.then(() => settled = true, () => settled = true);
    try {
      const res = await fetch(url(server, "/throw"));
      assert.equal(res.status, 500);
      assert.doesNotMatch(await res.text(), /boom/);
      for (let i = 0; i < 5; i++) {
        const c = await Deno.connect({
          hostname: "127.0.0.1",
          port: server.addr.port,
        });
        await c.write(
          new TextEncoder().encode(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nab",
          ),
        );
        c.close();
      }
      await pause(100);
      assert.equal(await (await fetch(url(server))).text(), "ok");
      assert.equal(settled, false);
      assert.ok(logged.includes("Cannot handle request"));
    } finally {
      await within("shutdown", 5000, server.shutdown());
    }
    assert.equal(settled, true);
  },
);

Deno.test(
  "server: a client gone mid-response leaves no resource behind",
  // The sanitizers are the assertion: Deno's server on a connection that
  // failed (a broken pipe) stayed in the resource table after the server
  // closed.
  { sanitizeOps: true, sanitizeResources: true },
  async () => {
    const chunk = new Uint8Array(64 * 1024);
    let pulls = 0;
    const server = listen(() =>
      Promise.resolve(
        new Response(
          new ReadableStream<Uint8Array>({
            pull(c) {
              pulls++;
              c.enqueue(chunk);
            },
          }),
        ),
      ), { port: 0, hostname: "127.0.0.1" }) as Server;
    try {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: server.addr.port,
      });
      await conn.write(
        new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
      );
      const n = await conn.read(new Uint8Array(1024));
      assert.ok(n !== null && n > 0, "the response started");
      // Unread bytes in its buffer: closing resets the connection, and the
      // server's next write fails.
      conn.close();
      await poll("the connection is gone", () => server.connections === 0);
      assert.ok(pulls > 0);
    } finally {
      await server.close();
    }
  },
);

Deno.test(
  "server: the abort signal closes it and settles finished",
  opts,
  async () => {
    const ac = new AbortController();
    const server = listen(() => Promise.resolve(new Response("ok")), {
      port: 0,
      hostname: "127.0.0.1",
      signal: ac.signal,
    });
    const idle = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.addr.port,
    });
    await pause(50);
    ac.abort();
    await server.finished;
    await assert.rejects(
      Deno.connect({ hostname: "127.0.0.1", port: server.addr.port }),
    );
    assert.equal(await idle.read(new Uint8Array(16)).catch(() => null), null);
    idle.close();
  },
);

Deno.test(
  "server: falls back to Deno.serve when per-connection serving is missing",
  opts,
  async () => {
    const d = Deno as unknown as Record<symbol | string, unknown>;
    const internal = d[d.internal as symbol] as Record<string, unknown>;
    const saved = internal.serveHttpOnConnection;
    const logged: string[] = [];
    delete internal.serveHttpOnConnection;
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = listen(() => Promise.resolve(new Response("ok")), {
        port: 0,
        hostname: "127.0.0.1",
        log: (_level, message) => logged.push(message),
      });
    } finally {
      internal.serveHttpOnConnection = saved;
    }
    try {
      assert.ok(!(server instanceof Server));
      assert.equal(logged.length, 1);
      assert.match(logged[0], /^Cannot enforce connection limits/);
      assert.equal(await (await fetch(url(server))).text(), "ok");
    } finally {
      await server.shutdown();
    }
  },
);

Deno.test("server: limits must be positive", () => {
  assert.throws(
    () =>
      listen(() => Promise.resolve(new Response("")), {
        port: 0,
        limits: { idleTimeoutMs: 0 },
      }),
    /Cannot listen: idleTimeoutMs must be positive/,
  );
});
