/**
 * Updates and deletes with realtime on, as PostgreSQL fuses them with their
 * change event (one statement, the bodies built by the database:
 * lib/records/fused_writes.ts), checked against what they must stay on
 * both databases: the event's `record` is the record as stored and
 * answered, `previous` the record before, never a password; a double's -0
 * reads 0 as `JSON.stringify` makes it; an entity whose field name cannot
 * be an alias (64 characters) takes the transaction and gives the same;
 * a rule that hides the record leaves no write and no event. On PostgreSQL,
 * each such PATCH and DELETE is one statement and no transaction.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type TestServer,
} from "./_server.ts";
import { startServer } from "./_server.ts";
import type { Queryable } from "../lib/db/storage.ts";
import { makeEntity, userOf } from "./_extend_fixtures.ts";
import { custom, stored, write } from "./_realtime_cases.ts";

interface EventRow {
  action: string;
  recordId: string;
  record: Record<string, unknown>;
  previous: Record<string, unknown> | null;
  size: number;
  /** UTF-8 bytes of the bodies as stored. */
  stored: number;
}

async function lastEvent(s: TestServer): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COALESCE(MAX("id"), 0) AS "max" FROM "mb_events"`,
  );
  return Number(rows[0].max);
}

async function eventsAfter(s: TestServer, after: number): Promise<EventRow[]> {
  const rows = await s.app.storage.query(
    `SELECT "action", "record_id", "record", "previous", "size" FROM "mb_events" WHERE "id" > ? ORDER BY "id"`,
    [after],
  );
  return rows.map((r) => ({
    action: String(r.action),
    recordId: String(r.record_id),
    record: JSON.parse(String(r.record)),
    previous: r.previous === null ? null : JSON.parse(String(r.previous)),
    size: Number(r.size),
    stored: utf8(String(r.record)) +
      (r.previous === null ? 0 : utf8(String(r.previous))),
  }));
}

const utf8 = (text: string) => new TextEncoder().encode(text).length;

const LONG = "f".repeat(64);

const FIELDS = [
  { name: "title", type: "string" },
  { name: "flag", type: "bool" },
  { name: "meta", type: "json" },
  { name: "score", type: "double" },
  { name: "n", type: "int" },
  { name: "kind", type: "select", values: ["a", "b"] },
  { name: "day", type: "date" },
];

/** Counts the transactions and statements of `s`'s storage while `fn` runs. */
async function counted(
  s: TestServer,
  fn: () => Promise<void>,
): Promise<{ transactions: number; statements: string[] }> {
  const store = s.app.storage;
  const seen = { transactions: 0, statements: [] as string[] };
  const { transaction, query, run } = store;
  store.transaction = <T>(f: (tx: Queryable) => Promise<T>): Promise<T> => {
    seen.transactions++;
    return transaction.call(store, f) as Promise<T>;
  };
  store.query = (sql, params) => {
    seen.statements.push(sql);
    return query.call(store, sql, params);
  };
  store.run = (sql, params) => {
    seen.statements.push(sql);
    return run.call(store, sql, params);
  };
  try {
    await fn();
  } finally {
    delete (store as Partial<typeof store>).transaction;
    delete (store as Partial<typeof store>).query;
    delete (store as Partial<typeof store>).run;
  }
  return seen;
}

/** One PATCH then one DELETE of a fresh record of `entity`, with their events. */
async function patchAndDelete(
  t: Deno.TestContext,
  s: TestServer,
  entity: string,
  create: Record<string, unknown>,
  patch: Record<string, unknown>,
): Promise<void> {
  const before = await write(s, "POST", entity, create);
  let from = await lastEvent(s);
  const answered = await write(s, "PATCH", `${entity}/${before.id}`, patch);
  const now = await stored(s, entity, before.id);
  assertEquals(answered, now, "the answer is the stored record");
  const [ev, ...more] = await eventsAfter(s, from);
  assertEquals(more.length, 0, "one event");
  assertEquals([ev.action, ev.recordId], ["update", before.id]);
  assertEquals(ev.record, now, "the event's record is the stored one");
  assertEquals(ev.previous, before, "previous is the record before");
  assertEquals(ev.size, ev.stored, "size: the stored bodies' bytes");
  from = await lastEvent(s);
  const token = await s.adminToken();
  const gone = await s.request(
    "DELETE",
    `/api/v1/entities/${entity}/${before.id}`,
    {
      token,
    },
  );
  assertStatus(gone, 204, "DELETE");
  const [del, ...rest] = await eventsAfter(s, from);
  assertEquals(rest.length, 0, "one delete event");
  assertEquals([del.action, del.recordId], ["delete", before.id]);
  assertEquals(del.record, now, "the deleted record as it was");
  assertEquals(del.previous, null, "a delete has no previous");
  assertStatus(
    await s.request("GET", `/api/v1/entities/${entity}/${before.id}`, {
      token,
    }),
    404,
    "gone",
  );
  void t;
}

forEachDb(
  "records: fused updates and deletes keep their events",
  async (t, db) => {
    const s = await startServer(db);
    try {
      await makeEntity(s, { name: "fw_kinds", fields: FIELDS });
      await makeEntity(s, {
        name: "fw_long",
        fields: [{ name: LONG, type: "double" }, {
          name: "title",
          type: "string",
        }],
      });

      await t.step("every kind: event record, previous and size", async () => {
        await patchAndDelete(t, s, "fw_kinds", {
          title: 'quote " and \\ and é and \n',
          flag: false,
          meta: { k: [1, 2], deep: { x: null } },
          score: 1.5,
          n: 2 ** 40,
          kind: "a",
          day: "2026-01-02T03:04:05.000Z",
        }, {
          flag: true,
          meta: [true, "x", 1e21],
          score: 0.1,
          n: -7,
          kind: null,
        });
      });

      await t.step(
        "a double's -0 is 0, as JSON.stringify writes it",
        async () => {
          const rec = await write(s, "POST", "fw_kinds", { score: 3 });
          const from = await lastEvent(s);
          const token = await s.adminToken();
          const r = await s.request(
            "PATCH",
            `/api/v1/entities/fw_kinds/${rec.id}`,
            {
              token,
              raw: '{"score": -0}',
              headers: { "content-type": "application/json" },
            },
          );
          assertStatus(r, 200, "PATCH -0");
          const [ev] = await eventsAfter(s, from);
          assert(Object.is(ev.record.score, 0), `score ${ev.record.score}`);
        },
      );

      await t.step("a 64-character field name: the same, unfused", async () => {
        await patchAndDelete(t, s, "fw_long", { [LONG]: 1, title: "x" }, {
          [LONG]: 2.5,
        });
      });

      await t.step("an auth entity: no password in any event", async () => {
        const r = await s.request("POST", "/api/v1/schemas", {
          token: await s.adminToken(),
          body: {
            name: "fw_users",
            type: "auth",
            fields: [{ name: "nick", type: "string" }],
            rules: {
              list: custom("record.id == auth.id"),
              get: custom("record.id == auth.id"),
              add: { mode: "public", expr: "" },
              update: custom("record.id == auth.id"),
              delete: custom("record.id == auth.id"),
            },
          },
        });
        assertStatus(r, 201, "auth entity");
        const a = await userOf(s, "fw_users", "a@example.com");
        const b = await userOf(s, "fw_users", "b@example.com");
        let from = await lastEvent(s);
        const p = await s.request(
          "PATCH",
          `/api/v1/entities/fw_users/${a.id}`,
          {
            token: a.token,
            body: { nick: "ann" },
          },
        );
        assertStatus(p, 200, "own PATCH");
        const [ev, ...more] = await eventsAfter(s, from);
        assertEquals(more.length, 0, "one event");
        assertEquals(ev.record.nick, "ann");
        assert(!("password" in ev.record), "no password in record");
        assert(!("password" in (ev.previous ?? {})), "no password in previous");
        assertEquals(ev.record.email, "a@example.com");
        from = await lastEvent(s);
        // Another user's: the rule hides the record, nothing written.
        for (const method of ["PATCH", "DELETE"]) {
          const r = await s.request(
            method,
            `/api/v1/entities/fw_users/${a.id}`,
            {
              token: b.token,
              body: method === "PATCH" ? { nick: "mallory" } : undefined,
            },
          );
          assertStatus(r, 404, `${method} of another user`);
        }
        assertEquals(await eventsAfter(s, from), [], "no event");
        assertEquals((await stored(s, "fw_users", a.id)).nick, "ann");
        const d = await s.request(
          "DELETE",
          `/api/v1/entities/fw_users/${a.id}`,
          {
            token: a.token,
          },
        );
        assertStatus(d, 204, "own DELETE");
        const [del] = await eventsAfter(s, from);
        assertEquals([del.action, del.record.nick], ["delete", "ann"]);
        assert(!("password" in del.record), "no password in the delete");
      });

      if (db === "postgres") {
        await t.step(
          "PostgreSQL: one statement each, no transaction",
          async () => {
            const rec = await write(s, "POST", "fw_kinds", { title: "one" });
            const token = await s.adminToken();
            const patch = await counted(s, async () => {
              const r = await s.request(
                "PATCH",
                `/api/v1/entities/fw_kinds/${rec.id}`,
                {
                  token,
                  body: { n: 1 },
                },
              );
              assertStatus(r, 200, "PATCH");
            });
            const writes = (x: string[]) =>
              x.filter((q) => /UPDATE|DELETE|INSERT/.test(q));
            assertEquals(patch.transactions, 0, "PATCH: no transaction");
            assertEquals(
              writes(patch.statements).length,
              1,
              "PATCH: one write",
            );
            const del = await counted(s, async () => {
              const r = await s.request(
                "DELETE",
                `/api/v1/entities/fw_kinds/${rec.id}`,
                {
                  token,
                },
              );
              assertStatus(r, 204, "DELETE");
            });
            assertEquals(del.transactions, 0, "DELETE: no transaction");
            assertEquals(writes(del.statements).length, 1, "DELETE: one write");
          },
        );
      }
    } finally {
      await s.close();
    }
  },
);
