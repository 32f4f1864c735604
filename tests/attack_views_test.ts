/**
 * Attacks on the view guard (issue 13, item 3) that got through: each case
 * is a way an admin could publish what views may never read.
 *
 * Each step creates its own entities (names carry the step's letter), so no
 * step depends on another.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { allRules, asAdmin, createEntity, createRecord } from "./_scenarios.ts";
import { physicalName } from "../lib/db/storage.ts";

const HASH = "scrypt$";

/** An auth entity with a 64-character name (stored under a hashed physical name) and one user. */
async function longAuth(s: TestServer, letter: string): Promise<string> {
  const name = letter.repeat(63) + "u";
  await createEntity(s, { name, type: "auth", fields: [] });
  await createRecord(s, name, {
    email: "u@example.com",
    password: "secret-pass-1",
  });
  return name;
}

/** The view is refused, or if it exists it serves no hash and no email. */
async function noLeak(s: TestServer, name: string, query: string) {
  const a = await asAdmin(s);
  const r = await a.post("schemas", {
    name,
    type: "view",
    view_query: query,
    rules: allRules("public"),
  });
  const served = await s.request("GET", `/api/v1/entities/${name}`);
  assert.ok(!served.text.includes(HASH), `hash served: ${served.text}`);
  assert.ok(!served.text.includes("u@example.com"), `email: ${served.text}`);
  assert.equal(r.status, 400, r.text);
}

forEachDb("attack: views and physical-name twins", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await t.step(
      "a base entity named like an auth table in other case -> refused",
      async () => {
        // PostgreSQL tables are case-sensitive: "AAA…_HASH" is another table
        // than "aaa…_hash", but the view rule matched tables ignoring case,
        // so the base twin vouched for the auth table and its hashes.
        const auth = await longAuth(s, "a");
        const table = physicalName(auth);
        const twin = await a.post("schemas", {
          name: table.toUpperCase(),
          type: "base",
          fields: [],
        });
        await noLeak(
          s,
          "a_leak",
          `SELECT id, email, password AS h FROM "${table}"`,
        );
        assert.equal(twin.status, 409, twin.text);
      },
    );
    await t.step(
      "renaming a base entity to such a twin -> refused",
      async () => {
        const auth = await longAuth(s, "b");
        const table = physicalName(auth);
        await createEntity(s, { name: "b_base", fields: [] });
        const r = await a.patch("schemas/b_base", {
          name: table.toUpperCase(),
        });
        await noLeak(
          s,
          "b_leak",
          `SELECT id, email, password AS h FROM "${table}"`,
        );
        assert.equal(r.status, 409, r.text);
      },
    );
  } finally {
    await s.close();
  }
});

forEachDb(
  "attack: a view saved before the guard is not served",
  async (_t, db) => {
    // A view over an auth entity, as a database written before views were
    // guarded holds it: made here by changing the view behind Moonbase's back.
    const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
    const first = await startServer(db, { dataDir });
    let second: TestServer | undefined;
    try {
      await createEntity(first, { name: "c_users", type: "auth", fields: [] });
      await createRecord(first, "c_users", {
        email: "u@example.com",
        password: "secret-pass-1",
      });
      await createEntity(first, {
        name: "c_posts",
        fields: [{ name: "title", type: "string" }],
      });
      await createRecord(first, "c_posts", { title: "Hello" });
      await createEntity(first, {
        name: "c_view",
        type: "view",
        view_query: "SELECT id, title AS t FROM c_posts",
        rules: allRules("public"),
      });
      await createEntity(first, {
        name: "c_fine",
        type: "view",
        view_query: "SELECT id, title FROM c_posts",
        rules: allRules("public"),
      });
      await first.app.storage.exec(`DROP VIEW "c_view"`);
      await first.app.storage.exec(
        `CREATE VIEW "c_view" AS SELECT id, password AS t FROM c_users`,
      );
      await first.close();
      second = await startServer(db, { dataDir, connection: first.connection });
      for (const path of ["c_view", `c_view/${crypto.randomUUID()}`]) {
        const r = await second.request("GET", `/api/v1/entities/${path}`);
        assert.ok(!r.text.includes(HASH), `hash served: ${r.text}`);
        assert.equal(r.status, 503, r.text);
      }
      const fine = await second.request("GET", "/api/v1/entities/c_fine");
      assert.equal(fine.status, 200, fine.text);
      // The admin can still fix it; then it is served again.
      const a = await asAdmin(second);
      const fixed = await a.patch("schemas/c_view", {
        view_query: "SELECT id, upper(title) AS t FROM c_posts",
      });
      assert.equal(fixed.status, 200, fixed.text);
      const r = await second.request("GET", "/api/v1/entities/c_view");
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.items[0].t, "HELLO");
    } finally {
      await second?.close();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
);

forEachDb(
  "attack: views naming catalog objects (PostgreSQL)",
  async (t, db) => {
    if (db !== "postgres") return;
    const s = await startServer(db);
    try {
      await createEntity(s, {
        name: "d_posts",
        fields: [{ name: "title", type: "string" }],
      });
      await createRecord(s, "d_posts", { title: "Hello" });
      // Casts to regclass, regrole, … and their output look names up in the
      // catalogs: a view could list every table, role and function; the SQL
      // value functions give the database role and database name.
      const queries = [
        `SELECT p.id, (g::oid)::regclass::text AS x FROM d_posts p, generate_series(16384, 16500) g`,
        `SELECT p.id, (g::oid)::regrole::text AS x FROM d_posts p, generate_series(1, 20000) g`,
        `SELECT id, 'mb_admins'::regclass::oid::int8 AS x FROM d_posts`,
        `SELECT id, ARRAY['mb_admins']::regclass[]::text AS x FROM d_posts`,
        `SELECT id, current_user AS x FROM d_posts`,
        `SELECT id, session_user AS x, current_catalog AS y FROM d_posts`,
      ];
      for (const [i, q] of queries.entries()) {
        await t.step(q, async () => {
          const a = await asAdmin(s);
          const r = await a.post("schemas", {
            name: `d_v${i}`,
            type: "view",
            view_query: q,
            rules: allRules("public"),
          });
          if (r.status === 201) {
            const g = await s.request("GET", `/api/v1/entities/d_v${i}`);
            assert.fail(`created; serves ${g.text.slice(0, 300)}`);
          }
          assert.equal(r.status, 400, r.text);
        });
      }
      await t.step("dates and times stay allowed", async () => {
        await createEntity(s, {
          name: "d_ok",
          type: "view",
          view_query:
            `SELECT id, current_date AS d, current_timestamp AS ts, localtimestamp AS l FROM d_posts`,
        });
      });
    } finally {
      await s.close();
    }
  },
);
