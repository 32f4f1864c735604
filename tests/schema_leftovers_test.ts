/**
 * Schema leftovers of issue 13 (items 7 and 11): `fields` is required for
 * base and auth entities, a new field's default fills existing rows, view
 * columns carry real types, reserved names are refused cleanly, and no
 * database message reaches the client from the schema routes.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { allRules, asAdmin, createEntity, createRecord } from "./_scenarios.ts";

/** Raw SQLite / PostgreSQL message shapes that must never be shown. */
const RAW = [
  /syntax error at/,
  /near "/,
  /no such (table|column|function)/,
  /([")]) does not exist/,
  /reserved for internal use/,
  /sqlite_master/,
  /at offset/,
  /depend on it/,
];

function noRawText(text: string): void {
  for (const raw of RAW) {
    assert.doesNotMatch(text, raw, `raw database text in ${text}`);
  }
}

forEachDb("schema leftovers: fields, names, errors", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await t.step(
      "base or auth without fields -> 400 naming fields",
      async () => {
        for (const type of ["base", "auth"]) {
          const r = await a.post("schemas", { name: `nf_${type}`, type });
          assert.equal(r.status, 400, r.text);
          assert.ok(r.error.includes("fields"), r.error);
          assert.equal((await a.get(`schemas/nf_${type}`)).status, 404);
          const ok = await a.post("schemas", {
            name: `nf_${type}`,
            type,
            fields: [],
          });
          assert.equal(ok.status, 201, ok.text);
        }
      },
    );
    await t.step(
      "reserved name prefixes -> 400 without database text",
      async () => {
        for (
          const name of ["sqlite_x", "SQLITE_stat1", "pg_x", "Pg_class", "mb_x"]
        ) {
          const r = await a.post("schemas", { name, type: "base", fields: [] });
          assert.equal(r.status, 400, `${name}: ${r.text}`);
          assert.match(r.error, /prefix is reserved/);
          noRawText(r.text);
        }
      },
    );
    await t.step(
      "a view that does not run -> 400 without database text",
      async () => {
        await createEntity(s, { name: "er_posts", fields: [] });
        for (
          const q of [
            "SELEC id FROM er_posts",
            "SELECT id FROM er_nope",
            "SELECT id, nope FROM er_posts",
            "SELECT id, nope_fn(id) AS x FROM er_posts",
            "SELECT id FROM er_posts WHERE (",
          ]
        ) {
          const r = await a.post("schemas", {
            name: "er_view",
            type: "view",
            view_query: q,
          });
          assert.equal(r.status, 400, `${q}: ${r.text}`);
          noRawText(r.text);
        }
      },
    );
    await t.step(
      "a refused change names the view, not the database",
      async () => {
        await createEntity(s, {
          name: "rv_posts",
          fields: [{ name: "title", type: "string" }],
        });
        await createEntity(s, {
          name: "rv_view",
          type: "view",
          view_query: "SELECT id, title FROM rv_posts",
        });
        const r = await a.del("schemas/rv_posts");
        assert.equal(r.status, 409, r.text);
        assert.match(r.error, /rv_view/);
        noRawText(r.text);
      },
    );
  } finally {
    await s.close();
  }
});

forEachDb(
  "schema leftovers: a new field's default fills existing rows",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await t.step("every type with a default, required or not", async () => {
        await createEntity(s, {
          name: "df_items",
          fields: [{ name: "title", type: "string" }],
        });
        const old = await createRecord(s, "df_items", { title: "old" });
        const added = [
          { name: "label", type: "string", default: "none" },
          { name: "count", type: "int", default: 3, required: true },
          { name: "ratio", type: "double", default: 0.5 },
          { name: "on", type: "bool", default: true, required: true },
          { name: "meta", type: "json", default: { a: [1] } },
          { name: "kind", type: "select", values: ["x", "y"], default: "y" },
        ];
        const r = await a.patch("schemas/df_items", { fields: added });
        assert.equal(r.status, 200, r.text);
        const got = (await a.get(`entities/df_items/${old.id}`)).data;
        assert.deepEqual(
          [got.label, got.count, got.ratio, got.on, got.meta, got.kind],
          ["none", 3, 0.5, true, { a: [1] }, "y"],
        );
        const fresh = await createRecord(s, "df_items", { title: "new" });
        assert.equal(fresh.count, 3);
      });
      await t.step("a field without a default leaves rows empty", async () => {
        await createEntity(s, { name: "df_plain", fields: [] });
        const old = await createRecord(s, "df_plain", {});
        const r = await a.patch("schemas/df_plain", {
          fields: [{ name: "note", type: "string" }],
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(
          (await a.get(`entities/df_plain/${old.id}`)).data.note,
          null,
        );
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb("schema leftovers: view columns are typed", async (t, db) => {
  const s = await startServer(db);
  try {
    await t.step("types come from the fields a view copies", async () => {
      await createEntity(s, {
        name: "vt_posts",
        fields: [
          { name: "title", type: "string" },
          { name: "mail", type: "email" },
          { name: "n", type: "int" },
          { name: "x", type: "double" },
          { name: "on", type: "bool" },
          { name: "meta", type: "json" },
          { name: "day", type: "date" },
          { name: "kind", type: "select", values: ["a", "b"] },
        ],
      });
      await createRecord(s, "vt_posts", {
        title: "t",
        mail: "m@example.com",
        n: 2,
        x: 1.5,
        on: true,
        meta: { k: [1, 2] },
        day: "2024-01-02T00:00:00.000Z",
        kind: "b",
      });
      const view = await createEntity(s, {
        name: "vt_view",
        type: "view",
        view_query:
          `WITH p AS (SELECT * FROM vt_posts) SELECT id, title, mail, n, x, "on", meta, day, kind, created, upper(title) AS shout FROM p`,
        rules: allRules("public"),
      });
      const types = Object.fromEntries(
        view.fields.map((
          f: { name: string; type: string },
        ) => [f.name, f.type]),
      );
      assert.deepEqual(types, {
        id: "string",
        title: "string",
        mail: "email",
        n: "int",
        x: "double",
        on: "bool",
        meta: "json",
        day: "date",
        kind: "select",
        created: "date",
        // A computed column: the database's type where it reports one.
        shout: db === "postgres" ? "string" : "json",
      });
      const kind = view.fields.find((f: { name: string }) => f.name === "kind");
      assert.deepEqual(kind.values, ["a", "b"]);
      const row = (await s.request("GET", "/api/v1/entities/vt_view")).data
        .items[0];
      assert.deepEqual(
        [row.n, row.x, row.on, row.meta, row.kind, row.shout],
        [2, 1.5, true, { k: [1, 2] }, "b", "T"],
      );
    });
    await t.step("computed numbers and flags", async () => {
      await createEntity(s, {
        name: "vc_posts",
        fields: [{ name: "n", type: "int" }],
      });
      await createRecord(s, "vc_posts", { n: 4 });
      const view = await createEntity(s, {
        name: "vc_view",
        type: "view",
        view_query:
          "SELECT id, count(*) OVER () AS c, n > 1 AS big, n * 1.5 AS half FROM vc_posts",
      });
      const types = view.fields.map((f: { type: string }) => f.type);
      assert.deepEqual(
        types,
        db === "postgres"
          ? ["string", "int", "bool", "double"]
          : ["string", "json", "json", "json"],
      );
      const row = (await (await asAdmin(s)).get("entities/vc_view")).data
        .items[0];
      assert.equal(row.c, 1);
      assert.equal(row.half, 6);
    });
  } finally {
    await s.close();
  }
});
