/**
 * Attack review of the endpoints the dashboard added (issue 14): the rule
 * trial (`POST /api/v1/sys/rules/test`) must say what the API would do, and
 * the sidebar counts must stay bounded. Both databases.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply, startServer } from "./_server.ts";

function ok(r: Reply, status: number, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.text.slice(0, 400)}`);
}

forEachDb(
  "attack: the rule trial on a view decides each listed row, as a list does (ids of views need not be unique)",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      const call = (method: string, path: string, body?: unknown) =>
        s.request(method, path, { token: admin, body });
      ok(
        await call("POST", "/api/v1/schemas", {
          name: "posts",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: {},
        }),
        201,
        "posts",
      );
      ok(
        await call("POST", "/api/v1/schemas", {
          name: "notes",
          type: "base",
          fields: [
            { name: "post", type: "string" },
            { name: "body", type: "string" },
          ],
          rules: {},
        }),
        201,
        "notes",
      );
      const p1 = (await call("POST", "/api/v1/entities/posts", {
        title: "with notes",
      })).data.id;
      ok(
        await call("POST", "/api/v1/entities/posts", { title: "alone" }),
        201,
        "post",
      );
      for (const body of ["open", "secret"]) {
        ok(
          await call("POST", "/api/v1/entities/notes", { post: p1, body }),
          201,
          "note",
        );
      }
      // A join repeats the post's id; an outer join leaves ids null.
      const views: [string, string, string, number][] = [
        [
          "post_notes",
          `SELECT p.id AS id, p.title AS title, n.body AS body FROM posts p JOIN notes n ON n.post = p.id`,
          "record.body == 'open'",
          2,
        ],
        [
          "note_posts",
          `SELECT n.id AS id, p.title AS title FROM posts p LEFT JOIN notes n ON n.post = p.id`,
          "record.title == 'alone'",
          3,
        ],
        [
          // Per row in JavaScript (not compiled to SQL): the same answer.
          "post_notes_js",
          `SELECT p.id AS id, p.title AS title, n.body AS body FROM posts p JOIN notes n ON n.post = p.id`,
          "record.body + '!' == 'open!'",
          2,
        ],
      ];
      for (const [name, view_query, expr, rows] of views) {
        ok(
          await call("POST", "/api/v1/schemas", {
            name,
            type: "view",
            view_query,
            rules: { list: { mode: "custom", expr } },
          }),
          201,
          name,
        );
        // What a guest really gets listed under the rule...
        const listed = await s.request("GET", `/api/v1/entities/${name}`);
        ok(listed, 200, `${name}: list as a guest`);
        // ...is what the trial says it gets.
        const r = await call("POST", "/api/v1/sys/rules/test", {
          entity: name,
          op: "list",
          rule: { mode: "custom", expr },
          as: null,
        });
        ok(r, 200, `${name}: trial`);
        const items = r.data.items as { allowed: boolean }[];
        assert.equal(items.length, rows, `${name}: every row tried`);
        assert.equal(
          items.filter((i) => i.allowed).length,
          listed.data.items.length,
          `${name}: the trial lets through as many rows as the list shows (${
            JSON.stringify(r.data.items)
          } vs ${JSON.stringify(listed.data.items)})`,
        );
        assert.equal(listed.data.items.length, 1, name);
      }
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack: sidebar counts stop at 10 000 rows (the dashboard asks after every save; a join view has no bound)",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      const call = (method: string, path: string, body?: unknown) =>
        s.request(method, path, { token: admin, body });
      ok(
        await call("POST", "/api/v1/schemas", {
          name: "items",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: {},
        }),
        201,
        "items",
      );
      const now = new Date().toISOString();
      const rows = Array.from(
        { length: 150 },
        (_, i) => [crypto.randomUUID(), now, now, `t${i}`],
      );
      await s.app.storage.run(
        `INSERT INTO "items" ("id", "created", "updated", "title") VALUES ${
          rows.map(() => "(?, ?, ?, ?)").join(", ")
        }`,
        rows.flat(),
      );
      // 150 × 150 = 22 500 rows; three such joins would be 3 375 000.
      ok(
        await call("POST", "/api/v1/schemas", {
          name: "pairs",
          type: "view",
          view_query:
            "SELECT a.id AS id, b.title AS title FROM items a, items b",
          rules: {},
        }),
        201,
        "pairs",
      );
      const r = await call("GET", "/api/v1/sys/counts");
      ok(r, 200, "counts");
      assert.equal(r.data.items, 150, "exact below the cap");
      assert.equal(r.data.mb_admins, 1);
      assert.equal(r.data.pairs, 10_001, "more than 10 000: the cap + 1");
      // The entity's own count (records API, count=true) stays exact.
      const page = await call(
        "GET",
        "/api/v1/entities/pairs?limit=1&count=true",
      );
      ok(page, 200, "count=true");
      assert.equal(page.data.total, 22_500);
    } finally {
      await s.close();
    }
  },
);
