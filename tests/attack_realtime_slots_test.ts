/**
 * WebSockets count against the stream limits from their upgrade on (issue
 * 28 item 3, attacked again): a socket that never sends its first message
 * (no caller yet) held a connection slot uncounted for 10 s, so one
 * address upgrading again and again held every slot, and ordinary requests
 * waited for the sockets to time out.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startServer } from "./_server.ts";
import { type RawWs, rawWs } from "./_raw_ws.ts";
import { poll, settlesWithin } from "./_wait.ts";

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

/** An upgrade, or the status line that refused it (none within `ms`: "timeout"). */
async function upgrade(url: string, ms: number): Promise<RawWs | string> {
  try {
    return await settlesWithin(rawWs(url), ms);
  } catch (err) {
    return String(err);
  }
}

Deno.test({
  ...opts,
  name: "attack realtime slots: silent WebSockets count from their upgrade",
  async fn(t) {
    const s = await startServer("sqlite", {
      webSocket: true,
      maxConnections: 40,
      realtimeMaxPerAddress: 30,
    });
    const open: RawWs[] = [];
    try {
      await t.step(
        "found and fixed: one address's silent sockets stop at its limit; requests still get a slot",
        async () => {
          const refused: string[] = [];
          for (let i = 0; i < 40; i++) {
            const got = await upgrade(s.url, 3000);
            if (typeof got === "string") refused.push(got);
            else open.push(got);
          }
          assert.equal(open.length, 30, `upgraded: ${open.length}`);
          assert.ok(
            refused.every((r) => r.includes("429")),
            `refused: ${refused}`,
          );
          // On main the 40 sockets held every slot until their first
          // message was due (10 s).
          assert.equal(await fresh(`${s.url}/api/v1/health`, 5000), 200);
        },
      );

      await t.step("closed sockets give their counts back", async () => {
        for (const ws of open.splice(0)) ws.conn.close();
        let last = "";
        const got: RawWs | string = await poll(
          "an upgrade accepted again",
          async () => {
            const up = await upgrade(s.url, 3000);
            if (typeof up !== "string") return up;
            last = up;
            return false;
          },
          { deadline: 10_000, every: 50 },
        ).catch((e) => `${e.message}; last refusal: ${last}`);
        assert.ok(typeof got !== "string", `still refused: ${got}`);
        open.push(got);
        // All 30 again: nothing leaked.
        for (let i = 1; i < 30; i++) {
          const more = await upgrade(s.url, 3000);
          assert.ok(typeof more !== "string", `upgrade ${i}: ${more}`);
          open.push(more);
        }
      });
    } finally {
      for (const ws of open) ws.conn.close();
      await s.close();
    }
  },
});
