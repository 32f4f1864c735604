/**
 * Lengths and arithmetic in filters and rules run in SQL
 * on a 20 000-row entity (no per-row header, fast), and what still runs per
 * row is bounded (the page by the scan budget, count=true by a 400).
 * What runs in SQL is told by the answers, not by their times (timings belong
 * to `deno task bench`).
 */
import assert from "node:assert/strict";
import {
  forEachDb,
  insertSeries,
  padded,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";
import { tableOf } from "../lib/schema/ddl.ts";

const ROWS = 20_000;

/**
 * A list request. What runs in SQL is told by the answer (no
 * X-Moonbase-Checked header), not by its time: timings belong to
 * `deno task bench`.
 */
function get(
  s: TestServer,
  _label: string,
  path: string,
  token: string,
) {
  return s.request("GET", `/api/v1/entities/${path}`, { token });
}

forEachDb(
  "list: lengths and arithmetic compile to SQL at 20k rows",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      let r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: { name: "members", type: "auth", fields: [] },
      });
      assert.equal(r.status, 201, r.text);
      const u = await seedUser(
        s,
        "members",
        { email: "m@example.com" },
        "pw-12345678",
      );
      const members = s.app.schemas.get("members")!;
      const user =
        (await s.app.sessions.issue(members, (await members.read(u.id))!))
          .token;
      const rule = { mode: "custom", expr: "record.n * 2 + 1 > 39000" };
      r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "big",
          type: "base",
          fields: [
            { name: "title", type: "string" },
            { name: "n", type: "int" },
            { name: "meta", type: "json" },
          ],
          rules: { list: rule, get: rule },
        },
      });
      assert.equal(r.status, 201, r.text);
      await insertSeries(
        s,
        "big",
        ROWS,
        {
          id: padded("00000000-0000-7000-8000-", 12),
          title: "'title ' || i",
          n: "i",
          meta: {
            sqlite:
              "json_object('a', json_object('b', 'k' || (i % 10)), 'n', i)",
            postgres:
              "jsonb_build_object('a', jsonb_build_object('b', 'k' || (i % 10)), 'n', i)",
          },
        },
        [],
        0,
      );
      if (db === "postgres") {
        await s.app.storage.exec(
          `ANALYZE ${tableOf("big")}`,
        );
      }
      // A long title somewhere in the middle.
      const long = await s.request("POST", "/api/v1/entities/big", {
        token: admin,
        body: { title: "😀".repeat(600), n: 5 },
      });
      assert.equal(long.status, 201, long.text);

      await t.step("filter=title.length > 999 runs in SQL", async () => {
        const q = encodeURIComponent("title.length > 999");
        const p = await get(
          s,
          "filter title.length > 999",
          `big?filter=${q}`,
          admin,
        );
        assert.equal(p.status, 200, p.text);
        assert.equal(p.headers.get("x-moonbase-checked"), null, "compiled");
        // 600 astral characters are 1200 UTF-16 code units, like JavaScript counts.
        assert.deepEqual(p.data.items.map((x: { id: string }) => x.id), [
          long.data.id,
        ]);
        const c = await get(
          s,
          "same with count=true",
          `big?count=true&filter=${q}`,
          admin,
        );
        assert.equal(c.data.total, 1);
      });

      await t.step("a rule with arithmetic runs in SQL", async () => {
        const p = await get(
          s,
          "rule n * 2 + 1 > 39000, count",
          "big?count=true&limit=10",
          user,
        );
        assert.equal(p.status, 200, p.text);
        assert.equal(p.headers.get("x-moonbase-checked"), null, "compiled");
        assert.equal(p.data.total, ROWS - 19500);
        assert.ok(
          p.data.items.every((x: { n: number }) => x.n * 2 + 1 > 39000),
        );
      });

      await t.step("what still runs per row is bounded", async () => {
        const q = encodeURIComponent('(title + "").length > 999');
        const p = await get(
          s,
          "per-row filter page",
          `big?filter=${q}`,
          admin,
        );
        assert.equal(p.status, 200, p.text);
        assert.match(String(p.headers.get("x-moonbase-checked")), /^per-row/);
        const c = await get(
          s,
          "per-row filter count",
          `big?count=true&filter=${q}`,
          admin,
        );
        assert.equal(c.status, 400, c.text);
        assert.match(c.error, /^Cannot count records: /);
      });
    } finally {
      await s.close();
    }
  },
);
