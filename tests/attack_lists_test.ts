/**
 * Findings of a black-box review of list cursors, rules compiled to SQL and
 * field patterns (issue 13): each case failed before its fix.
 *
 * 1. Under a rule checked row by row, a filter compiled to SQL chose which
 *    hidden rows used up the per-request scan budget, so `has_more` on an
 *    empty page and `count=true`'s 400 answered "does some hidden row match
 *    this filter?" — an oracle on hidden values (binary search on `secret`).
 * 2. A `url` value could hold NUL characters: SQLite stored the whole value
 *    but read it back cut at the NUL, so SQL (filters, rules) saw text the
 *    caller was never shown.
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
import { columnOf, tableOf } from "../lib/schema/ddl.ts";
import { MAX_SCAN } from "../lib/records/list.ts";

/** Not compiled to SQL (string concatenation): checked row by row. */
const JS_RULE = { mode: "custom", expr: '(record.owner + "") == auth.id' };

async function userToken(s: TestServer, email: string): Promise<string> {
  const people = s.app.schemas.get("people")!;
  const u = await seedUser(s, "people", { email }, "password-123");
  return (await s.app.sessions.issue(people, (await people.read(u.id))!))
    .token;
}

/** Inserts `n` rows owned by someone else with `secret` = "pad". */
function pad(s: TestServer, n: number): Promise<void> {
  return insertSeries(s, "notes", n, {
    id: padded("pad-", 6),
    owner: "'carol'",
    secret: "'pad'",
  });
}

forEachDb(
  "attack: a SQL filter under a per-row rule is no oracle on hidden rows",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      let r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: { name: "people", type: "auth", fields: [] },
      });
      assert.equal(r.status, 201, r.text);
      r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "notes",
          type: "base",
          fields: [
            { name: "owner", type: "string" },
            { name: "secret", type: "string" },
          ],
          rules: { list: JS_RULE, get: JS_RULE },
        },
      });
      assert.equal(r.status, 201, r.text);
      // MAX_SCAN - 1 hidden "pad" rows, one hidden "pad2" row, and the
      // hidden target whose secret bob must not learn.
      await pad(s, MAX_SCAN - 1);
      const now = new Date().toISOString();
      const insert = `INSERT INTO ${tableOf("notes")} (${
        ["id", "created", "updated", "owner", "secret"].map(columnOf).join(
          ", ",
        )
      }) VALUES (?, ?, ?, ?, ?)`;
      await s.app.storage.run(insert, ["pad2", now, now, "carol", "pad2"]);
      await s.app.storage.run(insert, ["target", now, now, "carol", "hunter2"]);
      const bob = await userToken(s, "bob@example.com");

      const ask = async (filter: string, count: boolean) => {
        const q = encodeURIComponent(filter);
        const p = await s.request(
          "GET",
          `/api/v1/entities/notes?filter=${q}${count ? "&count=true" : ""}`,
          { token: bob },
        );
        assert.ok(p.status < 500, p.text);
        return {
          status: p.status,
          items: p.data?.items_count,
          has_more: p.data?.has_more,
          total: p.data?.total,
        };
      };
      // A page: right guess (MAX_SCAN rows match) vs wrong guess (one less).
      const right = await ask('secret == "pad" || secret == "hunter2"', false);
      const wrong = await ask('secret == "pad" || secret == "wrong"', false);
      assert.equal(right.items, 0);
      assert.deepEqual(right, wrong, "has_more tells the guess was right");
      // count=true: MAX_SCAN + 1 rows (right guess) vs MAX_SCAN (wrong guess).
      const cRight = await ask(
        'secret == "pad" || secret == "pad2" || secret < "i"',
        true,
      );
      const cWrong = await ask(
        'secret == "pad" || secret == "pad2" || secret < "h"',
        true,
      );
      assert.deepEqual(cRight, cWrong, "count's 400 tells secret < 'i'");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack: a url holding NUL is refused (SQLite read it back cut short)",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      let r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "links",
          type: "base",
          fields: [{ name: "site", type: "url" }],
          rules: {
            list: { mode: "public", expr: "" },
            add: { mode: "public", expr: "" },
          },
        },
      });
      assert.equal(r.status, 201, r.text);
      for (
        const site of [
          "http://a.example/\u0000hidden",
          "\u0000http://a.example/",
          "http://a.example/?q=\u0000",
        ]
      ) {
        r = await s.request("POST", "/api/v1/entities/links", {
          body: { site },
        });
        assert.equal(r.status, 400, `${JSON.stringify(site)}: ${r.text}`);
      }
      // What a filter sees is what a reader is shown.
      r = await s.request(
        "GET",
        "/api/v1/entities/links?filter=" +
          encodeURIComponent('site.includes("hidden")'),
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.items_count, 0);
    } finally {
      await s.close();
    }
  },
);
