/**
 * The logs API's query: `limit`, `level` / `min_level`, `type`, `search`
 * (case-insensitive, `%` `_` `\` literal), `start_date` / `end_date`, the
 * keyset cursor `after`, and a 400 for every bad or unknown parameter.
 *
 * Every case here only reads: one server per database holds one fixture of
 * entries (written through the logger at level trace) and the cases query it.
 * The queries themselves add request entries, which no case counts exactly.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  entry,
  getLogs,
  messages,
  type NewEntry,
  page,
  put,
  walk,
} from "./_logs_fixtures.ts";

const DAY = 86_400_000;

/**
 * Real traffic (three 200s and a 404), five `fxlvl <level>` entries, seven
 * `fxs` search entries and `fxs axb` / `fxs backslash` decoys, a request entry
 * found only by its path, three `fxdate` entries 3 days, 1 day and 0 days old,
 * and `fxbulk 0..119` (every third one warn). Returns the fixture's "now".
 */
async function seedEntries(s: TestServer): Promise<number> {
  for (let i = 0; i < 3; i++) {
    assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
  }
  assertStatus(
    await s.request("GET", "/api/v1/entities/nothing_here"),
    404,
    "404",
  );
  const now = Date.now();
  const entries: NewEntry[] = [
    ...(["trace", "debug", "info", "warn", "error"] as const).map((level) =>
      entry({ level, message: `fxlvl ${level}` })
    ),
    entry({ message: "fxs 100% done" }),
    entry({ message: "fxs 100 percent" }),
    entry({ message: "fxs a_b" }),
    entry({ message: "fxs axb" }),
    entry({ message: "fxs back\\slash" }),
    entry({ message: "fxs backslash" }),
    entry({ message: "FXS MiXeD CaSe" }),
    entry({
      type: "request",
      level: "warn",
      message: "unrelated",
      method: "GET",
      path: "/zz/FxOnlyInPath",
      status: 404,
      duration_ms: 1.5,
    }),
    entry({
      message: "fxdate old",
      time: new Date(now - 3 * DAY).toISOString(),
    }),
    entry({
      message: "fxdate mid",
      time: new Date(now - 1 * DAY).toISOString(),
    }),
    entry({ message: "fxdate new", time: new Date(now).toISOString() }),
  ];
  for (let i = 0; i < 120; i++) {
    entries.push(entry({
      message: `fxbulk ${i}`,
      level: i % 3 === 0 ? "warn" : "info",
    }));
  }
  await put(s, entries);
  return now;
}

forEachDb("logs filters: limit, level, type, search, dates", async (t, db) => {
  const s = await startServer(db, { logLevel: "trace" });
  try {
    const admin = await s.adminToken();
    const now = await seedEntries(s);
    /** The messages of one page of a query. */
    const query = (p: Record<string, string>) =>
      getLogs(s, admin, p).then((r) => messages(page(r, JSON.stringify(p))));

    await t.step("limit: default 50, 1, 1000", async () => {
      let items = page(await getLogs(s, admin), "default");
      let r = await getLogs(s, admin);
      assertEquals(r.data.limit, 50, "default limit");
      assertEquals(items.length, 50, "default page is full");
      assertEquals(r.data.has_more, true, "more than 50 entries");
      r = await getLogs(s, admin, { limit: "1" });
      items = page(r, "limit 1");
      assertEquals([items.length, r.data.limit], [1, 1], "limit 1");
      r = await getLogs(s, admin, { limit: "1000" });
      items = page(r, "limit 1000");
      assertEquals(r.data.limit, 1000, "limit 1000");
      assert(items.length > 140, `all entries: ${items.length}`);
      assertEquals(r.data.has_more, false, "all fit");
    });

    type Bad = { name: string; params: Record<string, string> };
    const bad: Bad[] = [
      ...["0", "1001", "abc", "-1", "1.5", "10abc", "99999"].map((v) => ({
        name: `limit=${v}`,
        params: { limit: v },
      })),
      ...["foo", "page", "sort", "offset", "filter"].map((p) => ({
        name: `unknown parameter ${p}`,
        params: { [p]: "1" },
      })),
      ...["WARN", "fatal", "4", "warning"].flatMap((v): Bad[] => [
        { name: `level=${v}`, params: { level: v } },
        { name: `min_level=${v}`, params: { min_level: v } },
      ]),
      ...["other", "REQUEST", "apps", "all"].map((v) => ({
        name: `type=${v}`,
        params: { type: v },
      })),
      { name: "search too long", params: { search: "x".repeat(201) } },
      ...[
        "yesterday",
        "abc",
        "2024-13-45",
        "12/31/2024",
        "1700000000",
        "2024-02-30T25:00:00Z",
      ].flatMap((v): Bad[] => [
        { name: `start_date=${v}`, params: { start_date: v } },
        { name: `end_date=${v}`, params: { end_date: v } },
      ]),
      ...["xyz", "1", "'; DROP TABLE mb_logs; --"].map((v) => ({
        name: `after=${v}`,
        params: { after: v },
      })),
    ];
    await t.step("bad parameters are 400 with a message", async (t) => {
      for (const c of bad) {
        await t.step(c.name, async () => {
          const r = await getLogs(s, admin, c.params);
          assertStatus(r, 400, c.name);
          assert(r.error !== "", `${c.name}: error message`);
        });
      }
    });

    const levels: { params: Record<string, string>; want: string[] }[] = [
      {
        params: {},
        want: [
          "fxlvl error",
          "fxlvl warn",
          "fxlvl info",
          "fxlvl debug",
          "fxlvl trace",
        ],
      },
      { params: { level: "warn" }, want: ["fxlvl warn"] },
      { params: { level: "trace" }, want: ["fxlvl trace"] },
      { params: { min_level: "warn" }, want: ["fxlvl error", "fxlvl warn"] },
      {
        params: { min_level: "debug" },
        want: ["fxlvl error", "fxlvl warn", "fxlvl info", "fxlvl debug"],
      },
      {
        params: { min_level: "trace" },
        want: [
          "fxlvl error",
          "fxlvl warn",
          "fxlvl info",
          "fxlvl debug",
          "fxlvl trace",
        ],
      },
      { params: { min_level: "error" }, want: ["fxlvl error"] },
      // level and min_level combine.
      { params: { level: "info", min_level: "warn" }, want: [] },
    ];
    await t.step("level and min_level (fxlvl, newest first)", async (t) => {
      for (const c of levels) {
        const name = JSON.stringify(c.params);
        await t.step(name, async () => {
          assertEquals(
            await query({ search: "fxlvl", ...c.params }),
            c.want,
            name,
          );
        });
      }
    });

    await t.step("level and min_level over all entries", async () => {
      let items = page(
        await getLogs(s, admin, { level: "warn", limit: "1000" }),
        "all warn",
      );
      assert(items.length >= 42, `warn entries: ${items.length}`);
      assert(items.every((e) => e.level === "warn"), "only warn");
      assert(
        items.some((e) =>
          e.type === "request" && e.path === "/api/v1/entities/nothing_here"
        ),
        "the real 404 is a warn entry",
      );
      items = page(
        await getLogs(s, admin, { min_level: "warn", limit: "1000" }),
        "warn+",
      );
      assert(
        items.every((e) => e.level === "warn" || e.level === "error"),
        "only warn and error",
      );
      assert(items.some((e) => e.level === "error"), "error included");
    });

    await t.step("type", async () => {
      let items = page(
        await getLogs(s, admin, { type: "request", limit: "1000" }),
        "request",
      );
      assert(items.length >= 5, `request entries: ${items.length}`);
      assert(items.every((e) => e.type === "request"), "only request");
      assert(
        items.some((e) => e.path === "/api/v1/health" && e.status === 200),
        "a health request",
      );
      items = page(
        await getLogs(s, admin, { type: "app", limit: "1000" }),
        "app",
      );
      assert(items.length >= 135, `app entries: ${items.length}`);
      assert(items.every((e) => e.type === "app"), "only app");
      assertEquals(
        await query({ type: "request", search: "fxlvl" }),
        [],
        "no request entry among fxlvl",
      );
    });

    const searches: { name: string; search: string; want: string[] }[] = [
      { name: "% is literal", search: "fxs 100%", want: ["fxs 100% done"] },
      { name: "_ is literal", search: "fxs a_b", want: ["fxs a_b"] },
      { name: "\\ is literal", search: "k\\s", want: ["fxs back\\slash"] },
      {
        name: "lower query, mixed entry",
        search: "fxs mixed case",
        want: ["FXS MiXeD CaSe"],
      },
      {
        name: "upper query",
        search: "FXS MIXED CASE",
        want: ["FXS MiXeD CaSe"],
      },
      { name: "path matched", search: "fxonlyinpath", want: ["unrelated"] },
      { name: "no match", search: "no such text qq", want: [] },
    ];
    await t.step("search: case-insensitive, % _ \\ literal", async (t) => {
      for (const c of searches) {
        await t.step(c.name, async () => {
          assertEquals(
            await query({ search: c.search, limit: "1000" }),
            c.want,
            c.name,
          );
        });
      }
    });

    await t.step("search: % and _ alone, every fxs entry", async () => {
      const pct = await query({ search: "%", limit: "1000" });
      assert(pct.includes("fxs 100% done"), "% finds the % entry");
      assert(pct.every((m) => m.includes("%")), `only % entries: ${pct}`);
      const us = page(
        await getLogs(s, admin, { search: "_", limit: "1000" }),
        "_",
      );
      assert(
        us.every((e) =>
          e.message.includes("_") || (e.path ?? "").includes("_")
        ),
        "only entries with _",
      );
      assert(us.some((e) => e.message === "fxs a_b"), "_ finds a_b");
      assert(!us.some((e) => e.message === "fxs axb"), "_ is no wildcard");
      assertEquals(
        (await query({ search: "fxs", limit: "1000" })).length,
        7,
        "seven fxs entries (search on the message)",
      );
    });

    const iso = (ms: number) => new Date(now + ms).toISOString();
    const dateOnly = iso(-2 * DAY).slice(0, 10);
    const dates: {
      name: string;
      params: Record<string, string>;
      want: string[];
    }[] = [
      {
        name: "all",
        params: {},
        want: ["fxdate new", "fxdate mid", "fxdate old"],
      },
      {
        name: "start_date",
        params: { start_date: iso(-2 * DAY) },
        want: ["fxdate new", "fxdate mid"],
      },
      {
        name: "end_date",
        params: { end_date: iso(-2 * DAY) },
        want: ["fxdate old"],
      },
      {
        name: "both",
        params: { start_date: iso(-2.5 * DAY), end_date: iso(-0.5 * DAY) },
        want: ["fxdate mid"],
      },
      {
        name: "start in the future",
        params: { start_date: iso(DAY) },
        want: [],
      },
      {
        name: `date only ${dateOnly}`,
        params: { start_date: dateOnly },
        want: ["fxdate new", "fxdate mid"],
      },
      {
        name: "explicit offset",
        params: { start_date: iso(-2 * DAY).replace("Z", "+00:00") },
        want: ["fxdate new", "fxdate mid"],
      },
    ];
    await t.step("start_date / end_date", async (t) => {
      for (const c of dates) {
        await t.step(c.name, async () => {
          assertEquals(
            await query({ search: "fxdate", ...c.params }),
            c.want,
            c.name,
          );
        });
      }
    });

    await t.step("after: all pages, newest first, no gaps", async () => {
      const { items, pages } = await walk(s, admin, { search: "fxbulk" }, 7);
      assertEquals(pages, 18, "ceil(120 / 7) pages");
      assertEquals(items.length, 120, "all bulk entries");
      assertEquals(
        messages(items),
        Array.from({ length: 120 }, (_, i) => `fxbulk ${119 - i}`),
        "every entry once, newest first",
      );
      // With another filter.
      const warn = await walk(s, admin, { search: "fxbulk", level: "warn" }, 9);
      assertEquals(
        messages(warn.items),
        Array.from({ length: 40 }, (_, i) => `fxbulk ${117 - 3 * i}`),
        "filtered walk",
      );
      // Unfiltered: every entry that existed before the walk is seen once.
      const before = page(
        await getLogs(s, admin, { limit: "1000" }),
        "snapshot",
      );
      const all = await walk(s, admin, {}, 13);
      const ids = all.items.map((e) => e.id);
      assertEquals(new Set(ids).size, ids.length, "no duplicates");
      const seen = new Set(ids);
      const missing = before.filter((e) => !seen.has(e.id));
      assertEquals(missing.map((e) => e.message), [], "no gaps");
      // The oldest entry's cursor: an empty last page.
      const last = all.items[all.items.length - 1];
      const empty = await getLogs(s, admin, { after: last.id });
      assertEquals(page(empty, "after oldest").length, 0, "nothing older");
      assertEquals(empty.data.has_more, false, "no more");
    });

    await t.step("after: a cursor keeps the filters of its query", async () => {
      const first = await getLogs(s, admin, { search: "fxbulk", limit: "5" });
      const next = page(
        await getLogs(s, admin, {
          search: "fxbulk",
          limit: "5",
          after: first.data.cursor,
        }),
        "page 2",
      );
      assertEquals(
        messages(next),
        ["fxbulk 114", "fxbulk 113", "fxbulk 112", "fxbulk 111", "fxbulk 110"],
        "second page",
      );
    });
  } finally {
    await s.close();
  }
});
