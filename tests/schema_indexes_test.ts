/**
 * Entity-level indexes (`indexes: [{fields, unique}]`): created with the
 * table, changed by PATCH in the same transaction, following field renames,
 * refusing duplicates when unique, read back from the database's catalog.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { asAdmin, createEntity, createRecord } from "./_scenarios.ts";
import { dbIndexes, ITEMS, pgIndexDefs } from "./_indexes_fixtures.ts";

type Idx = { id: string; fields: string[]; unique: boolean };
type Fld = { id: string; name: string };

async function schemaOf(s: TestServer, name: string) {
  const r = await (await asAdmin(s)).get(`schemas/${name}`);
  assert.equal(r.status, 200, r.text);
  return r.data;
}

forEachDb("indexes: created with the table, read back", async (t, db) => {
  const s = await startServer(db);
  try {
    const e = await createEntity(s, {
      ...ITEMS,
      indexes: [
        { fields: ["tag", "n"] },
        { fields: ["title", "created"], unique: true },
      ],
    });
    await t.step("the schema lists them with ids", () => {
      const got = e.indexes as Idx[];
      assert.deepEqual(got.map((i) => [i.fields, i.unique]), [
        [["tag", "n"], false],
        [["title", "created"], true],
      ]);
      for (const i of got) assert.match(i.id, /^[0-9a-f]{16}$/);
      assert.notEqual(got[0].id, got[1].id);
    });
    await t.step("GET shows the same", async () => {
      assert.deepEqual((await schemaOf(s, "items")).indexes, e.indexes);
    });
    await t.step("the database has them", async () => {
      assert.deepEqual(await dbIndexes(s, "items"), [
        "i:tag,n",
        "u:title,created",
      ]);
      if (db === "postgres") {
        assert.deepEqual(await pgIndexDefs(s, "items"), [
          "(tag NULLS FIRST, n NULLS FIRST)",
          "(title NULLS FIRST, created)",
        ]);
      }
    });
    await t.step("an entity without indexes lists []", async () => {
      const p = await createEntity(s, { name: "plain", fields: [] });
      assert.deepEqual(p.indexes, []);
      const v = await createEntity(s, {
        name: "pv",
        type: "view",
        view_query: "SELECT id FROM plain",
      });
      assert.equal(v.indexes, undefined, "a view has no indexes key");
    });
    await t.step("auth entities take them too", async () => {
      const u = await createEntity(s, {
        name: "users",
        type: "auth",
        fields: [{ name: "team", type: "string" }],
        indexes: [{ fields: ["team", "email"], unique: true }],
      });
      assert.equal(u.indexes.length, 1);
      assert.deepEqual(await dbIndexes(s, "users"), ["u:team,email"]);
    });
  } finally {
    await s.close();
  }
});

forEachDb(
  "indexes: a unique one refuses a duplicate combination",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await createEntity(s, {
        ...ITEMS,
        indexes: [{ fields: ["tag", "n"], unique: true }],
      });
      await createRecord(s, "items", { tag: "a", n: 1 });
      await createRecord(s, "items", { tag: "a", n: 2 });
      const b1 = await createRecord(s, "items", { tag: "b", n: 1 });
      await t.step("create -> 409 in the envelope", async () => {
        const r = await a.post("entities/items", { tag: "a", n: 1 });
        assert.equal(r.status, 409, r.text);
        assert.equal(r.body?.status, 409);
        assert.match(r.error, /^Cannot save record: .* must be unique/);
        assert.ok(r.data?.fields, r.text);
        for (const v of Object.values(r.data.fields)) {
          assert.equal((v as { code: string }).code, "unique");
        }
      });
      await t.step("update into a taken combination -> 409", async () => {
        const r = await a.patch(`entities/items/${b1.id}`, { tag: "a" });
        assert.equal(r.status, 409, r.text);
        assert.equal((await a.get(`entities/items/${b1.id}`)).data.tag, "b");
      });
      await t.step("NULLs do not collide (SQL semantics)", async () => {
        await createRecord(s, "items", { tag: "c" });
        await createRecord(s, "items", { tag: "c" });
      });
      await t.step("the count is unchanged by refusals", async () => {
        const r = await a.get("entities/items?count=true");
        assert.equal(r.data.count ?? r.data.total ?? r.data.items.length, 5);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "indexes: a unique conflict names the index's fields",
  async (_t, db) => {
    // Needs constraintError (lib/records/crud.ts) to ask indexConflict first.
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await createEntity(s, {
        ...ITEMS,
        indexes: [{ fields: ["tag", "n"], unique: true }],
      });
      await createRecord(s, "items", { tag: "a", n: 1 });
      const r = await a.post("entities/items", { tag: "a", n: 1 });
      assert.equal(r.status, 409, r.text);
      assert.equal(
        r.error,
        "Cannot save record: tag, n must be unique together",
      );
      assert.deepEqual(Object.keys(r.data.fields).sort(), ["n", "tag"]);
    } finally {
      await s.close();
    }
  },
);

forEachDb("indexes: PATCH adds, keeps, changes and drops", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    const e = await createEntity(s, ITEMS);
    const first = (e.indexes as Idx[])[0];
    await t.step(
      "adding one keeps the other (same id, no rebuild)",
      async () => {
        const r = await a.patch("schemas/items", {
          indexes: [...e.indexes, { fields: ["n"], unique: true }],
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.data.indexes[0].id, first.id);
        assert.deepEqual(await dbIndexes(s, "items"), ["i:tag,n", "u:n"]);
      },
    );
    await t.step("entries without ids match by fields", async () => {
      const r = await a.patch("schemas/items", {
        indexes: [{ fields: ["tag", "n"] }, { fields: ["n"], unique: true }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.indexes[0].id, first.id);
    });
    await t.step("changing unique recreates it", async () => {
      const r = await a.patch("schemas/items", {
        indexes: [{ fields: ["tag", "n"], unique: true }],
      });
      assert.equal(r.status, 200, r.text);
      assert.notEqual(r.data.indexes[0].id, first.id);
      assert.deepEqual(await dbIndexes(s, "items"), ["u:tag,n"]);
    });
    await t.step(
      "making it unique over duplicates -> 409, nothing changes",
      async () => {
        await a.patch("schemas/items", { indexes: [] });
        await createRecord(s, "items", { tag: "x", n: 1 });
        await createRecord(s, "items", { tag: "x", n: 1 });
        const r = await a.patch("schemas/items", {
          fields: [{ name: "extra", type: "int" }],
          indexes: [{ fields: ["tag", "n"], unique: true }],
        });
        assert.equal(r.status, 409, r.text);
        assert.match(r.error, /duplicate values/);
        const now = await schemaOf(s, "items");
        assert.deepEqual(now.indexes, []);
        assert.ok(!now.fields.some((f: Fld) => f.name === "extra"));
        assert.deepEqual(await dbIndexes(s, "items"), []);
      },
    );
    await t.step("an index over a field added by the same PATCH", async () => {
      const r = await a.patch("schemas/items", {
        fields: [{ name: "rank", type: "double" }],
        indexes: [{ fields: ["rank", "tag"] }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await dbIndexes(s, "items"), ["i:rank,tag"]);
    });
    await t.step("a PATCH without indexes leaves them", async () => {
      const r = await a.patch("schemas/items", { has_api: true });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await dbIndexes(s, "items"), ["i:rank,tag"]);
    });
    await t.step("renaming the entity keeps them", async () => {
      const r = await a.patch("schemas/items", { name: "things" });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await dbIndexes(s, "things"), ["i:rank,tag"]);
      await a.patch("schemas/things", { name: "items" });
    });
  } finally {
    await s.close();
  }
});

forEachDb(
  "indexes: field rename follows, deletion is refused",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      const e = await createEntity(s, {
        ...ITEMS,
        indexes: [{ fields: ["tag", "n"], unique: true }],
      });
      const tag = (e.fields as Fld[]).find((f) => f.name === "tag")!;
      const n = (e.fields as Fld[]).find((f) => f.name === "n")!;
      await createRecord(s, "items", { tag: "a", n: 1 });
      await t.step("rename: same index, new field name", async () => {
        const r = await a.patch("schemas/items", {
          fields: [{ id: tag.id, name: "label" }],
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.data.indexes[0].fields, ["label", "n"]);
        assert.equal(r.data.indexes[0].id, e.indexes[0].id);
        assert.deepEqual(await dbIndexes(s, "items"), ["u:label,n"]);
        const dup = await a.post("entities/items", { label: "a", n: 1 });
        assert.equal(dup.status, 409, dup.text);
      });
      await t.step(
        "rename and relist in one PATCH keeps the index",
        async () => {
          const r = await a.patch("schemas/items", {
            fields: [{ id: tag.id, name: "tag" }],
            indexes: [{ fields: ["tag", "n"], unique: true }],
          });
          assert.equal(r.status, 200, r.text);
          assert.equal(r.data.indexes[0].id, e.indexes[0].id);
        },
      );
      await t.step(
        "deleting a used field alone -> 400, nothing changes",
        async () => {
          const r = await a.patch("schemas/items", {
            fields: [{ id: n.id, op: "delete" }],
          });
          assert.equal(r.status, 400, r.text);
          assert.match(
            r.error,
            /^Cannot delete field "n": the index \(tag, n\) uses it/,
          );
          assert.ok(r.data.fields.indexes, r.text);
          const now = await schemaOf(s, "items");
          assert.ok(now.fields.some((f: Fld) => f.name === "n"));
          assert.deepEqual(await dbIndexes(s, "items"), ["u:tag,n"]);
        },
      );
      await t.step("deleting it with the index in one PATCH", async () => {
        const r = await a.patch("schemas/items", {
          fields: [{ id: n.id, op: "delete" }],
          indexes: [{ fields: ["tag"] }],
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.data.indexes.map((i: Idx) => i.fields), [["tag"]]);
        assert.ok(!r.data.fields.some((f: Fld) => f.name === "n"));
        assert.deepEqual(await dbIndexes(s, "items"), ["i:tag"]);
      });
      await t.step("a deleted field named by the new list -> 400", async () => {
        const r = await a.patch("schemas/items", {
          fields: [{ id: tag.id, op: "delete" }],
          indexes: [{ fields: ["tag"] }],
        });
        assert.equal(r.status, 400, r.text);
        assert.match(r.error, /indexes\[0\]\.fields: no field "tag"/);
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "indexes: export and import carry them; older schemas read as []",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await createEntity(s, ITEMS);
      await t.step("a GET's answer posted under a new name", async () => {
        const got = await schemaOf(s, "items");
        const r = await a.post("schemas", { ...got, name: "items2" });
        assert.equal(r.status, 201, r.text);
        assert.deepEqual(r.data.indexes.map((i: Idx) => i.fields), [[
          "tag",
          "n",
        ]]);
        assert.notEqual(r.data.indexes[0].id, got.indexes[0].id);
        assert.deepEqual(await dbIndexes(s, "items2"), ["i:tag,n"]);
        const back = await a.patch("schemas/items2", r.data);
        assert.equal(back.status, 200, back.text);
        assert.deepEqual(back.data.indexes, r.data.indexes);
      });
      await t.step("a stored schema without the key", async () => {
        await createEntity(s, {
          name: "old",
          fields: [{ name: "x", type: "int" }],
        });
        const row = await s.app.storage.query(
          `SELECT "schema" FROM "mb_tables" WHERE "lname" = 'old'`,
        );
        const stored = JSON.parse(String(row[0].schema));
        delete stored.indexes;
        await s.app.storage.run(
          `UPDATE "mb_tables" SET "schema" = ? WHERE "lname" = 'old'`,
          [JSON.stringify(stored)],
        );
        await s.app.schemas.load();
        assert.deepEqual((await schemaOf(s, "old")).indexes, []);
        const r = await a.patch("schemas/old", {
          indexes: [{ fields: ["x"] }],
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(await dbIndexes(s, "old"), ["i:x"]);
      });
    } finally {
      await s.close();
    }
  },
);
