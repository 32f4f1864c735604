/**
 * Attacks on realtime resources (issue 28): WebSocket replies to a client
 * that never reads them, WebSocket frames longer than any message, and
 * streams from one address or one user taking every connection slot.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startServer, type TestServer } from "./_server.ts";
import { entity, sleep, strings } from "./_attack_realtime.ts";
import { frameHead, rawWs, readToEnd, textFrame } from "./_raw_ws.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** `GET path` on a connection of its own; the status, or 0 after `ms`. */
async function fresh(url: string, ms: number): Promise<number> {
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  try {
    const res = await fetch(url, { client, signal: AbortSignal.timeout(ms) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  } finally {
    client.close();
  }
}

/** Polls health on fresh connections until `done` settles; the statuses. */
async function healthWhile(s: TestServer, done: Promise<unknown>) {
  let over = false;
  done.finally(() => over = true);
  const statuses: number[] = [];
  while (!over || statuses.length === 0) {
    statuses.push(await fresh(`${s.url}/api/v1/health`, 10_000));
    await sleep(50);
  }
  return statuses;
}

Deno.test({
  ...opts,
  name: "attack realtime limits: WebSocket replies and frames",
  async fn(t) {
    const s = await startServer("sqlite", {
      webSocket: true,
      realtimeBuffer: 64 * 1024,
    });
    try {
      await entity(s, "a_flood", strings("t"));
      const topics = Array.from(
        { length: 100 },
        (_, i) => `a_flood/${"r".repeat(60)}${i}`,
      );

      await t.step(
        "found and fixed: a client that never reads its replies is closed, the server keeps answering",
        async () => {
          const ws = await rawWs(s.url);
          // ~7 KB of topics back for each, never read.
          const frame = textFrame(
            JSON.stringify({ type: "subscribe", topics }),
          );
          const flood = (async () => {
            try {
              for (let i = 0; i < 4000; i++) {
                await ws.conn.write(frame);
                if (i % 8 === 7) await sleep(1);
              }
            } catch { /* closed by the server: what we want */ }
          })();
          const health = await healthWhile(s, flood);
          await flood;
          const end = await readToEnd(ws, 15_000, 16 * 1024 * 1024);
          assert.ok(
            end.ended,
            `still open after ${end.bytes} bytes of replies (close ${end.closeCode})`,
          );
          if (end.closeCode !== undefined) {
            assert.ok([4503, 4429].includes(end.closeCode), `${end.closeCode}`);
          }
          assert.deepEqual(
            health.filter((x) => x !== 200),
            [],
            "health answers during the flood",
          );
        },
      );

      await t.step(
        "found and fixed: a frame longer than a message may be is refused from its header (1009)",
        async () => {
          // Eight guests each announce a 60 MiB frame and send 1 MiB of it.
          const conns = await Promise.all(
            Array.from({ length: 8 }, () => rawWs(s.url)),
          );
          const chunk = new Uint8Array(1024 * 1024);
          const ends = await Promise.all(conns.map(async (ws) => {
            try {
              await ws.conn.write(frameHead(60 * 1024 * 1024));
              await ws.conn.write(chunk);
            } catch { /* closed by the server already */ }
            return await readToEnd(ws, 10_000);
          }));
          for (const end of ends) {
            assert.equal(end.closeCode, 1009, `close ${end.closeCode}`);
            assert.ok(end.ended, "the connection ends");
          }
          // A frame of exactly the largest message is read: its answer is
          // an error message, and the connection stays.
          const ws = await rawWs(s.url);
          await ws.conn.write(textFrame("x".repeat(16 * 1024)));
          const end = await readToEnd(ws, 1000);
          assert.equal(end.ended, false);
          assert.match(end.texts[0] ?? "", /"status":400/);
          assert.equal(await fresh(`${s.url}/api/v1/health`, 10_000), 200);
        },
      );
    } finally {
      await s.close();
    }
  },
});
