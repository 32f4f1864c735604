/**
 * WebSockets on the hardened server (`listen` without `upgrades`, with
 * `webSockets`, served with `upgradeWebSocket`): an
 * upgraded connection echoes for longer than two idle timeouts while
 * ordinary connections are still closed by the idle and header timeouts;
 * a raw client sees exactly one 101 and its first frame answered; shutdown
 * closes sockets with 1001. That ordinary GET throughput is the same with
 * WebSockets on and off is a timing claim: `deno task bench` measures it
 * (the row "GET by id: --websocket on ÷ off (paired)", bench/measure.ts).
 */

import assert from "node:assert/strict";
import { listen, upgradeWebSocket } from "../lib/http/server.ts";
import { closeAll, connect, dec, enc, readResponse } from "./_tcp.ts";
import { pause, poll } from "./_wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const IDLE = 300;

/** Echo server: `/ws` upgrades, anything else answers "ok". */
function echoServer(webSockets = true, idleTimeoutMs = IDLE) {
  return listen((req) => {
    if (new URL(req.url).pathname !== "/ws") {
      return Promise.resolve(new Response("ok"));
    }
    const { socket, response } = upgradeWebSocket(req);
    socket.onmessage = (e) => socket.send("echo:" + e.data);
    return Promise.resolve(response);
  }, {
    port: 0,
    hostname: "127.0.0.1",
    webSockets,
    limits: { idleTimeoutMs, headerTimeoutMs: idleTimeoutMs },
    log: () => {},
  });
}

/** Opens a WebSocket and collects what it receives. */
function open(port: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const got: string[] = [];
  let wake: (() => void) | undefined;
  ws.onmessage = (e) => {
    got.push(String(e.data));
    wake?.();
  };
  const closed = new Promise<CloseEvent>((r) => ws.onclose = r);
  const opened = new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("WebSocket error"));
  });
  const next = async (n: number) => {
    const until = Date.now() + 2000;
    while (got.length < n && Date.now() < until) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 100);
      });
    }
    return got.slice();
  };
  return { ws, got, closed, opened, next };
}

Deno.test(
  "ws: an upgraded connection echoes for over two idle timeouts; ordinary connections still time out",
  opts,
  async () => {
    const server = echoServer();
    const port = server.addr.port;
    try {
      const w = open(port);
      await w.opened;
      const t0 = Date.now();
      // An ordinary keep-alive connection, and one that never sends a head.
      const plain = await connect(port);
      await plain.write(enc.encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      assert.match(await readResponse(plain), /^HTTP\/1\.1 200[\s\S]*ok$/);
      const silent = await connect(port);
      for (let i = 0; i < 4; i++) {
        w.ws.send(`m${i}`);
        assert.equal((await w.next(i + 1))[i], `echo:m${i}`);
        await pause(IDLE); // idle on the socket as long as the timeout
      }
      // The ordinary connections were closed by the timeouts meanwhile.
      const buf = new Uint8Array(64);
      assert.equal(await plain.read(buf), null, "idle keep-alive closed");
      assert.equal(await silent.read(buf), null, "header timeout closed");
      closeAll([plain, silent]);
      // The WebSocket is still open and echoing after > 2 idle timeouts.
      assert.ok(Date.now() - t0 > 3 * IDLE);
      assert.equal(w.ws.readyState, WebSocket.OPEN);
      w.ws.send("last");
      assert.equal((await w.next(5))[4], "echo:last");
      w.ws.close(1000, "bye");
      const ev = await w.closed;
      assert.equal(ev.code, 1000);
      // The connection left the table: only ordinary ones count.
      const table = server as unknown as { connections: number };
      await poll(
        "the connection to leave the table",
        () => table.connections === 0,
      );
      assert.equal(table.connections, 0);
    } finally {
      await server.shutdown();
    }
  },
);

Deno.test(
  "ws: a raw client gets one 101 and its first frame, sent at once, answered",
  opts,
  async () => {
    const server = echoServer();
    try {
      const conn = await connect(server.addr.port);
      // A request before the upgrade on the same connection.
      await conn.write(enc.encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      assert.match(await readResponse(conn), /^HTTP\/1\.1 200/);
      await conn.write(enc.encode(
        "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n" +
          "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
      ));
      const buf = new Uint8Array(4096);
      let text = "";
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        assert.ok(n !== null, "closed before the 101");
        text += dec.decode(buf.subarray(0, n));
      }
      assert.equal(text.match(/HTTP\/1\.1 101/g)?.length, 1, text);
      assert.ok(text.endsWith("\r\n\r\n"), "nothing after the 101");
      assert.match(
        text,
        /sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/i,
      );
      // A masked text frame "hi", sent right after the 101.
      await conn.write(
        new Uint8Array([0x81, 0x82, 1, 2, 3, 4, 0x68 ^ 1, 0x69 ^ 2]),
      );
      const n = await conn.read(buf);
      assert.deepEqual(
        [...buf.subarray(0, n!)],
        [0x81, 7, ...enc.encode("echo:hi")],
      );
      closeAll([conn]);
    } finally {
      await server.shutdown();
    }
  },
);

Deno.test(
  "ws: shutdown closes upgraded sockets with 1001 and settles",
  opts,
  async () => {
    const server = echoServer();
    const w = open(server.addr.port);
    await w.opened;
    w.ws.send("x");
    await w.next(1);
    const done = server.shutdown();
    const ev = await w.closed;
    assert.equal(ev.code, 1001);
    await done;
  },
);

Deno.test(
  "ws: a bad upgrade request throws before anything is written",
  opts,
  async () => {
    const server = listen((req) => {
      try {
        upgradeWebSocket(req);
        return Promise.resolve(new Response("upgraded?"));
      } catch (err) {
        return Promise.resolve(new Response(String(err), { status: 400 }));
      }
    }, { port: 0, hostname: "127.0.0.1", webSockets: true, log: () => {} });
    try {
      const res = await fetch(`http://127.0.0.1:${server.addr.port}/ws`);
      assert.equal(res.status, 400);
      assert.match(await res.text(), /upgrade/i);
      // The connection still serves.
      const again = await fetch(`http://127.0.0.1:${server.addr.port}/`);
      assert.equal(again.status, 400);
      await again.body?.cancel();
    } finally {
      await server.shutdown();
    }
  },
);
