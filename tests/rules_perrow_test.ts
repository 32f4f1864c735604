/**
 * Rules the SQL compiler does not take (`.length` on a string, arithmetic)
 * are checked row by row, on both databases, with the same outcome as
 * compiled ones: exact lists, totals and pages, 404 on hidden records, 403
 * when an update moves a record out of the rule. Pages still reach visible
 * rows behind thousands of hidden ones, and cursors never come from a
 * hidden row.
 *
 * @module
 */

import {
  forEachDb,
  insertSeries,
  startServer,
  type TestServer,
} from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import {
  adminRows,
  allPages,
  create,
  ids,
  noDuplicates,
  type Page,
  type Rec,
  schema,
  SERIES_ID,
  setupUsers,
  stored,
} from "./_rules_fixtures.ts";

/** Rules that run per row, with the same predicate in JavaScript. */
const RULES_JS: readonly [string, string, (r: Rec) => boolean][] = [
  [
    "wordy",
    "record.title.length > 3",
    (r) => typeof r.title === "string" && r.title.length > 3,
  ],
  ["doubled", "record.n * 2 > 10", (r) => (r.n as number) * 2 > 10],
];

/**
 * Creates `name` (title, n; list/get/update/delete under `expr`) with 45
 * rows; the visible ones (i mod 9 ∈ {0, 1}, and i = 44) are rare and in
 * clumps, so pages must scan past many invisible rows.
 */
async function ruled(
  s: TestServer,
  admin: string,
  name: string,
  expr: string,
): Promise<Rec[]> {
  const rule = { mode: "custom", expr };
  await schema(s, admin, {
    name,
    type: "base",
    fields: [{ name: "title", type: "string" }, { name: "n", type: "int" }],
    rules: {
      list: rule,
      get: rule,
      add: { mode: "auth", expr: "" },
      update: rule,
      delete: rule,
    },
  });
  const on = "(i % 9 IN (0, 1) OR i = 44)";
  await insertSeries(
    s,
    name,
    45,
    {
      id: SERIES_ID,
      title: `CASE WHEN ${on} THEN 'visible ' || i ELSE 'abc' END`,
      n: `CASE WHEN ${on} THEN 6 + i % 4 ELSE i % 6 END`,
    },
    [],
    0,
  );
  return await adminRows(s, admin, name);
}

// Each step creates and uses an entity of its own.
forEachDb("rules: checked row by row", async (t, db) => {
  const s = await startServer(db);
  try {
    const { admin, tBob } = await setupUsers(s);
    const path = (name: string, id = "") =>
      `/api/v1/entities/${name}${id ? `/${id}` : ""}`;

    for (const [name, expr, visible] of RULES_JS) {
      await t.step(`${expr}: list/get/update/delete`, async () => {
        const rows = await ruled(s, admin, name, expr);
        const vis = rows.filter(visible);
        eq(vis.length, 11, "fixture");
        const r = await s.request("GET", `${path(name)}?count=true`, {
          token: tBob,
        });
        status(r, 200, "list");
        eq(ids((r.data as Page).items), ids(vis), "list items");
        eq((r.data as Page).total, vis.length, "total");
        for (const limit of [1, 2, 4]) {
          const got = await allPages(s, tBob, name, "count=true", limit);
          noDuplicates(got, `limit ${limit}`);
          eq(ids(got), ids(vis), `pages of ${limit}`);
        }
        const desc = await allPages(s, tBob, name, "sort=-n", 3);
        const adminDesc = (await allPages(s, admin, name, "sort=-n", 500))
          .filter(visible);
        eq(ids(desc), ids(adminDesc), "pages sorted by -n");

        const hidden = rows.find((x) => !visible(x))!;
        const shown = vis[0];
        status(
          await s.request("GET", path(name, hidden.id), { token: tBob }),
          404,
          "get hidden",
        );
        const g = await s.request("GET", path(name, shown.id), {
          token: tBob,
        });
        status(g, 200, "get visible");
        eq(g.data, shown, "get visible data");
        status(
          await s.request("PATCH", path(name, hidden.id), {
            token: tBob,
            body: { title: "changed title", n: 99 },
          }),
          404,
          "update hidden",
        );
        eq(await stored(s, admin, name, hidden.id), hidden, "hidden unchanged");
        status(
          await s.request("DELETE", path(name, hidden.id), { token: tBob }),
          404,
          "delete hidden",
        );
        eq(await stored(s, admin, name, hidden.id), hidden, "hidden kept");
        // Moving a visible record out of the rule is refused.
        status(
          await s.request("PATCH", path(name, shown.id), {
            token: tBob,
            body: { title: "ab", n: 1 },
          }),
          403,
          "update out of the rule",
        );
        eq(await stored(s, admin, name, shown.id), shown, "visible unchanged");
        const ok = await s.request("PATCH", path(name, shown.id), {
          token: tBob,
          body: { title: "still long", n: 50 },
        });
        status(ok, 200, "update within the rule");
        eq([ok.data.title, ok.data.n], ["still long", 50], "updated data");
        const d = await s.request("DELETE", path(name, vis[1].id), {
          token: tBob,
        });
        status(d, 204, "delete visible");
        eq(await stored(s, admin, name, vis[1].id), undefined, "deleted");
        const c = await s.request("GET", `${path(name)}?count=true&limit=1`, {
          token: tBob,
        });
        eq(c.data.total, vis.length - 1, "total after delete");
      });
    }

    await t.step(
      "visible rows behind 10 100 hidden ones are still reached",
      async () => {
        const rule = { mode: "custom", expr: "record.title.length > 3" };
        await schema(s, admin, {
          name: "sparse",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: rule, get: rule },
        });
        // 10 100 hidden rows, inserted set-based (ids sort before any UUIDv7
        // made now), then two visible rows through the API.
        await insertSeries(s, "sparse", 10100, {
          id: SERIES_ID,
          title: "'ab'",
        });
        const a = await s.request(
          "GET",
          "/api/v1/entities/sparse?count=true&limit=1",
          { token: admin },
        );
        eq(a.data.total, 10100, "hidden rows inserted");
        const v1 = await create(s, admin, "sparse", { title: "visible one" });
        const v2 = await create(s, admin, "sparse", { title: "visible two" });
        const first = await s.request(
          "GET",
          "/api/v1/entities/sparse?count=true",
          { token: tBob },
        );
        status(first, 200, "first page");
        const p1 = first.data as Page;
        const problems: string[] = [];
        if (p1.total !== 2) problems.push(`total ${p1.total} (expected 2)`);
        if (p1.items.length === 0 && !p1.has_more) {
          problems.push(
            `first page: no items, has_more false, cursor ${p1.cursor}: the visible rows are unreachable`,
          );
        }
        let got: Rec[] = [];
        try {
          got = await allPages(s, tBob, "sparse", "", 50, true);
        } catch (err) {
          problems.push(String(err));
        }
        if (JSON.stringify(ids(got)) !== JSON.stringify([v1.id, v2.id])) {
          problems.push(
            `all pages returned ${got.length} of the 2 visible rows`,
          );
        }
        const g = await s.request("GET", `/api/v1/entities/sparse/${v2.id}`, {
          token: tBob,
        });
        if (g.status !== 200) problems.push(`get visible row: ${g.status}`);
        if (problems.length) fail(problems.join("; "));
        // The long scans left the server serving.
        const h = await s.request("GET", "/api/v1/health");
        status(h, 200, "health");
        eq(h.data.status, "ok", "health status");
      },
    );

    await t.step(
      "cursors: sealed, never from a hidden row, hand-made ones refused",
      async () => {
        const rule = { mode: "custom", expr: "record.title.length > 3" };
        await schema(s, admin, {
          name: "paged",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: rule, get: rule },
        });
        const first = await create(s, admin, "paged", { title: "visible A" });
        const hidden = [];
        for (let i = 0; i < 3; i++) {
          hidden.push(await create(s, admin, "paged", { title: "ab" }));
        }
        const lastVisible = await create(s, admin, "paged", {
          title: "visible B",
        });
        // Page 1 shows "visible A", then scans the hidden rows up to "visible B".
        const p1 = await s.request("GET", "/api/v1/entities/paged?limit=1", {
          token: tBob,
        });
        status(p1, 200, "page 1");
        const c1 = String(p1.data.cursor);
        eq(ids(p1.data.items as Rec[]), [first.id], "page 1 items");
        for (const h of hidden) {
          if (c1.includes(String(h.id))) {
            fail("cursor shows a hidden row's id");
          }
        }
        const p2 = await s.request(
          "GET",
          `/api/v1/entities/paged?limit=1&after=${encodeURIComponent(c1)}`,
          { token: tBob },
        );
        status(p2, 200, "page 2");
        eq(ids(p2.data.items as Rec[]), [lastVisible.id], "page 2 items");
        // A hand-made cursor is refused: cursors are sealed and bound to the query.
        const made = btoa(JSON.stringify([first.id])).replaceAll("=", "");
        const p3 = await s.request(
          "GET",
          `/api/v1/entities/paged?after=${made}`,
          { token: tBob },
        );
        status(p3, 400, "hand-made cursor");
        for (const bad of ["s.AAAA", "bm9wZQ", "%E2%82%AC", "W10"]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/paged?after=${bad}`,
            { token: tBob },
          );
          status(r, 400, `bad cursor ${bad}`);
        }
      },
    );
  } finally {
    await s.close();
  }
});
