/**
 * Errors that say what to do (issue 27, item 5): one "Cannot …" prefix, a
 * lone `=` suggests `==`, a filter's unencoded `&&` hints at URL encoding,
 * a view's SQL error names the column or table the database refused (the
 * same words on both databases), a 429 says how many seconds to wait; the
 * request log keeps the error text a client got, and leaves out the
 * dashboard's own successful requests unless `logDashboard` is set.
 *
 * The scenarios share one server per database (each creates what it reads
 * under its own name, and only the login case logs in).
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply, startServer } from "./_server.ts";
import {
  createEntity,
  once,
  runScenarios,
  sc,
  type Scenario,
} from "./_scenarios.ts";
import type { LogEntry } from "./_logs_fixtures.ts";

const posts = once(async (s) => {
  await createEntity(s, {
    name: "eg_posts",
    fields: [
      { name: "title", type: "string" },
      { name: "views", type: "int" },
    ],
  });
});

const LIST = "/api/v1/entities/eg_posts";

/** Exactly one "Cannot" in an error: no prefix wrapped around another. */
function oneCannot(r: Reply): void {
  assert.equal(r.error.match(/Cannot/g)?.length, 1, r.error);
}

/** A view the admin tries to create: 400 naming what the database refused. */
function badView(name: string, query: string, named: RegExp): Scenario {
  return sc(name, "POST", "/api/v1/schemas", 400, {
    token: "admin",
    setup: posts,
    body: { name: "eg_view", type: "view", view_query: query },
    expect: (r) => {
      assert.match(r.error, named);
      assert.doesNotMatch(r.error, /no such|does not exist"|sqlite_|pg_/);
    },
  });
}

runScenarios("errors say what to do", [
  sc(
    "a filter with = suggests ==, in one prefix",
    "GET",
    `${LIST}?filter=${encodeURIComponent('title = "x"')}`,
    400,
    {
      setup: posts,
      token: "admin",
      expect: (r) => {
        assert.equal(
          r.error,
          'Cannot parse filter: unexpected "=" (to compare, write "==") at 6',
        );
      },
    },
  ),
  sc(
    "an unknown name in a filter: no doubled prefix",
    "GET",
    `${LIST}?filter=${encodeURIComponent("nope == 1")}`,
    400,
    {
      setup: posts,
      token: "admin",
      expect: (r) => {
        assert.match(r.error, /^Cannot parse filter: unknown name "nope"/);
        oneCannot(r);
      },
    },
  ),
  sc(
    "a filter's unencoded && hints at URL encoding",
    "GET",
    `${LIST}?filter=views>=2&&title=="x"`,
    400,
    {
      setup: posts,
      token: "admin",
      expect: (r) => {
        assert.match(r.error, /unknown parameter "title"/);
        assert.match(r.error, /URL-encode the filter/);
        assert.match(r.error, /%26%26/);
      },
    },
  ),
  sc(
    "a field given as a parameter points at filter",
    "GET",
    `${LIST}?title=x`,
    400,
    {
      setup: posts,
      token: "admin",
      expect: (r) => {
        assert.match(
          r.error,
          /unknown parameter "title"; to filter by a field/,
        );
        assert.match(r.error, /filter=title == "x"/);
      },
    },
  ),
  sc(
    "any other parameter lists what lists take",
    "GET",
    `${LIST}?page=2`,
    400,
    {
      setup: posts,
      token: "admin",
      contains: [
        "limit, after, sort, fields, count, filter, search and expand",
      ],
    },
  ),
  sc(
    "a rule with = at save: one prefix, suggests ==",
    "POST",
    "/api/v1/schemas",
    400,
    {
      token: "admin",
      body: {
        name: "eg_rules",
        type: "base",
        fields: [],
        rules: { list: { mode: "custom", expr: "auth.id = 1" } },
      },
      expect: (r) => {
        assert.equal(
          r.error,
          'Cannot accept rules.list.expr: unexpected "=" (to compare, write "==") at 8',
        );
      },
    },
  ),
  sc(
    "a rule trial with = : one prefix",
    "POST",
    "/api/v1/sys/rules/test",
    400,
    {
      token: "admin",
      setup: posts,
      body: {
        entity: "eg_posts",
        op: "list",
        rule: { mode: "custom", expr: "auth.id = 1" },
        as: null,
      },
      expect: (r) => {
        assert.match(r.error, /^Cannot test rule: unexpected "="/);
        oneCannot(r);
      },
    },
  ),
  badView(
    "a view with an unknown column names it",
    "SELECT id, nope FROM eg_posts",
    /^Cannot accept view_query: it does not run \(the SQL names a column that does not exist: "nope"\)$/,
  ),
  badView(
    "a view with an unknown qualified column names it",
    "SELECT p.id, p.nope FROM eg_posts p",
    /column that does not exist: "p\.nope"\)$/,
  ),
  badView(
    "a view with an unknown table names it",
    "SELECT id FROM eg_nope",
    /^Cannot accept view_query: it does not run \(the SQL names a table that does not exist: "eg_nope"\)$/,
  ),
  badView(
    "a view calling an unknown function names it",
    "SELECT id, eg_fn(id) AS x FROM eg_posts",
    /function that does not exist: "eg_fn"\)$/,
  ),
  sc(
    "a 429 says how many seconds to wait",
    "POST",
    "/api/v1/sys/admins/login",
    429,
    {
      body: { identity: "nobody@example.com", password: "wrong-password-1" },
      setup: async (s) => {
        for (let i = 0; i < 5; i++) {
          const r = await s.request("POST", "/api/v1/sys/admins/login", {
            body: {
              identity: "nobody@example.com",
              password: "wrong-password",
            },
          });
          assert.equal(r.status, 401, r.text);
        }
      },
      expect: (r) => {
        const wait = Number(r.headers.get("retry-after"));
        assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `${wait}`);
        const unit = wait === 1 ? "second" : "seconds";
        assert.equal(
          r.error,
          `Cannot log in: too many attempts from this address; try again in ${wait} ${unit}`,
        );
      },
    },
  ),
], { fresh: "group" });

/** The request entries of the log, after a flush. */
async function requestEntries(
  s: Awaited<ReturnType<typeof startServer>>,
): Promise<LogEntry[]> {
  await s.app.log.flush();
  const r = await s.request("GET", "/api/v1/sys/logs?type=request&limit=500", {
    token: await s.adminToken(),
  });
  assert.equal(r.status, 200, r.text);
  return r.data.items;
}

/** The dashboard's own requests: its page, an asset and a tagged poll. */
async function dashboardRequests(
  s: Awaited<ReturnType<typeof startServer>>,
  tag: string,
): Promise<void> {
  const token = await s.adminToken();
  const get = async (path: string, id: string, withToken = true) => {
    const res = await fetch(s.url + path, {
      headers: {
        "x-request-id": id,
        ...(withToken ? { authorization: `Bearer ${token}` } : {}),
      },
    });
    await res.body?.cancel();
    return res.status;
  };
  assert.equal(await get("/mb", `${tag}-page`), 200);
  assert.equal(await get("/mb/assets/app.js", `${tag}-asset`), 200);
  assert.equal(await get("/api/v1/sys/logs", `mbtail-${tag}-1`), 200);
  assert.equal(await get("/api/v1/sys/logs/stats", `mbtail-${tag}-2`), 200);
  // Never hidden: a failure, and the tag on another path.
  assert.equal(await get("/mb/assets/nope.js", `${tag}-missing`), 404);
  assert.equal(await get("/api/v1/sys/logs", `mbtail-${tag}-3`, false), 401);
  assert.equal(await get("/api/v1/health", `mbtail-${tag}-4`), 200);
}

forEachDb(
  "request log: the client's error text, the dashboard left out",
  async (t, db) => {
    const s = await startServer(db);
    try {
      await t.step("a 4xx entry keeps the message the client got", async () => {
        await createEntity(s, {
          name: "eg_logged",
          fields: [{ name: "title", type: "string" }],
        });
        const token = await s.adminToken();
        const bad = await s.request(
          "GET",
          `/api/v1/entities/eg_logged?filter=${
            encodeURIComponent("title = 1")
          }`,
          { token, headers: { "x-request-id": "eg-bad-filter" } },
        );
        assert.equal(bad.status, 400);
        const missing = await s.request("GET", "/api/v1/entities/eg_none", {
          token,
          headers: { "x-request-id": "eg-missing" },
        });
        assert.equal(missing.status, 404);
        const ok = await s.request("GET", "/api/v1/entities/eg_logged", {
          token,
          headers: { "x-request-id": "eg-ok" },
        });
        assert.equal(ok.status, 200);
        const entries = await requestEntries(s);
        const by = (id: string) => entries.find((e) => e.request_id === id);
        assert.deepEqual(by("eg-bad-filter")?.data, { error: bad.error });
        assert.equal(by("eg-bad-filter")?.status, 400);
        assert.equal(by("eg-bad-filter")?.level, "warn");
        assert.deepEqual(by("eg-missing")?.data, { error: missing.error });
        assert.equal(by("eg-ok")?.data, null);
        // One entry per request, not two.
        assert.equal(
          entries.filter((e) => e.request_id === "eg-bad-filter").length,
          1,
        );
      });
      await t.step(
        "the dashboard's own requests are left out by default",
        async () => {
          await dashboardRequests(s, "dflt");
          const ids = (await requestEntries(s)).map((e) => e.request_id);
          for (
            const id of [
              "dflt-page",
              "dflt-asset",
              "mbtail-dflt-1",
              "mbtail-dflt-2",
            ]
          ) {
            assert.ok(!ids.includes(id), `${id} was logged`);
          }
          for (const id of ["dflt-missing", "mbtail-dflt-3", "mbtail-dflt-4"]) {
            assert.ok(ids.includes(id), `${id} was not logged`);
          }
          const missing = (await requestEntries(s)).find((e) =>
            e.request_id === "dflt-missing"
          );
          assert.deepEqual(missing?.data, { error: "Not Found" });
        },
      );
    } finally {
      await s.close();
    }
    const kept = await startServer(db, { logDashboard: true });
    try {
      await t.step("logDashboard keeps them", async () => {
        await dashboardRequests(kept, "kept");
        const ids = (await requestEntries(kept)).map((e) => e.request_id);
        for (
          const id of [
            "kept-page",
            "kept-asset",
            "mbtail-kept-1",
            "mbtail-kept-2",
            "kept-missing",
            "mbtail-kept-3",
            "mbtail-kept-4",
          ]
        ) assert.ok(ids.includes(id), `${id} was not logged`);
      });
    } finally {
      await kept.close();
    }
  },
);
