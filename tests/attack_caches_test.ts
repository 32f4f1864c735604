/**
 * Attacks on the list caches: sealed cursors kept by plaintext and opened
 * ones kept by text, the compiled SQL of closed filters kept per parsed
 * filter, and PostgreSQL's prepared parameterless SELECTs.
 */

import assert from "node:assert/strict";
import {
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  allRules,
  asAdmin,
  createEntity,
  createRecord,
  userToken,
} from "./_scenarios.ts";
import { hasPostgres } from "./_pg.ts";

const LIST = "/api/v1/entities/notes";

async function notes(s: TestServer): Promise<void> {
  await createEntity(s, {
    name: "notes",
    fields: [
      { name: "body", type: "text" },
      { name: "n", type: "int" },
    ],
    rules: allRules("public"),
  });
}

function list(s: TestServer, params: Record<string, string>, token?: string) {
  return s.request("GET", `${LIST}?${new URLSearchParams(params)}`, { token });
}

forEachDb(
  "cursor cache: a list sorted by a long text keeps a short cursor",
  async (_t, db) => {
    // Each kept cursor held its plaintext and its text: one public record
    // with a long text and one listing per filter pinned ~470 MB of heap
    // (1.2 GB RSS) after 511 GETs with 900 kB values, until 512 more. The
    // cursor now names the record instead of carrying the long value.
    const s = await startServer(db);
    try {
      await notes(s);
      const long = "x".repeat(20_000);
      await createRecord(s, "notes", { body: long + "a", n: 1 });
      await createRecord(s, "notes", { body: long + "b", n: 2 });
      const params = { limit: "1", sort: "body", filter: "n != 7" };
      const a = await list(s, params);
      const b = await list(s, params);
      assertStatus(a, 200);
      assert.ok(a.data.cursor.length < 200, `${a.data.cursor.length} chars`);
      assert.ok(a.data.cursor === b.data.cursor, "the cursor was not kept");
      // Short ones still seal to the same text.
      const c = await list(s, { limit: "1", sort: "n" });
      const d = await list(s, { limit: "1", sort: "n" });
      assert.ok(c.data.cursor === d.data.cursor, "a short cursor was not");
    } finally {
      await s.close();
    }
  },
);

// The cursor carries the sort values; values too long for a cursor (a text
// of ~6 000 characters or more) are read again from the record it names.
forEachDb(
  "cursor: the next page of a list sorted by a text of 7,000 characters",
  async (_t, db) => await longSortPaging(db),
);

async function longSortPaging(db: "sqlite" | "postgres"): Promise<void> {
  {
    // has_more is true and a cursor is given, yet the server refuses it
    // (over 8192 characters: "after is not a cursor from this list").
    const s = await startServer(db);
    try {
      await notes(s);
      const long = "y".repeat(7_000);
      await createRecord(s, "notes", { body: long + "a", n: 1 });
      await createRecord(s, "notes", { body: long + "b", n: 2 });
      const first = await list(s, { limit: "1", sort: "body" });
      assertStatus(first, 200);
      assert.equal(first.data.has_more, true);
      const next = await list(s, {
        limit: "1",
        sort: "body",
        after: first.data.cursor,
      });
      assertStatus(next, 200);
      assert.deepEqual(next.data.items.map((r: { n: number }) => r.n), [2]);
      // Descending, with a third record and a filter: every page in turn.
      await createRecord(s, "notes", { body: long + "c", n: 3 });
      const seen: number[] = [];
      let after = "";
      for (let page = 0; page < 5; page++) {
        const r = await list(s, {
          limit: "1",
          sort: "-body",
          filter: "n > 0",
          ...(after ? { after } : {}),
        });
        assertStatus(r, 200);
        seen.push(...r.data.items.map((x: { n: number }) => x.n));
        if (!r.data.has_more) break;
        after = r.data.cursor;
      }
      assert.deepEqual(seen, [3, 2, 1]);
      // The record the cursor names changes its sort value, or goes: a clear
      // 400 (its position is lost), never a wrong page.
      const again = await list(s, { limit: "1", sort: "body" });
      const first1 = again.data.items[0] as { id: string };
      const patched = await s.request("PATCH", `${LIST}/${first1.id}`, {
        token: await s.adminToken(),
        body: { body: long + "z" },
      });
      assertStatus(patched, 200);
      const moved = await list(s, {
        limit: "1",
        sort: "body",
        after: again.data.cursor,
      });
      assertStatus(moved, 400);
      assert.match(moved.error, /changed its sort values or is gone/);
    } finally {
      await s.close();
    }
  }
}

forEachDb(
  "cursor cache: a kept cursor still answers only its own query",
  async (t, db) => {
    const s = await startServer(db);
    try {
      await notes(s);
      for (let n = 0; n < 4; n++) {
        await createRecord(s, "notes", { body: `b${n}`, n });
      }
      await createEntity(s, {
        name: "others",
        fields: [{ name: "n", type: "int" }],
        rules: allRules("public"),
      });
      await createRecord(s, "others", { n: 1 });
      const a = await userToken(s, "a@example.com");
      const b = await userToken(s, "b@example.com");
      const params = { limit: "1", sort: "n", filter: "n >= 0" };
      const first = await list(s, params, a.token);
      const cursor = first.data.cursor as string;
      // Opened once by its caller: kept from now on.
      assertStatus(await list(s, { ...params, after: cursor }, a.token), 200);
      await t.step("another caller, a guest", async () => {
        assertStatus(await list(s, { ...params, after: cursor }, b.token), 400);
        assertStatus(await list(s, { ...params, after: cursor }), 400);
      });
      await t.step("another filter, sort, entity", async () => {
        const other = { ...params, filter: "n >= 1", after: cursor };
        assertStatus(await list(s, other, a.token), 400);
        const sort = { ...params, sort: "-n", after: cursor };
        assertStatus(await list(s, sort, a.token), 400);
        const r = await s.request(
          "GET",
          `/api/v1/entities/others?${new URLSearchParams({
            ...params,
            after: cursor,
          })}`,
          { token: a.token },
        );
        assertStatus(r, 400);
      });
      await t.step("one character changed", async () => {
        const i = cursor.length - 5;
        const flip = cursor[i] === "A" ? "B" : "A";
        const bad = cursor.slice(0, i) + flip + cursor.slice(i + 1);
        assertStatus(await list(s, { ...params, after: bad }, a.token), 400);
      });
      await t.step("its field replaced by one of another type", async () => {
        const admin = await asAdmin(s);
        const schema = (await admin.get("schemas/notes")).data;
        const n = schema.fields.find((f: { name: string }) => f.name === "n");
        const r = await admin.patch("schemas/notes", {
          fields: [{ id: n.id, op: "delete" }, { name: "n", type: "text" }],
        });
        assertStatus(r, 200);
        const again = await list(s, { ...params, after: cursor }, a.token);
        assertStatus(again, 400);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "filter cache: two schema versions stamped in the same millisecond",
  async (_t, db) => {
    // The parsed filter (and now its SQL) is kept under the schema's
    // `updated` time: a second change in the same millisecond (or after the
    // clock stepped back) kept the SQL of a column that no longer exists.
    const s = await startServer(db);
    const iso = Date.prototype.toISOString;
    try {
      await createEntity(s, {
        name: "things",
        fields: [{ name: "n", type: "int" }],
        rules: allRules("public"),
      });
      for (let n = 0; n < 4; n++) await createRecord(s, "things", { n });
      const admin = await asAdmin(s);
      const q = "/api/v1/entities/things?filter=" +
        encodeURIComponent("n >= 2");
      const frozen = new Date().toISOString();
      Date.prototype.toISOString = function () {
        return frozen;
      };
      try {
        const add = await admin.patch("schemas/things", {
          fields: [
            ...(await admin.get("schemas/things")).data.fields,
            { name: "x", type: "text" },
          ],
        });
        assertStatus(add, 200);
        assertStatus(await s.request("GET", q), 200);
        const schema = (await admin.get("schemas/things")).data;
        const renamed = await admin.patch("schemas/things", {
          fields: schema.fields.map((f: { name: string }) =>
            f.name === "n" ? { ...f, name: "m" } : f
          ),
        });
        assertStatus(renamed, 200);
      } finally {
        Date.prototype.toISOString = iso;
      }
      const old = await s.request("GET", q);
      assertStatus(old, 400);
    } finally {
      Date.prototype.toISOString = iso;
      await s.close();
    }
  },
);

Deno.test({
  name:
    "PostgreSQL: distinct list texts do not each leave a prepared statement",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // ~20 kB of backend memory each (pg_backend_memory_contexts: 2,000
    // lists in 0.8 s left 41 MB on one connection). Every distinct SQL text became a named prepared statement on its
    // connection, kept until the connection ends (postgres.js's max_lifetime,
    // 30-60 min): a guest varying limit (1-500), sort (5 keys of any field,
    // either way) or the OFFSET of a cursor piles them up on the server.
    const s = await startServer("postgres", { poolSize: 1 });
    try {
      await notes(s);
      await createRecord(s, "notes", { body: "b", n: 1 });
      const count = async () =>
        Number(
          (await s.app.storage.query(
            "SELECT COUNT(*) AS n FROM pg_prepared_statements",
          ))[0].n,
        );
      const before = await count();
      for (let limit = 1; limit <= 100; limit++) {
        // Without parameters (prepared since lists went faster) and with a
        // filter's parameters (prepared before).
        const extras: Record<string, string>[] = [
          { sort: "n" },
          { sort: "-n" },
          { filter: "n > 0" },
          { filter: "n > 0", sort: "-n" },
        ];
        for (const extra of extras) {
          assertStatus(await list(s, { limit: String(limit), ...extra }), 200);
        }
      }
      const piled = (await count()) - before;
      assert.ok(piled <= 256, `${piled} prepared statements for 400 lists`);
    } finally {
      await s.close();
    }
  },
});
