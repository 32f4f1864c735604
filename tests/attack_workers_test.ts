/**
 * Attacks on `serve --workers N`: the connection cap split among isolates
 * that share one port through SO_REUSEPORT, and worker counts given to
 * `createApp` that no CLI check sees.
 *
 * @module
 */

import { assert, assertEquals, startServer } from "./_server.ts";
import { OPEN_RULES, startCluster } from "./_workers_fixtures.ts";
import { openSse, type SseClient } from "./_realtime_client.ts";
import { pause } from "./_wait.ts";

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

Deno.test({
  ...opts,
  name:
    "attack workers: the process's connection cap holds for the process, not for the isolate a client filled",
  async fn() {
    // A process cap of 4: two isolates of 2 each.
    const c = await startCluster("sqlite", {
      args: ["--maxConnections", "4"],
    });
    const streams: SseClient[] = [];
    try {
      const r = await c.call("POST", "/api/v1/schemas", {
        token: c.admin,
        body: { name: "feed", type: "base", fields: [], rules: OPEN_RULES },
      });
      assertEquals(r.status, 201, r.text);
      // Two long-lived streams, both on isolate 0 (the others closed).
      for (let i = 0; i < 30 && streams.length < 2; i++) {
        const s = await openSse({ url: c.url } as never, "topics=feed");
        assertEquals(s.status, 200);
        if (s.headers.get("x-moonbase-worker") === "0") streams.push(s);
        else s.close();
      }
      assertEquals(streams.length, 2, "two streams on isolate 0");
      await pause(300); // closed ones settle
      // 2 of the process's 4 connections are open: every new one must be
      // answered, whichever isolate the kernel hands it to.
      const statuses = await Promise.all(
        Array.from({ length: 12 }, () => fresh(`${c.url}/api/v1/health`, 3000)),
      );
      const hung = statuses.filter((s) => s !== 200).length;
      assertEquals(
        hung,
        0,
        `${hung} of 12 new connections unanswered with the process at half its cap: ${statuses}`,
      );
    } finally {
      for (const s of streams) s.close();
      await c.kill();
    }
  },
});

for (const workers of [-1, 0.5, Number.NaN]) {
  Deno.test({
    ...opts,
    name:
      `attack workers: createApp({ workers: ${workers} }) is refused or serves, never a hang`,
    async fn() {
      let s: Awaited<ReturnType<typeof startServer>> | undefined;
      try {
        s = await startServer("sqlite", {
          workers,
          maxConnections: 64,
        });
      } catch (err) {
        // A clear refusal is fine.
        assert(
          err instanceof Error && /workers/i.test(err.message),
          `refused without naming workers: ${err}`,
        );
        return;
      }
      try {
        const status = await fresh(`${s.url}/api/v1/health`, 3000);
        assertEquals(status, 200, "a health request is answered");
      } finally {
        await s.close();
      }
    },
  });
}
