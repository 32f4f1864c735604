/**
 * Attacks on the realtime fixes of the first review: the paced resume
 * (hub `#replay` with `sink.drain()`, the pending queue of live events while
 * resuming), the SSE backlog (backlog.ts), events carrying the entity id (a
 * resume racing an entity's deletion), and PostgreSQL gap settling with the
 * try-lock under continuous concurrent writes.
 *
 * Cases named "found and fixed: …" show a bug and fail until it is fixed; the others
 * held and stay as regression guards. Each case uses entities of its own; a
 * keeper subscription keeps each server's feed running.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { openSse, type SseMessage } from "./_realtime_client.ts";
import { pause, poll } from "./_wait.ts";
import {
  changes,
  entity,
  keeper,
  strings,
  subscribe,
} from "./_attack_realtime.ts";
import { connect, enc } from "./_tcp.ts";

/** Creates `n` records of `name` through the library (events, no HTTP). */
async function create(
  s: TestServer,
  name: string,
  n: number,
  t: (i: number) => string,
): Promise<void> {
  const e = s.app.schemas.get(name)!;
  for (let i = 0; i < n; i++) await e.create({ t: t(i) });
}

/** Reads change events of `c` until `n` arrived (or `ms` pass, or it ends). */
async function collect(
  c: { next(ms?: number): Promise<SseMessage | undefined> },
  n: number,
  ms: number,
): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  const deadline = Date.now() + ms;
  while (out.length < n && Date.now() < deadline) {
    const m = await c.next(Math.max(1, deadline - Date.now()));
    if (!m) break;
    if (changes([m]).length) out.push(m);
    else if (m.event === "error") {
      throw new Error(`stream ended: ${JSON.stringify(m.data)}`);
    }
  }
  return out;
}

function hubSize(s: TestServer): number {
  return s.app.realtime!.hub.subscribers.size;
}

forEachDb(
  "attack realtime fixes: paced resume, backlog, deletes, busy writes",
  async (t, db) => {
    const s = await startServer(db, { realtimeHeartbeat: 1 });
    const keep = await keeper(s);
    try {
      await t.step(
        "a resume with live writes during it: every event once, in id order",
        async () => {
          const E = "a_live";
          await entity(s, E, strings("t"));
          const from = await keep.anchor();
          await create(s, E, 250, (i) => `old${i}`);
          const c = await subscribe(s, `topics=${E}&lastEventId=${from}`);
          // Live writes while the resume pages through the log.
          const live = create(s, E, 150, (i) => `new${i}`);
          const got = await collect(c, 400, 10_000);
          await live;
          got.push(...await collect(c, 400 - got.length, 3000));
          c.close();
          const ids = got.map((m) => Number(m.id));
          assert.equal(got.length, 400, `got ${got.length}`);
          assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), "order");
          assert.deepEqual(
            got.map((m) => m.data.record.t),
            [
              ...Array.from({ length: 250 }, (_, i) => `old${i}`),
              ...Array.from({ length: 150 }, (_, i) => `new${i}`),
            ],
          );
        },
      );

      await t.step(
        "found and fixed: a resume over large records drops a client that reads as fast as it can",
        async () => {
          // 100 events of 45 KB: one replay page is 4.5 MB, over 4 × the
          // default 1 MiB buffer, queued at once whatever the client reads.
          const E = "b_big";
          await entity(s, E, strings("t"));
          const from = await keep.anchor();
          await create(s, E, 110, (i) => `${i}:` + "x".repeat(45_000));
          const c = await openSse(s, `topics=${E}&lastEventId=${from}`);
          assert.equal(c.status, 200);
          const msgs: SseMessage[] = [];
          const deadline = Date.now() + 10_000;
          while (changes(msgs).length < 110 && Date.now() < deadline) {
            const m = await c.next(3000);
            if (!m) break;
            msgs.push(m);
          }
          c.close();
          const error = msgs.find((m) => m.event === "error")?.data;
          assert.deepEqual(
            { error, events: changes(msgs).length },
            { error: undefined, events: 110 },
            "the stream ended early",
          );
        },
      );

      await t.step(
        "a resuming client that never reads is ended and leaves the hub",
        async () => {
          const E = "c_stuck";
          await entity(s, E, strings("t"));
          const from = await keep.anchor();
          // 7 MB to replay: more than the socket buffers and the 1 MiB queue.
          await create(s, E, 200, (i) => `${i}:` + "y".repeat(35_000));
          const before = hubSize(s);
          const conn = await connect(Number(new URL(s.url).port));
          await conn.write(enc.encode(
            `GET /api/v1/realtime?topics=${E}&lastEventId=${from} HTTP/1.1\r\nHost: x\r\n\r\n`,
          ));
          try {
            await poll("joined", () => hubSize(s) === before + 1, {
              deadline: 15_000,
            });
            // Live writes pile up while it is stuck.
            await create(s, E, 50, (i) => `live${i}`);
            await poll("left the hub", () => hubSize(s) === before, {
              deadline: 15_000,
            });
          } finally {
            conn.close();
          }
        },
      );

      await t.step(
        "a resume racing the entity's deletion and a new entity of its name: no old event flows",
        async () => {
          const E = "d_gone";
          await entity(s, E, strings("t"));
          const from = await keep.anchor();
          await create(s, E, 150, (i) => `secret${i}`);
          // The resume starts; the entity is deleted and made again meanwhile.
          const c = await openSse(
            s,
            `topics=${E},${keep.name}&lastEventId=${from}`,
          );
          assert.equal(c.status, 200);
          const del = await s.request("DELETE", `/api/v1/schemas/${E}`, {
            token: await s.adminToken(),
          });
          assert.ok(del.status === 204 || del.status === 200, del.text);
          await entity(s, E, strings("t"));
          await create(s, E, 3, (i) => `fresh${i}`);
          const msgs: SseMessage[] = [];
          for (;;) {
            const m = await c.next(3000);
            if (!m) break;
            msgs.push(m);
            if (
              changes(msgs).filter((x) => x.data.entity === E).length >= 153
            ) {
              break;
            }
            if (m.data?.record?.t === "fresh2") break;
          }
          c.close();
          const ts = changes(msgs).filter((m) => m.data.entity === E).map((m) =>
            m.data.record.t as string
          );
          // Events of the old entity that were sent before the deletion are
          // fine; none may come after one of the new entity.
          const firstFresh = ts.findIndex((x) => x.startsWith("fresh"));
          assert.ok(firstFresh >= 0, `no fresh event: ${ts.slice(-5)}`);
          assert.deepEqual(
            ts.slice(firstFresh),
            ["fresh0", "fresh1", "fresh2"],
          );
        },
      );

      await t.step(
        "events keep flowing in order, none stalls for seconds",
        async () => {
          const E = "e_busy";
          await entity(s, E, strings("t"));
          const c = await subscribe(s, `topics=${E}`);
          const arrived = new Map<string, number>();
          const order: number[] = [];
          let reading = true;
          const written: { t: string; at: number }[] = [];
          const reader = (async () => {
            while (reading || order.length < written.length) {
              const m = await c.next(4000);
              if (!m) break;
              if (m.event !== "create") continue;
              order.push(Number(m.id));
              arrived.set(m.data.record.t, Date.now());
            }
          })();
          // On PostgreSQL writes go on for 6 s: a gap that waited for the
          // writes to stop would wait seconds longer than settling takes
          // (at most ~2 s of patience, then the lock).
          const stopAt = Date.now() + (db === "postgres" ? 6000 : 2500);
          const e = s.app.schemas.get(E)!;
          const writer = async (w: number) => {
            for (let i = 0; Date.now() < stopAt; i++) {
              const t = `${w}-${i}`;
              await e.create({ t });
              written.push({ t, at: Date.now() });
              await pause(1); // busy, yet the reader gets its turns
            }
          };
          // Ids burned outside any write: gaps only settling can close.
          const burner = (async () => {
            if (db !== "postgres") return;
            while (Date.now() < stopAt) {
              await s.app.storage.query(
                `SELECT nextval(pg_get_serial_sequence('"mb_events"', 'id')) AS "n"`,
              );
              await pause(150);
            }
          })();
          await Promise.all([
            ...Array.from({ length: 6 }, (_, w) => writer(w)),
            burner,
          ]);
          await poll("all events", () => arrived.size >= written.length, {
            deadline: 15_000,
          })
            .catch(() => {});
          reading = false;
          c.close();
          await reader;
          const missing = written.filter((w) => !arrived.has(w.t));
          const lags = written.filter((w) => arrived.has(w.t)).map((w) =>
            arrived.get(w.t)! - w.at
          );
          const worst = Math.max(0, ...lags);
          assert.equal(
            missing.length,
            0,
            `missing ${missing.length}/${written.length}`,
          );
          assert.ok(
            order.every((id, i) => i === 0 || id > order[i - 1]),
            "order",
          );
          assert.ok(
            worst < 4500,
            `an event waited ${worst} ms (${written.length} writes)`,
          );
        },
      );
    } finally {
      keep.close();
      await s.close();
    }
  },
);
