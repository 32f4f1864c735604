/**
 * Every message a WebSocket sink sends counts against its backlog: replies
 * (ready, error) to a client that does not read them end the connection
 * like events do, instead of piling up without bound.
 *
 * @module
 */

import assert from "node:assert/strict";
import { WsSink } from "./ws.ts";

/** A socket whose client never reads: every message stays buffered. */
class UnreadSocket {
  readyState: number = WebSocket.OPEN;
  bufferedAmount = 0;
  closedWith: number | undefined;
  send(text: string): void {
    this.bufferedAmount += text.length;
  }
  close(code?: number): void {
    this.closedWith = code;
    this.readyState = WebSocket.CLOSING;
  }
}

const LIMIT = 10_000;
const TOPICS = Array.from(
  { length: 100 },
  (_, i) => `posts/${"r".repeat(60)}${i}`,
);

for (
  const [name, reply] of [
    ["ready", (s: WsSink) => s.ready(TOPICS, false)],
    ["error", (s: WsSink) => s.error(new Error("x".repeat(500)))],
  ] as const
) {
  Deno.test(`ws sink: ${name} replies to a client that never reads end it (4503)`, () => {
    const socket = new UnreadSocket();
    let gone = 0;
    const sink = new WsSink(
      socket as unknown as WebSocket,
      LIMIT,
      () => gone++,
    );
    for (let i = 0; i < 10_000 && !sink.closed; i++) reply(sink);
    assert.equal(sink.closed, true, "closed");
    assert.equal(socket.closedWith, 4503);
    assert.equal(gone, 1);
    // Bounded: never far past four times the limit (one reply more at most).
    assert.ok(
      socket.bufferedAmount <= 4 * LIMIT + 8_000,
      `buffered ${socket.bufferedAmount}`,
    );
    // Once closed, nothing more is sent.
    const before = socket.bufferedAmount;
    reply(sink);
    assert.equal(socket.bufferedAmount, before);
  });
}

Deno.test("ws sink: a reader that keeps up is never closed for its replies", () => {
  const socket = new UnreadSocket();
  const sink = new WsSink(socket as unknown as WebSocket, LIMIT, () => {});
  for (let i = 0; i < 1000; i++) {
    sink.ready(TOPICS, false);
    socket.bufferedAmount = 0; // read at once
  }
  assert.equal(sink.closed, false);
});
