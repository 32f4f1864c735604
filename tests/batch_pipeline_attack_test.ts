/**
 * Attacks on a batch's pipelined creates (on PostgreSQL a create with
 * nothing to wait for is sent without waiting for its answer), one server
 * per database:
 *
 * - a create blocked on a lock, behind another blocked create, is still
 *   cut off at the batch's deadline (PostgreSQL);
 * - the connection lost while creates wait for their answers: an error
 *   answer, no hang, the next batch runs (PostgreSQL);
 * - a pipelined create failing in a multipart batch: its files and the
 *   earlier requests' removed, no after-hook;
 * - a sign-up refused as a duplicate in a batch keeps its throttle headers;
 * - a before-hook's own `Entity.create` in a batch fails as it would
 *   alone (the hook sees the conflict, and may catch it).
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
import { makeEntity, rowCount, withScripts } from "./_extend_fixtures.ts";
import { filesSnapshot, sendForm } from "./_files_fixtures.ts";
import { PostgresStorage } from "../lib/db/postgres.ts";
import type { Queryable } from "../lib/db/storage.ts";
import { pause, poll } from "./_wait.ts";

const HOOKS = `
export default (app) => {
  globalThis.__pipeAfter = 0;
  globalThis.__pipeCaught = [];
  app.route("GET", "/api/pipe-state", () => ({
    after: globalThis.__pipeAfter,
    caught: globalThis.__pipeCaught,
  }));
  app.onRecord("afterCreate", "papers", () => {
    globalThis.__pipeAfter++;
  });
  app.onRecord("beforeCreate", "claims", async (e) => {
    try {
      await app.entities.get("keys").create({ key: e.record.title });
    } catch (err) {
      globalThis.__pipeCaught.push(err.message);
    }
  });
};
`;

const text = (name: string) => ({ name, type: "string" });

/** A batch request. */
type Req = { method: string; url: string; body?: Record<string, unknown> };

function batch(s: TestServer, requests: Req[], headers = {}) {
  return s.request("POST", "/api/v1/batch", { body: { requests }, headers });
}

const url = (entity: string, id?: string) =>
  `/api/v1/entities/${entity}${id ? `/${id}` : ""}`;

const STATEMENT_TIMEOUT_S = 2;

/**
 * A transaction of the test's own holding `code` in "keys" (inserted, not
 * yet committed): a create of it waits for its end. `end(true)` commits.
 */
async function holdKey(
  db: PostgresStorage,
  key: string,
): Promise<{ end(commit: boolean): Promise<void> }> {
  const held = Promise.withResolvers<void>();
  const release = Promise.withResolvers<boolean>();
  const done = db.transaction(async (tx: Queryable) => {
    const now = new Date().toISOString();
    await tx.run(
      `INSERT INTO "keys" ("id", "created", "updated", "key") VALUES (?, ?, ?, ?)`,
      [crypto.randomUUID(), now, now, key],
    );
    held.resolve();
    if (!await release.promise) throw new Error("rolled back on purpose");
  }).catch((err) => {
    if (!(err instanceof Error && err.message === "rolled back on purpose")) {
      throw err;
    }
  });
  await held.promise;
  return {
    end: async (commit) => {
      release.resolve(commit);
      await done;
    },
  };
}

/** The backends (other than the test's) waiting for a lock. */
async function lockWaiters(db: PostgresStorage): Promise<number[]> {
  const rows = await db.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
  );
  return rows.map((r) => Number(r.pid));
}

async function setup(s: TestServer): Promise<void> {
  await makeEntity(s, {
    name: "keys",
    fields: [{ ...text("key"), required: true, unique: true }],
  });
  await makeEntity(s, { name: "claims", fields: [text("title")] });
  await makeEntity(s, {
    name: "papers",
    fields: [{ ...text("title"), unique: true }, {
      name: "scan",
      type: "file",
    }],
  });
  await makeEntity(s, { name: "people", type: "auth" });
  await makeEntity(s, {
    name: "refs",
    fields: [{
      name: "key",
      type: "relation",
      required: true,
      foreign_key: { entity: "keys" },
    }],
  });
}

async function pgCases(t: Deno.TestContext, s: TestServer): Promise<void> {
  const db = new PostgresStorage(s.connection!, 3);
  await db.connect();
  try {
    await t.step(
      "a create blocked behind another blocked create is still cut off at the batch's deadline",
      async () => {
        // k1 is held for most of the deadline, then let go; k2 is held
        // past the deadline, then committed. Cut off at the deadline, the
        // batch is a 503; a create of k2 that outlived it would see k2
        // taken once the holder commits (409).
        const k1 = await holdKey(db, "k1");
        const k2 = await holdKey(db, "k2");
        const before = await rowCount(s, "keys");
        const answer = batch(s, [
          { method: "POST", url: url("keys"), body: { key: "k1" } },
          { method: "POST", url: url("keys"), body: { key: "k2" } },
        ]);
        await poll(
          "the batch waits for k1",
          async () => (await lockWaiters(db)).length > 0,
          { every: 5 },
        );
        // The batch's deadline runs from before it waited: by `seen` + ms
        // it has passed, however slowly the request got there. A create of
        // k2 given a fresh limit when k1 is let go (at `seen` + ms/2) would
        // still wait at `seen` + 1.2 ms, and then find k2 taken.
        const seen = Date.now();
        const ms = STATEMENT_TIMEOUT_S * 1000;
        await pause(seen + ms * 0.5 - Date.now());
        await k1.end(false);
        await pause(seen + ms * 1.2 - Date.now());
        await k2.end(true);
        const r = await answer;
        assertStatus(r, 503, "cut off at the deadline");
        assertEquals(await rowCount(s, "keys"), before + 1, "only k2 (held)");
      },
    );

    await t.step(
      "the connection lost while creates wait for their answers: an error answer, no hang",
      async () => {
        const held = await holdKey(db, "lost");
        const before = await rowCount(s, "keys");
        const answer = batch(s, [
          { method: "POST", url: url("keys"), body: { key: "lost" } },
          { method: "POST", url: url("keys"), body: { key: "after" } },
        ]);
        const [pid] = await poll("the batch waits", async () => {
          const w = await lockWaiters(db);
          return w.length > 0 ? w : undefined;
        });
        await db.query(`SELECT pg_terminate_backend(?) AS x`, [pid]);
        const r = await answer;
        await held.end(false);
        assertStatus(r, 503, "the database connection lost");
        assert(!/terminat|57P01|postgres/i.test(r.text), r.text);
        assertEquals(await rowCount(s, "keys"), before);
        const next = await poll("the next batch runs", async () => {
          const n = await batch(s, [
            { method: "POST", url: url("keys"), body: { key: "again" } },
            { method: "POST", url: url("keys"), body: { key: "again 2" } },
          ]);
          return n.status === 200 ? n : undefined;
        });
        assertEquals(next.data.length, 2);
      },
    );
  } finally {
    await db.close();
  }
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  await t.step(
    "a pipelined create failing in a multipart batch: no file, no row, no after-hook",
    async () => {
      const taken = await s.request("POST", url("papers"), {
        body: { title: "taken" },
      });
      assertStatus(taken, 201, "taken");
      const state = async () =>
        (await s.request("GET", "/api/pipe-state")).data;
      const after = (await state()).after;
      const files = await filesSnapshot(s);
      const rows = await rowCount(s, "papers");
      const json = {
        requests: [
          { method: "POST", url: url("papers"), body: { title: "p1" } },
          { method: "POST", url: url("papers"), body: { title: "taken" } },
          { method: "POST", url: url("papers"), body: { title: "p3" } },
        ],
      };
      const part = (i: number) => ({
        name: `requests.${i}.scan`,
        filename: `s${i}.txt`,
        data: `scan ${i}`,
        type: "text/plain",
      });
      const r = await sendForm(s, "POST", "/api/v1/batch", [
        { name: "@json", value: JSON.stringify(json) },
        part(0),
        part(1),
        part(2),
      ]);
      assertStatus(r, 409, "the duplicate title");
      assertEquals(r.data?.index, 1, r.text);
      assertEquals(await filesSnapshot(s), files, "no file left");
      assertEquals(await rowCount(s, "papers"), rows, "no row");
      assertEquals((await state()).after, after, "no after-hook");
      const ok = await sendForm(s, "POST", "/api/v1/batch", [
        {
          name: "@json",
          value: JSON.stringify({
            requests: [
              { method: "POST", url: url("papers"), body: { title: "p1" } },
              { method: "POST", url: url("papers"), body: { title: "p2" } },
            ],
          }),
        },
        part(0),
        part(1),
      ]);
      assertStatus(ok, 200, "both");
      assertEquals((await state()).after, after + 2, "two after-hooks");
    },
  );

  await t.step(
    "a relation to a record created earlier in the batch: it is there, or the batch fails at its create",
    async () => {
      const id = crypto.randomUUID();
      const ok = await batch(s, [
        { method: "PUT", url: url("keys"), body: { id, key: `ref ${id}` } },
        { method: "POST", url: url("refs"), body: { key: id } },
      ]);
      assertStatus(ok, 200, "the relation sees the key created before it");
      assertEquals(ok.data[1].data.key, id);
      const keys = await rowCount(s, "keys");
      const refs = await rowCount(s, "refs");
      const other = crypto.randomUUID();
      const dup = await batch(s, [
        {
          method: "PUT",
          url: url("keys"),
          body: { id: other, key: `ref ${id}` },
        },
        { method: "POST", url: url("refs"), body: { key: other } },
      ]);
      assertStatus(dup, 409, "the key's own conflict");
      assertEquals(dup.data?.index, 0, dup.text);
      assertEquals(dup.data?.response?.data?.fields?.key?.code, "unique");
      assertEquals(
        [await rowCount(s, "keys"), await rowCount(s, "refs")],
        [keys, refs],
      );
    },
  );

  await t.step(
    "creates of one key: twice in a batch, and two batches in opposite order",
    async () => {
      const keys = await rowCount(s, "keys");
      const twice = await batch(s, [
        { method: "POST", url: url("keys"), body: { key: "twice" } },
        { method: "POST", url: url("keys"), body: { key: "twice" } },
        { method: "POST", url: url("keys"), body: { key: "third" } },
      ]);
      assertStatus(twice, 409, "the second of the same key");
      assertEquals(twice.data?.index, 1, twice.text);
      assertEquals(await rowCount(s, "keys"), keys);
      // Overlapping on PostgreSQL, each may wait for the other's key (a
      // deadlock, answered 409 "retry"); else the later finds its first key
      // taken (409). Never a 500; one applied.
      const [a, b] = await Promise.all([
        batch(s, [
          { method: "POST", url: url("keys"), body: { key: "x1" } },
          { method: "POST", url: url("keys"), body: { key: "x2" } },
        ]),
        batch(s, [
          { method: "POST", url: url("keys"), body: { key: "x2" } },
          { method: "POST", url: url("keys"), body: { key: "x1" } },
        ]),
      ]);
      const statuses = [a.status, b.status].sort();
      assert(
        statuses[0] === 200 && [200, 409].includes(statuses[1]),
        `${a.text} ${b.text}`,
      );
      for (const r of [a, b]) {
        if (r.status === 409) assert(!r.text.includes("deadlock"), r.text);
      }
      assertEquals(await rowCount(s, "keys"), keys + 2);
    },
  );

  await t.step(
    "a duplicate sign-up in a batch keeps its throttle headers",
    async () => {
      const body = { email: "dup@example.com", password: "password-123" };
      assertStatus(
        await s.request("POST", url("people"), { body }),
        201,
        "first",
      );
      const r = await batch(s, [
        {
          method: "POST",
          url: url("people"),
          body: { email: "new@example.com", password: "password-123" },
        },
        { method: "POST", url: url("people"), body },
      ]);
      assertStatus(r, 409, "a duplicate email");
      assertEquals(r.data?.index, 1, r.text);
      assert(r.headers.get("x-ratelimit-remaining"), "the throttle's headers");
    },
  );

  await t.step(
    "a before-hook's own create in a batch fails as alone: the hook sees it",
    async () => {
      const state = async () =>
        (await s.request("GET", "/api/pipe-state")).data;
      assertStatus(
        await s.request("POST", url("keys"), { body: { key: "hooked" } }),
        201,
        "the key taken",
      );
      const caught = (await state()).caught.length;
      const alone = await s.request("POST", url("claims"), {
        body: { title: "hooked" },
      });
      assertStatus(alone, 201, "alone: the hook caught the conflict");
      assertEquals((await state()).caught.length, caught + 1);
      const r = await batch(s, [
        { method: "POST", url: url("keys"), body: { key: "fresh" } },
        { method: "POST", url: url("claims"), body: { title: "hooked" } },
      ]);
      assertEquals((await state()).caught.length, caught + 2, r.text);
    },
  );
}

forEachDb("batch: pipelined creates under attack", async (t, db) => {
  await withScripts(db, { "hooks.js": HOOKS }, async (s) => {
    await setup(s);
    await cases(t, s);
    if (db === "postgres") await pgCases(t, s);
  }, { statementTimeout: STATEMENT_TIMEOUT_S });
});
