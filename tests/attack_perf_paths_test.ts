/**
 * Attacks on the fast paths: the create fused with its realtime event
 * (PostgreSQL), list cursors with cached query digests, and health on
 * SQLite answered without a timer.
 *
 * @module
 */

import { assert, assertEquals, forEachDb, startServer } from "./_server.ts";
import { openSse } from "./_realtime_client.ts";
import { createEntity } from "./_scenarios.ts";

const OPEN = { mode: "public", expr: "" };
const RULES = { list: OPEN, get: OPEN, add: OPEN, update: OPEN, delete: OPEN };

forEachDb(
  "attack perf: a failed create leaves no event; each event is the stored record",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await createEntity(s, {
        name: "items",
        rules: RULES,
        fields: [
          { name: "slug", type: "string", unique: true },
          { name: "b", type: "bool" },
          { name: "j", type: "json" },
          { name: "d", type: "date" },
          { name: "x", type: "double" },
          { name: "t", type: "string" },
        ],
      });
      const sse = await openSse(s, "topics=items");
      try {
        assertEquals((await sse.next())?.event, "ready");
        const bodies = [
          {
            slug: "a",
            b: true,
            j: { z: 1, a: [1, "x", null] },
            d: "2024-02-29",
          },
          { slug: "a", b: false }, // unique violation
          { slug: "c", b: false, j: null, x: 0.1 + 0.2, t: "é\u{1F600}" },
        ];
        const replies = [];
        for (const body of bodies) {
          replies.push(
            await s.request("POST", "/api/v1/entities/items", { body }),
          );
        }
        assertEquals(replies.map((x) => x.status), [201, 409, 201]);
        const events = await sse.drain(1500);
        assertEquals(
          events.map((e) => e.data?.record?.slug),
          ["a", "c"],
          "one event per stored record, none for the failed create",
        );
        const list = await s.request("GET", "/api/v1/entities/items?sort=slug");
        assertEquals(list.data.items.length, 2);
        for (const [i, stored] of list.data.items.entries()) {
          assertEquals(
            events[i].data.record,
            stored,
            `the event of ${stored.slug} is the stored record`,
          );
        }
      } finally {
        sse.close();
      }
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack perf: a cursor of one filter or caller is refused for another",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await createEntity(s, {
        name: "rows",
        rules: RULES,
        fields: [{ name: "n", type: "int" }, { name: "s", type: "string" }],
      });
      for (let n = 0; n < 6; n++) {
        const w = await s.request("POST", "/api/v1/entities/rows", {
          body: { n, s: n % 2 ? "odd" : "even" },
        });
        assertEquals(w.status, 201);
      }
      const page = async (q: string, token?: string) =>
        await s.request("GET", `/api/v1/entities/rows?limit=1&${q}`, { token });
      // Filters whose JSON or NUL-joined keys could meet if built naively.
      const filters = [
        `s == "even"`,
        `s == "even" `,
        `s == "even\\u0000"`,
        `s == "odd"`,
      ];
      const first = await page(`filter=${encodeURIComponent(filters[0])}`);
      assertEquals(first.status, 200, first.text);
      const cursor = encodeURIComponent(String(first.data.cursor));
      assert(typeof cursor === "string", `a cursor: ${first.text}`);
      for (const f of filters.slice(1)) {
        const other = await page(
          `filter=${encodeURIComponent(f)}&after=${cursor}`,
        );
        assertEquals(
          other.status,
          400,
          `cursor reused under ${f}: ${other.text}`,
        );
      }
      // A flood of distinct filters (past the digest cache) then the cursor
      // still works for its own query.
      for (let i = 0; i < 600; i++) {
        const f = encodeURIComponent(`n != ${i}`);
        await page(`filter=${f}`);
      }
      const again = await page(
        `filter=${encodeURIComponent(filters[0])}&after=${cursor}`,
      );
      assertEquals(again.status, 200, again.text);
      const admin2 = await page(
        `filter=${encodeURIComponent(filters[0])}&after=${cursor}`,
        admin,
      );
      assertEquals(admin2.status, 400, "another caller");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack perf: a lone surrogate is stored as sent or refused, never altered behind the reply and the event",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await createEntity(s, {
        name: "notes",
        rules: RULES,
        fields: [{ name: "t", type: "string" }, { name: "j", type: "json" }],
      });
      for (const body of [{ t: "a\ud800b" }, { j: { k: "a\udc00b" } }]) {
        const c = await s.request("POST", "/api/v1/entities/notes", { body });
        assert(c.status < 500, `no 5xx: ${c.status} ${c.text}`);
        if (c.status !== 201) continue; // refused: fine
        const got = await s.request(
          "GET",
          `/api/v1/entities/notes/${c.data.id}`,
        );
        assertEquals(got.data, c.data, "the reply is what was stored");
      }
    } finally {
      await s.close();
    }
  },
);
