/**
 * Realtime lifecycle, black-box over HTTP: the SSE
 * heartbeat; a stream ends within 2 s with a final `event: error` (status
 * 401) when its token is logged out, its user's password changes, its user
 * is deleted or its token expires; a client that stops reading is dropped;
 * the limits on topics and on connections per token and per guest address,
 * and a closed stream freeing its slot.
 *
 * One server per database (heartbeat 1 s, a 256 KiB buffer, small limits);
 * every step uses its own entity and users.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { openSse, type SseClient } from "./_realtime_client.ts";
import { pause, poll, settlesWithin } from "./_wait.ts";
import { makeEntity, OPEN, userOf } from "./_extend_fixtures.ts";
import type { Subscriber } from "../lib/realtime/subscriber.ts";

const MAX_TOPICS = 5;
const MAX_CONNECTIONS = 3;
const BUFFER = 256 * 1024;

let seq = 0;
/** A fresh open entity (its own name per step). */
async function entity(
  s: TestServer,
  fields: Record<string, unknown>[] = [{ name: "title", type: "string" }],
): Promise<string> {
  const name = `lc_${++seq}`;
  await oneAtATime(() => makeEntity(s, { name, fields, rules: OPEN }));
  return name;
}

/**
 * Schema changes of the concurrent cases one at a time: once under full
 * CI load two concurrent creates on PostgreSQL answered a 500, not seen
 * since in isolation; this file tests realtime, not that race.
 */
let schemaChain: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const next = schemaChain.then(fn, fn);
  schemaChain = next.catch(() => {});
  return next;
}

/** A fresh auth entity whose users may list and read every record. */
async function users(s: TestServer): Promise<string> {
  const name = `lc_users_${++seq}`;
  await oneAtATime(() =>
    makeEntity(s, { name, type: "auth", fields: [], rules: OPEN })
  );
  return name;
}

/** The subscribers this instance holds, once they settle at `n`. */
async function settles(
  s: TestServer,
  n: number,
  what: string,
): Promise<void> {
  await poll(
    `${what}: ${n} subscriber(s)`,
    () => s.app.realtime!.hub.subscribers.size === n,
    { deadline: 15_000 },
  );
}

/** Runs independent cases at once; fails naming every case that failed. */
async function concurrently(
  cases: Record<string, () => Promise<void>>,
): Promise<void> {
  const names = Object.keys(cases);
  const results = await Promise.allSettled(names.map((n) => cases[n]()));
  const failed = results.flatMap((r, i) =>
    r.status === "rejected"
      ? [`${names[i]}: ${r.reason?.stack ?? r.reason}`]
      : []
  );
  if (failed.length > 0) throw new Error(failed.join("\n\n"));
}

type Sub = Subscriber;

/** Subscribers of one user. */
function byUser(id: string): (x: Sub) => boolean {
  return (x) => x.auth.type !== "guest" && x.auth.id === id;
}

/** No subscriber matching `pred` is left (within 3 s). */
async function gone(
  s: TestServer,
  pred: (x: Sub) => boolean,
  what: string,
): Promise<void> {
  await poll(
    `${what}: the subscriber is gone`,
    () => ![...s.app.realtime!.hub.subscribers].some(pred),
    { deadline: 15_000 },
  );
}

/** Opens a stream that must start; returns it after its `ready`. */
async function ready(
  s: TestServer,
  query: string,
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<SseClient> {
  const c = await openSse(s, query, opts);
  assert(
    c.status === 200,
    `stream refused: ${c.status} ${JSON.stringify(c.body)}`,
  );
  const first = await c.next();
  assertEquals(first?.event, "ready");
  return c;
}

/**
 * The stream ends, and its last message is an `event: error` with status
 * 401. Nothing else ends it, so that is the proof; the deadline only turns a
 * hang into a failure (how soon the watchdog acts is lib/realtime/watchdog.ts's
 * period, not a claim here).
 */
async function endsWith401(c: SseClient): Promise<void> {
  const won = await settlesWithin(
    c.ended.then(() => "ended" as const),
    DEADLINE,
  );
  assert(won === "ended", `the stream did not end within ${DEADLINE} ms`);
  const rest = await c.drain(0);
  const last = rest.at(-1);
  assertEquals(last?.event, "error", `last message: ${JSON.stringify(rest)}`);
  assertEquals(last?.data.status, 401);
  assert(
    typeof last?.data.error === "string" && last.data.error.length > 0,
    "the error says why",
  );
}

/** When a stream that should end counts as hung (no claim about speed). */
const DEADLINE = 20_000;

forEachDb(
  "realtime lifecycle: heartbeat, revocation, slow consumers, limits",
  async (t, db) => {
    const s = await startServer(db, {
      realtimeHeartbeat: 1,
      realtimeBuffer: BUFFER,
      realtimeMaxTopics: MAX_TOPICS,
      realtimeMaxConnections: MAX_CONNECTIONS,
      trustProxy: true,
    });
    const admin = await s.adminToken();
    try {
      // Independent cases that wait on timers run at once (time budget);
      // each has its own entity, users and address.
      await t.step(
        "heartbeat; token end (logout, password, deletion, expiry)",
        () =>
          concurrently({
            "heartbeat comments arrive every realtimeHeartbeat s": async () => {
              const e = await entity(s);
              const ip = "203.0.113.50";
              const c = await ready(s, `topics=${e}`, {
                headers: { "x-forwarded-for": ip },
              });
              try {
                await poll("two heartbeats", () => c.comments >= 2, {
                  deadline: 15_000,
                });
                // Heartbeats are comments: no message was queued for them.
                assertEquals(await c.drain(0), []);
              } finally {
                c.close();
              }
              await gone(s, (x) => x.address === ip, "closed");
            },

            "logout ends the stream within 2 s with event: error 401":
              async () => {
                const e = await entity(s);
                const u = await users(s);
                const { id, token } = await userOf(s, u, "logout@example.com");
                const c = await ready(s, `topics=${e}`, { token });
                const r = await s.request("POST", `/api/v1/auth/${u}/logout`, {
                  token,
                });
                assert(
                  r.status === 200 || r.status === 204,
                  `logout: ${r.status} ${r.text}`,
                );
                await endsWith401(c);
                await gone(s, byUser(id), "after logout");
              },

            "the user's password change ends the stream": async () => {
              const e = await entity(s);
              const u = await users(s);
              const { id, token } = await userOf(s, u, "pw@example.com");
              const c = await ready(s, `topics=${e}`, { token });
              const r = await s.request(
                "PATCH",
                `/api/v1/entities/${u}/${id}`,
                {
                  token: admin,
                  body: { password: "another-password-9" },
                },
              );
              assertStatus(r, 200, "admin sets a new password");
              await endsWith401(c);
              await gone(s, byUser(id), "after the password change");
            },

            "deleting the user record ends the stream": async () => {
              const e = await entity(s);
              const u = await users(s);
              const { id, token } = await userOf(s, u, "gone@example.com");
              const c = await ready(s, `topics=${e}`, { token });
              const r = await s.request(
                "DELETE",
                `/api/v1/entities/${u}/${id}`,
                {
                  token: admin,
                },
              );
              assert(
                r.status === 200 || r.status === 204,
                `delete: ${r.status} ${r.text}`,
              );
              await endsWith401(c);
              await gone(s, byUser(id), "after the deletion");
            },

            "an expired token ends the stream": async () => {
              const e = await entity(s);
              const u = await users(s);
              const { id } = await userOf(s, u, "ttl@example.com");
              // exp = floor(now) + 2: it expires 1-2 s from now.
              const { token, claims } = await s.app.signer.sign(id, u, {
                ttl: 2,
              });
              const c = await ready(s, `topics=${e}`, { token });
              // Opened (a 200 above) while the token was valid: under load it
              // may be expired already, then there is nothing to wait for.
              const wait = claims.exp * 1000 - s.app.now();
              assert(wait <= 2000, `expires in ${wait} ms`);
              await pause(Math.max(0, wait)); // the token expires in real time
              await endsWith401(c);
              await gone(s, byUser(id), "after expiry");
            },

            "another user's logout leaves a stream alone": async () => {
              // Control for the cases above: a live stream gets events while
              // another user's token of the same entity ends.
              const e = await entity(s);
              const u = await users(s);
              const a = await userOf(s, u, "stay@example.com");
              const b = await userOf(s, u, "leave@example.com");
              const ca = await ready(s, `topics=${e}`, { token: a.token });
              const cb = await ready(s, `topics=${e}`, { token: b.token });
              try {
                await s.request("POST", `/api/v1/auth/${u}/logout`, {
                  token: b.token,
                });
                await endsWith401(cb);
                const r = await s.request("POST", `/api/v1/entities/${e}`, {
                  body: { title: "still here" },
                });
                assertStatus(r, 201);
                const m = await ca.next();
                assertEquals([m?.event, m?.data.record.title], [
                  "create",
                  "still here",
                ]);
                assert(
                  [...s.app.realtime!.hub.subscribers].some(byUser(a.id)),
                  "a's stream is still subscribed",
                );
              } finally {
                ca.close();
              }
              await gone(s, byUser(a.id), "closed");
            },
          }),
      );
      await settles(s, 0, "every stream of the cases above closed");

      await t.step("a client that stops reading is disconnected", async () => {
        const e = await entity(s, [{ name: "body", type: "text" }]);
        // A reader that keeps up: it must stay, and get every event.
        const reading = await ready(s, `topics=${e}`, { token: admin });
        const ac = new AbortController();
        const res = await fetch(`${s.url}/api/v1/realtime?topics=${e}`, {
          headers: { authorization: `Bearer ${admin}` },
          signal: ac.signal,
        });
        assertEquals(res.status, 200);
        const reader = res.body!.getReader();
        // Read the opening (retry + ready), then stop reading.
        const dec = new TextDecoder();
        let head = "";
        while (!head.includes("event: ready")) {
          const { value, done } = await reader.read();
          assert(!done, "the stream ended before ready");
          head += dec.decode(value);
        }
        const hub = s.app.realtime!.hub;
        await settles(s, 2, "both streams are subscribed");
        // Each event (12 KB) is far below the buffer: only events piling up
        // unread exceed it, once the kernel's socket buffers (a few MB) are
        // full. One write at a time, so no burst is what fills it.
        const body = "x".repeat(12_000);
        const entities = s.app.schemas.get(e)!;
        let writes = 0;
        const got = [];
        try {
          // In step with the reader (each event read before the next write):
          // it is never behind, however slowly a loaded machine runs it.
          while (hub.subscribers.size > 1 && writes < 1500) {
            await entities.create({ body });
            writes++;
            const m = await reading.next();
            if (!m) break;
            got.push(m);
          }
          assertEquals(
            hub.subscribers.size,
            1,
            `the non-reader is dropped, the reader stays (${writes} writes)`,
          );
          assertEquals(got.length, writes, "the reader got every event");
          assert(got.every((m) => m.event === "create"));
          // Reading the dropped stream on: what was already in transit, then
          // an abrupt end (an error), never every event.
          let events = 0, buf = "";
          const drained = (async () => {
            try {
              for (;;) {
                const { value, done } = await reader.read();
                if (done) return "done";
                buf += dec.decode(value, { stream: true });
                const blocks = buf.split("\n\n");
                buf = blocks.pop()!;
                events += blocks.filter((b) => b.includes("event: create"))
                  .length;
              }
            } catch {
              return "error";
            }
          })();
          const how = await settlesWithin(drained, 5000);
          assert(how !== "timeout", "the dropped stream stays open");
          assert(events < writes, `got ${events} of ${writes}: not dropped`);
        } finally {
          ac.abort();
          reading.close();
        }
        await settles(s, 0, "closed");
      });

      await t.step("too many topics: 400 with a clear error", async () => {
        const e = await entity(s);
        const topics = [
          e,
          ...Array.from({ length: MAX_TOPICS }, (_, i) => `${e}/r${i}`),
        ];
        assertEquals(topics.length, MAX_TOPICS + 1);
        const c = await openSse(s, `topics=${topics.join(",")}`, {
          token: admin,
        });
        assertEquals(c.status, 400);
        assert(
          /too many topics/.test(c.body?.error),
          `error: ${c.body?.error}`,
        );
        assert(c.body.error.includes(String(MAX_TOPICS)), "it names the limit");
        // Exactly the limit is fine.
        const ok = await ready(
          s,
          `topics=${topics.slice(0, MAX_TOPICS).join(",")}`,
          {
            token: admin,
          },
        );
        ok.close();
        await settles(s, 0, "closed");
      });

      await t.step(
        "more than realtimeMaxConnections per token: 429",
        async () => {
          const e = await entity(s);
          const u = await users(s);
          const { id, token } = await userOf(s, u, "many@example.com");
          const open: SseClient[] = [];
          try {
            for (let i = 0; i < MAX_CONNECTIONS; i++) {
              open.push(await ready(s, `topics=${e}`, { token }));
            }
            const over = await openSse(s, `topics=${e}`, { token });
            assertEquals(over.status, 429);
            assert(
              /at most 3 per token/.test(over.body?.error),
              `error: ${over.body?.error}`,
            );
            // The limit is per token: another token of the same user may connect,
            // and so may the same token through ?token=.
            const other = (await s.app.sessions.issue(
              s.app.schemas.get(u)!,
              (await s.app.schemas.get(u)!.read(id))!,
            )).token;
            const viaQuery = await openSse(s, `topics=${e}&token=${other}`);
            assertEquals(viaQuery.status, 200);
            open.push(viaQuery);
            // Closing one frees its slot.
            open.shift()!.close();
            await settles(s, MAX_CONNECTIONS, "one closed");
            open.push(await ready(s, `topics=${e}`, { token }));
          } finally {
            for (const c of open) c.close();
          }
          await settles(s, 0, "every stream closed");
        },
      );

      await t.step("guests: limited per client address", async () => {
        const e = await entity(s);
        const from = (ip: string) => ({ headers: { "x-forwarded-for": ip } });
        const open: SseClient[] = [];
        try {
          for (let i = 0; i < MAX_CONNECTIONS; i++) {
            open.push(await ready(s, `topics=${e}`, from("198.51.100.7")));
          }
          const over = await openSse(s, `topics=${e}`, from("198.51.100.7"));
          assertEquals(over.status, 429);
          assert(
            /at most 3 per client address/.test(over.body?.error),
            `error: ${over.body?.error}`,
          );
          // Another address has its own allowance.
          open.push(await ready(s, `topics=${e}`, from("198.51.100.8")));
          // Events reach the guests.
          await s.request("POST", `/api/v1/entities/${e}`, {
            body: { title: "g" },
          });
          for (const c of open) assertEquals((await c.next())?.event, "create");
        } finally {
          for (const c of open) c.close();
        }
        await settles(s, 0, "every guest stream closed");
        // Slots are free again.
        const again = await ready(s, `topics=${e}`, from("198.51.100.7"));
        again.close();
        await settles(s, 0, "closed");
      });

      await t.step("closing a stream frees its slot", async () => {
        const e = await entity(s);
        const c = await ready(s, `topics=${e}`, { token: admin });
        assertEquals(s.app.realtime!.hub.subscribers.size, 1);
        c.close();
        await settles(s, 0, "closed by the client");
        // A write after it does not bring it back or fail.
        const r = await s.request("POST", `/api/v1/entities/${e}`, {
          body: { title: "after" },
        });
        assertStatus(r, 201);
        assertEquals(s.app.realtime!.hub.subscribers.size, 0);
      });

      // Regression (SQLite): the feed's start never awaited, so it kept its
      // settled "starting" promise and never restarted after a stop.
      await t.step(
        "a stream opened after the last one closed gets live events",
        async () => {
          const e = await entity(s);
          const first = await ready(s, `topics=${e}`, { token: admin });
          first.close();
          await settles(s, 0, "the last stream closed");
          const c = await ready(s, `topics=${e}`, { token: admin });
          try {
            const r = await s.request("POST", `/api/v1/entities/${e}`, {
              body: { title: "live" },
            });
            assertStatus(r, 201);
            const m = await c.next();
            assertEquals([m?.event, m?.data?.record.title], ["create", "live"]);
          } finally {
            c.close();
          }
          await settles(s, 0, "closed");
        },
      );
    } finally {
      await s.close();
    }
  },
);
