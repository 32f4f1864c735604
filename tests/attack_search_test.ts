/**
 * Attacks on full-text search: text that would overflow PostgreSQL's
 * tsvector, words repeated past its positions, batches and cascades that
 * bypass the records route, a searchable field dropped, an entity dropped,
 * a view reading the search tables, query syntax in the words.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { asAdmin, createEntity, createRecord, fieldId } from "./_scenarios.ts";

async function found(s: TestServer, entity: string, q: string) {
  const r = await s.request(
    "GET",
    `/api/v1/entities/${entity}?limit=500&count=true&search=${
      encodeURIComponent(q)
    }`,
    { token: await s.adminToken() },
  );
  assert.equal(r.status, 200, `${q}: ${r.text}`);
  return r.data.total as number;
}

async function searchTables(s: TestServer): Promise<string[]> {
  const rows = s.app.storage.dialect.name === "postgres"
    ? await s.app.storage.query(
      `SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'mb_search_%'`,
    )
    : await s.app.storage.query(
      `SELECT name FROM sqlite_master WHERE name LIKE 'mb_search_%' AND type = 'table'`,
    );
  return rows.map((r) => String(r.name));
}

forEachDb("attack search: big text, other writers, drops", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await asAdmin(s);
    await createEntity(s, {
      name: "docs",
      fields: [
        { name: "title", type: "string", searchable: true },
        { name: "body", type: "text", searchable: true },
        {
          name: "parent",
          type: "relation",
          foreign_key: { entity: "docs", on_delete: "cascade" },
        },
      ],
      rules: {
        list: { mode: "public", expr: "" },
        add: { mode: "public", expr: "" },
      },
    });

    await t.step(
      "text that would overflow a tsvector is stored and found",
      async () => {
        // 1-character words of 4-byte letters (CJK Extension B), all distinct,
        // then far more than the indexed 100 000 characters.
        let wide = "";
        for (let i = 0; wide.length < 200_000; i++) {
          wide += String.fromCodePoint(0x20000 + i) + " ";
        }
        const many = "ab ".repeat(300_000); // one word, 300 000 times
        const long = "x".repeat(70) + " " + "y".repeat(64);
        for (const body of [wide, many, long]) {
          await createRecord(s, "docs", { title: "huge", body });
        }
        assert.equal(await found(s, "docs", "huge"), 3);
        assert.equal(await found(s, "docs", "ab"), 1);
        // Words longer than 64 characters are not indexed; 64 are.
        assert.equal(await found(s, "docs", "x".repeat(70)), 0);
        assert.equal(await found(s, "docs", "y".repeat(64)), 1);
        assert.equal(await found(s, "docs", String.fromCodePoint(0x20005)), 1);
      },
    );

    await t.step("batches and cascades keep the index", async () => {
      const r = await admin.post("batch", {
        requests: [
          {
            method: "POST",
            url: "/api/v1/entities/docs",
            body: { title: "batched parent" },
          },
        ],
      });
      assert.equal(r.status, 200, r.text);
      const parent = r.data[0].data.id;
      await createRecord(s, "docs", { title: "batched child", parent });
      assert.equal(await found(s, "docs", "batched"), 2);
      assert.equal((await admin.del(`entities/docs/${parent}`)).status, 204);
      assert.equal(
        await found(s, "docs", "batched"),
        0,
        "the cascade removed both",
      );
    });

    await t.step("query syntax in words is only words", async () => {
      await createRecord(s, "docs", {
        title: 'NEAR(a b) OR c* "d" e:f -g ^h {i}',
      });
      for (
        const q of [
          "NEAR(a b)",
          "OR",
          "c*",
          '"d"',
          "e:f",
          "-g",
          "^h",
          "{i}",
          "'",
          "a:*",
        ]
      ) {
        const r = await s.request(
          "GET",
          `/api/v1/entities/docs?search=${encodeURIComponent(q)}`,
          { token: await s.adminToken() },
        );
        const words = /[\p{L}\p{N}]/u.test(q);
        assert.equal(r.status, words ? 200 : 400, `${q}: ${r.text}`);
        if (words) assert.ok(r.data.items.length >= 1, q);
      }
    });

    await t.step("a view cannot read the search tables", async () => {
      const [table] = await searchTables(s);
      const r = await admin.post("schemas", {
        name: "peek",
        type: "view",
        view_query: `SELECT id, id AS x FROM ${table}`,
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.error, /not an entity/);
    });

    await t.step("a searchable field dropped, then the entity", async () => {
      const body = await fieldId(s, "docs", "body");
      const r = await admin.patch("schemas/docs", {
        fields: [{ id: body, op: "delete" }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(
        await found(s, "docs", "ab"),
        0,
        "body is no longer indexed",
      );
      assert.equal(await found(s, "docs", "huge"), 3);
      await createRecord(s, "docs", { title: "after the drop" });
      assert.equal(await found(s, "docs", "drop"), 1);
      assert.equal((await admin.del("schemas/docs")).status, 204);
      assert.deepEqual(await searchTables(s), []);
    });
  } finally {
    await s.close();
  }
});
