/**
 * Views cannot publish what they may not read (issue 13, item 3): the view
 * rule is decided from what the database says a view reads, not from its
 * text; an entity a view reads cannot be deleted, renamed or have the
 * columns the view reads dropped or renamed.
 *
 * Each step creates its own entities (names carry the step's letter), so no
 * step depends on another.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { allRules, asAdmin, createEntity, createRecord } from "./_scenarios.ts";
import { physicalName } from "../lib/db/storage.ts";

const HASH = "scrypt$";

async function authWithUser(s: TestServer, name: string): Promise<void> {
  await createEntity(s, { name, type: "auth", fields: [] });
  await createRecord(s, name, {
    email: "u@example.com",
    password: "secret-pass-1",
  });
}

async function posts(s: TestServer, name: string): Promise<void> {
  await createEntity(s, {
    name,
    fields: [
      { name: "title", type: "string" },
      { name: "n", type: "int" },
      { name: "tags", type: "json" },
    ],
  });
  await createRecord(s, name, { title: "Hello", n: 2, tags: ["a", "b"] });
}

/** Creating the view is refused with 400, nothing is created, no hash is served. */
async function refused(
  s: TestServer,
  name: string,
  view_query: string,
  mention?: string,
): Promise<void> {
  const a = await asAdmin(s);
  const r = await a.post("schemas", {
    name,
    type: "view",
    view_query,
    rules: allRules("public"),
  });
  if (r.status === 201) {
    const leak = await s.request("GET", `/api/v1/entities/${name}`);
    assert.fail(`view ${view_query} was created; it serves ${leak.text}`);
  }
  assert.equal(r.status, 400, `${view_query}: ${r.text}`);
  assert.ok(!r.text.includes(HASH), "no hash in the error");
  if (mention) {
    assert.ok(r.error.includes(mention), `names ${mention}: ${r.error}`);
  }
  assert.equal((await a.get(`schemas/${name}`)).status, 404, "not created");
}

forEachDb("views: reads decided by the database", async (t, db) => {
  const s = await startServer(db);
  try {
    await t.step(
      "a CTE over an auth entity's physical name -> 400",
      async () => {
        // A 64-character name is stored under a shorter physical table name,
        // which a check of the SQL text for the entity's name never saw.
        const long = "a".repeat(63) + "u";
        await authWithUser(s, long);
        const table = physicalName(long);
        assert.notEqual(table, long);
        // The CTE's column list renames every column: no "password" in the text.
        await refused(
          s,
          "cte_leak",
          `WITH t(i, c, u, e, h, v) AS (SELECT * FROM "${table}") SELECT i AS id, e, h FROM t`,
          "auth entity",
        );
      },
    );
    await t.step(
      "an auth entity through a subquery, alias or view -> 400",
      async () => {
        await authWithUser(s, "b_users");
        await posts(s, "b_posts");
        await refused(
          s,
          "b_sub",
          `SELECT id, (SELECT email FROM B_USERS LIMIT 1) AS x FROM b_posts`,
          "b_users",
        );
        await refused(s, "b_alias", "SELECT u.id FROM b_users AS u");
        await createEntity(s, {
          name: "b_ok",
          type: "view",
          view_query: "SELECT id, title FROM b_posts",
        });
        await refused(
          s,
          "b_join",
          "SELECT v.id, u.email FROM b_ok v JOIN b_users u ON u.id = v.id",
          "b_users",
        );
      },
    );
    await t.step("system tables and catalogs -> 400", async () => {
      const queries = [
        `SELECT id, email, password FROM mb_admins`,
        `SELECT id, "schema" FROM "mb_tables"`,
        `SELECT "key" AS id FROM mb_meta`,
        `WITH x AS (SELECT * FROM mb_admins) SELECT id FROM x`,
        ...(db === "sqlite"
          ? [
            `SELECT name AS id, sql FROM sqlite_master`,
            `SELECT name AS id FROM sqlite_schema`,
            `SELECT name AS id FROM sqlite_temp_master`,
            `SELECT name AS id FROM pragma_table_info('mb_admins')`,
          ]
          : [
            `SELECT relname::text AS id FROM pg_catalog.pg_class`,
            `SELECT rolname::text AS id, rolpassword FROM pg_authid`,
            `SELECT table_name::text AS id FROM information_schema.tables`,
            `SELECT id FROM U&"\\006db_admins"`,
          ]),
      ];
      for (const [i, q] of queries.entries()) await refused(s, `sys${i}`, q);
    });
    await t.step(
      "functions that run SQL or reach the server -> 400",
      async () => {
        await posts(s, "c_posts");
        if (db === "postgres") {
          await refused(
            s,
            "c_xml",
            `SELECT 'x' AS id, query_to_xml('select * from m'||'b_admins', true, false, '') AS q`,
            "query_to_xml",
          );
          for (
            const [i, call] of [
              `current_setting('data_directory')`,
              `pg_read_file('/etc/passwd')`,
              `set_config('work_mem', '1MB', false)`,
              `(SELECT count(*) FROM ts_stat('SELECT to_tsvector(password) FROM mb_admins'))::text`,
              `table_to_xml('mb_admins', true, false, '')::text`,
              `pg_get_viewdef('c_posts')`,
            ].entries()
          ) {
            await refused(
              s,
              `c_fn${i}`,
              `SELECT id, ${call} AS q FROM c_posts`,
            );
          }
        } else {
          await refused(s, "c_vt", `SELECT id FROM c_posts, pragma_table_list`);
        }
      },
    );
    await t.step("allowed views read base entities and compute", async () => {
      await posts(s, "d_posts");
      const fn = db === "postgres"
        ? `jsonb_array_length(tags) AS k`
        : `(SELECT count(*) FROM json_each(d_posts.tags)) AS k`;
      const view = await createEntity(s, {
        name: "d_view",
        type: "view",
        view_query:
          `SELECT id, upper(title) AS t, n * 2 AS m, count(*) OVER () AS c, ${fn} FROM d_posts WHERE n > 1`,
        rules: allRules("public"),
      });
      assert.equal(view.type, "view");
      await createEntity(s, {
        name: "d_view2",
        type: "view",
        view_query: "SELECT id, t FROM d_view",
        rules: allRules("public"),
      });
      const r = await s.request("GET", "/api/v1/entities/d_view2");
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.data.items.map((x: { t: string }) => x.t), ["HELLO"]);
      const k = await s.request("GET", "/api/v1/entities/d_view");
      assert.equal(k.data.items[0].k, 2);
    });
  } finally {
    await s.close();
  }
});

forEachDb("views: entities and fields a view reads", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  const view = (name: string, view_query: string) =>
    createEntity(s, { name, type: "view", view_query });
  try {
    await t.step(
      "deleting an entity a view reads -> 409 naming the view",
      async () => {
        await posts(s, "e_posts");
        await view("e_view", "SELECT id, title FROM e_posts");
        const r = await a.del("schemas/e_posts");
        assert.equal(r.status, 409, r.text);
        assert.ok(r.error.includes("e_view"), r.error);
        assert.equal((await a.get("entities/e_view")).status, 200);
        // So it can never be recreated as an auth entity under the view.
        const again = await a.post("schemas", {
          name: "e_posts",
          type: "auth",
          fields: [],
        });
        assert.equal(again.status, 409, again.text);
        assert.equal((await a.get("schemas/e_posts")).data.type, "base");
        assert.equal((await a.del("schemas/e_view")).status, 204);
        assert.equal((await a.del("schemas/e_posts")).status, 204);
      },
    );
    await t.step(
      "a view read by a view cannot be deleted or renamed",
      async () => {
        await posts(s, "f_posts");
        await view("f_inner", "SELECT id, title FROM f_posts");
        await view("f_outer", "SELECT id, title FROM f_inner");
        const r = await a.del("schemas/f_inner");
        assert.equal(r.status, 409, r.text);
        assert.ok(r.error.includes("f_outer"), r.error);
        const p = await a.patch("schemas/f_inner", { name: "f_inner2" });
        assert.equal(p.status, 409, p.text);
        assert.equal((await a.get("entities/f_outer")).status, 200);
      },
    );
    await t.step("renaming an entity a view reads -> 409", async () => {
      await posts(s, "g_posts");
      await view("g_view", "SELECT id, title FROM g_posts");
      const r = await a.patch("schemas/g_posts", { name: "g_renamed" });
      assert.equal(r.status, 409, r.text);
      assert.ok(r.error.includes("g_view"), r.error);
      assert.equal((await a.get("schemas/g_posts")).status, 200);
      assert.equal((await a.get("entities/g_view")).status, 200);
    });
    await t.step(
      "dropping or renaming a field a view reads -> 409",
      async () => {
        await posts(s, "h_posts");
        await view("h_view", "SELECT id, title FROM h_posts");
        const fields = (await a.get("schemas/h_posts")).data.fields;
        const title = fields.find((f: { name: string }) => f.name === "title");
        const n = fields.find((f: { name: string }) => f.name === "n");
        for (
          const change of [{ id: title.id, op: "delete" }, {
            id: title.id,
            name: "headline",
          }]
        ) {
          const r = await a.patch("schemas/h_posts", { fields: [change] });
          assert.equal(r.status, 409, `${JSON.stringify(change)}: ${r.text}`);
          assert.ok(r.error.includes("h_view"), r.error);
        }
        // A field the view does not read can go.
        const ok = await a.patch("schemas/h_posts", {
          fields: [{ id: n.id, op: "delete" }],
        });
        assert.equal(ok.status, 200, ok.text);
        assert.equal((await a.get("entities/h_view")).status, 200);
      },
    );
    await t.step("a view can be renamed and its query changed", async () => {
      await posts(s, "i_posts");
      await view("i_view", "SELECT id, title FROM i_posts");
      let r = await a.patch("schemas/i_view", { name: "i_view2" });
      assert.equal(r.status, 200, r.text);
      assert.equal((await a.get("entities/i_view2")).status, 200);
      r = await a.patch("schemas/i_view2", {
        view_query: "SELECT id, email FROM mb_admins",
      });
      assert.equal(r.status, 400, r.text);
      r = await a.patch("schemas/i_view2", {
        view_query: "SELECT id, n FROM i_posts",
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.data.fields.map((f: { name: string }) => f.name), [
        "id",
        "n",
      ]);
    });
  } finally {
    await s.close();
  }
});
