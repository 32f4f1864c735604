/**
 * The framed WebSocket (websocket.ts) speaks RFC 6455 with a raw client:
 * fragments, pings, close handshakes, binary messages, and the refusals
 * (unmasked frames, bad UTF-8, a message too big from its header, a
 * silent client).
 *
 * @module
 */

import assert from "node:assert/strict";
import { listen, upgradeWebSocket } from "./server.ts";
import type { ServerSocket } from "./websocket.ts";
import { poll } from "../../tests/_wait.ts";
import {
  clientFrame,
  frameHead,
  type RawEnd,
  rawUpgrade,
  readToEnd,
  writeAll,
} from "../../tests/_raw_ws.ts";

const opts = { sanitizeOps: true, sanitizeResources: true };
const enc = new TextEncoder();

/** The sockets the echo server opened, and how many of them closed. */
const opened: ServerSocket[] = [];
let closedSockets = 0;

/** Echo server: messages come back as `echo:<data>` (binary: its size). */
function echoServer() {
  return listen((req) => {
    if (new URL(req.url).pathname === "/count") return countServer(req);
    const { socket, response } = upgradeWebSocket(req, {
      maxMessageBytes: 100,
      idleTimeout: new URL(req.url).pathname === "/idle" ? 0.2 : 30,
    });
    opened.push(socket);
    socket.addEventListener("close", () => closedSockets++);
    socket.onmessage = (e) =>
      socket.send(
        typeof e.data === "string"
          ? `echo:${e.data}`
          : `binary:${(e.data as ArrayBuffer).byteLength}`,
      );
    return Promise.resolve(response);
  }, {
    port: 0,
    hostname: "127.0.0.1",
    webSockets: true,
    log: () => {},
  });
}

/**
 * `/count`: checks messages `<i>:xxx…` arrive whole and in order, pausing
 * every ten; "done" answers the tally.
 */
function countServer(req: Request): Promise<Response> {
  const { socket, response } = upgradeWebSocket(req, {
    maxMessageBytes: 16 * 1024,
  });
  let good = 0, bad = 0;
  socket.onmessage = (e) => {
    if (e.data === "done") return socket.send(`good:${good} bad:${bad}`);
    if (e.data === `${good + bad}:${"x".repeat(7000)}`) good++;
    else bad++;
    socket.send("y".repeat(7000)); // replies the client reads only later
    // A handler that falls behind pauses the socket (as realtime does).
    if ((good + bad) % 10 === 0) {
      socket.pause?.();
      setTimeout(() => socket.resume?.(), 1);
    }
  };
  return Promise.resolve(response);
}

const closeCode = (end: RawEnd) =>
  end.frames.find((f) => f.op === 8)?.payload.reduce(
    (n, b, i) => i < 2 ? n * 256 + b : n,
    0,
  );

Deno.test("framed websocket: a raw client, frame by frame", opts, async (t) => {
  const server = echoServer();
  const url = `http://127.0.0.1:${server.addr.port}`;
  /** Sends frames; reads until `frames` came back or the connection ends. */
  const exchange = async (
    sent: Uint8Array[],
    frames: number,
    path = "/ws",
    ms = 3000,
  ) => {
    const ws = await rawUpgrade(url, path);
    for (const f of sent) await writeAll(ws.conn, f);
    return await readToEnd(ws, ms, 1 << 20, (e) => e.frames.length >= frames);
  };
  try {
    await t.step(
      "fragments make one message; control frames between them",
      async () => {
        const end = await exchange([
          clientFrame(1, enc.encode("ab"), { fin: false }),
          clientFrame(9, enc.encode("p")),
          clientFrame(0, enc.encode("cd"), { fin: false }),
          clientFrame(0, enc.encode("ef")),
        ], 2);
        assert.deepEqual(
          end.frames.map((f) => [f.op, new TextDecoder().decode(f.payload)]),
          [[10, "p"], [1, "echo:abcdef"]],
        );
      },
    );

    await t.step(
      "frames sent back to back, split across reads anywhere and paused, arrive intact",
      async () => {
        // 2 MB: the reads end mid-frame, and bytes wait (while paused, too)
        // for the next read.
        const frames = Array.from(
          { length: 300 },
          (_, i) => clientFrame(1, enc.encode(`${i}:${"x".repeat(7000)}`)),
        );
        frames.push(clientFrame(1, enc.encode("done")));
        const ws = await rawUpgrade(url, "/count");
        for (const f of frames) await writeAll(ws.conn, f);
        const end = await readToEnd(
          ws,
          10_000,
          1 << 24,
          (e) => e.texts.some((x) => x.startsWith("good")),
        );
        assert.deepEqual(end.texts.filter((x) => x.startsWith("good")), [
          "good:300 bad:0",
        ]);
      },
    );

    await t.step("a binary message arrives as an ArrayBuffer", async () => {
      const end = await exchange([clientFrame(2, new Uint8Array(7))], 1);
      assert.deepEqual(end.texts, ["binary:7"]);
    });

    await t.step(
      "the client's close is answered with its code, then the end",
      async () => {
        const end = await exchange(
          [clientFrame(8, new Uint8Array([3, 232]))],
          9,
        );
        assert.equal(closeCode(end), 1000);
        assert.ok(end.ended);
      },
    );

    const refusals: [string, Uint8Array[], number][] = [
      ["an unmasked frame", [
        clientFrame(1, enc.encode("x"), { masked: false }),
      ], 1002],
      [
        "text that is not UTF-8",
        [clientFrame(1, new Uint8Array([0xff, 0xfe]))],
        1007,
      ],
      [
        "a continuation with no message",
        [clientFrame(0, enc.encode("x"))],
        1002,
      ],
      ["an unknown opcode", [clientFrame(3, enc.encode("x"))], 1002],
      [
        "a fragmented ping",
        [clientFrame(9, enc.encode("x"), { fin: false })],
        1002,
      ],
      ["a frame over the limit, from its header", [frameHead(101)], 1009],
      // Found and fixed: these codes were echoed back (1006 and 1015 must
      // never be sent in a close frame).
      [
        "a close with code 1006",
        [clientFrame(8, new Uint8Array([3, 238]))],
        1002,
      ],
      [
        "a close with code 1015",
        [clientFrame(8, new Uint8Array([3, 247]))],
        1002,
      ],
      [
        "a close with code 999",
        [clientFrame(8, new Uint8Array([3, 231]))],
        1002,
      ],
      [
        "a close with code 5000",
        [clientFrame(8, new Uint8Array([19, 136]))],
        1002,
      ],
      ["a 60 MiB frame, from its header", [frameHead(60 * 1024 * 1024)], 1009],
      [
        "fragments together over the limit",
        [
          clientFrame(1, new Uint8Array(60).fill(120), { fin: false }),
          frameHead(60, 0),
        ],
        1009,
      ],
    ];
    for (const [name, frames, code] of refusals) {
      await t.step(`refused: ${name} (${code})`, async () => {
        const end = await exchange(frames, 9);
        assert.equal(closeCode(end), code);
        assert.ok(end.ended, "the connection ends");
        assert.deepEqual(end.texts, [], "no message was delivered");
      });
    }

    await t.step("a silent client is pinged, then closed", async () => {
      const end = await exchange([], 9, "/idle", 5000);
      assert.ok(end.frames.some((f) => f.op === 9), "pinged");
      assert.ok(end.ended, "closed");
    });

    await t.step("a client that answers pings stays", async () => {
      const ws = await rawUpgrade(url, "/idle");
      let pongs = 0;
      const end = await readToEnd(ws, 1000, 1 << 20, (e) => {
        for (const f of e.frames.splice(0)) {
          if (f.op === 9) {
            pongs++;
            writeAll(ws.conn, clientFrame(10, f.payload)).catch(() => {});
          }
        }
        return false;
      });
      assert.equal(end.ended, false, "still open after five idle periods");
      assert.ok(pongs >= 2, `${pongs} pings answered`);
    });

    await t.step(
      "found and fixed: a client that closes and never ends its side is cut off (its connection freed)",
      async () => {
        const ws = await rawUpgrade(url, "/ws");
        await poll(
          "the socket open",
          () => opened.length > 0 && opened.at(-1)!.readyState === 1,
        );
        const socket = opened.at(-1)!;
        const before = closedSockets;
        // The close handshake, then the TCP connection left open, unread.
        await writeAll(ws.conn, clientFrame(8, new Uint8Array([3, 232])));
        try {
          await poll("the socket closed", () => closedSockets > before, {
            deadline: 10_000,
          });
          assert.equal(socket.readyState, 3);
        } finally {
          ws.conn.close();
        }
      },
    );

    await t.step(
      "found and fixed: empty fragments hold no memory (one message's worth at most)",
      async () => {
        const ws = await rawUpgrade(url, "/ws");
        const empty = clientFrame(0, new Uint8Array(0), { fin: false });
        const burst = new Uint8Array(empty.length * 50_000);
        for (let i = 0; i < 50_000; i++) burst.set(empty, i * empty.length);
        await writeAll(
          ws.conn,
          clientFrame(1, enc.encode("a"), { fin: false }),
        );
        const heap = Deno.memoryUsage().heapUsed;
        let grown = 0;
        // 1.2 M empty continuation frames (7 MB sent): on main each was
        // kept (~100 bytes of heap apiece).
        for (let i = 0; i < 24; i++) {
          await writeAll(ws.conn, burst);
          grown = Math.max(grown, Deno.memoryUsage().heapUsed - heap);
        }
        await writeAll(ws.conn, clientFrame(0, enc.encode("b")));
        const end = await readToEnd(
          ws,
          10_000,
          1 << 20,
          (e) => e.texts.length > 0,
        );
        grown = Math.max(grown, Deno.memoryUsage().heapUsed - heap);
        assert.deepEqual(end.texts, ["echo:ab"], "the message arrives whole");
        assert.ok(grown < 48 * 1024 * 1024, `heap grew by ${grown} bytes`);
      },
    );

    await t.step(
      "found and fixed: pings from a client that never reads buffer one pong at most",
      async () => {
        const ws = await rawUpgrade(url, "/ws");
        await poll(
          "the socket open",
          () => opened.length > 0 && opened.at(-1)!.readyState === 1,
        );
        const socket = opened.at(-1)!;
        const ping = clientFrame(9, new Uint8Array(125).fill(7));
        const burst = new Uint8Array(ping.length * 10_000);
        for (let i = 0; i < 10_000; i++) burst.set(ping, i * ping.length);
        let most = 0;
        // 26 MB of pings, no byte read back (the kernel's buffers hold a
        // few MB of pongs; on main the rest waited in the server's memory).
        for (let i = 0; i < 20; i++) {
          await writeAll(ws.conn, burst);
          most = Math.max(most, socket.bufferedAmount);
        }
        // A message after the pings: once it is handled, so are they.
        let handled = false;
        socket.addEventListener("message", () => handled = true);
        await writeAll(ws.conn, clientFrame(1, enc.encode("z")));
        await poll("the handler to run", () => handled, { deadline: 20_000 });
        most = Math.max(most, socket.bufferedAmount);
        ws.conn.close();
        assert.ok(most < 64 * 1024, `${most} bytes waited to be sent`);
      },
    );
  } finally {
    await server.shutdown();
  }
});
