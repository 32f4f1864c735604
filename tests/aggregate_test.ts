/**
 * `GET /api/v1/entities/<entity>/aggregate` on both databases: groups by
 * fields and date buckets (UTC midnight, week and year edges) with count,
 * sum, avg, min and max; every caller's answer equals the one computed
 * from what that caller lists (a row the list rule hides is never counted,
 * summed or its value shown); the 400s (unknown, hidden or mistyped
 * fields, a rule or filter checked row by row, more than 1000 groups, a
 * sum past 2^53); `search` answers as the list does.
 *
 * Steps share one server and the orders fixture (they only read it),
 * except the group-limit and sum steps, which add entities of their own.
 *
 * @module
 */

import { assertEquals, forEachDb, type Reply, startServer } from "./_server.ts";
import { eq, status } from "./_checks.ts";
import { allRules, createEntity, createRecord } from "./_scenarios.ts";
import {
  type Ask,
  askQuery,
  listAll,
  reference,
  setupOrders,
} from "./_aggregate_fixtures.ts";
import { insertSeries } from "./_server.ts";

const path = (q: string, entity = "orders") =>
  `/api/v1/entities/${entity}/aggregate?${q}`;

/** Asks checked against the reference, for every caller. */
const ASKS: Ask[] = [
  { count: true },
  { count: true, sum: ["qty", "price"], avg: ["qty", "price"] },
  { group: ["status"], count: true },
  { group: ["paid"], count: true, sum: ["qty"] },
  { group: ["owner"], count: true, max: ["price"] },
  { group: ["status", "paid"], count: true, avg: ["price"] },
  { group: ["qty"], count: true },
  { group: ["price"], count: true },
  { group: ["placed"], count: true },
  { group: ["placed:day"], count: true, min: ["qty"] },
  { group: ["placed:week"], count: true, sum: ["qty"] },
  { group: ["placed:month"], count: true },
  { group: ["placed:year"], count: true, min: ["placed"], max: ["placed"] },
  { group: ["status"], min: ["qty", "price", "placed"], max: ["qty"] },
  { group: ["note"], count: true },
];

/** The week, day, month and year keys of the seeded edges, by hand. */
const EDGES: [string, unknown][] = [
  [
    "group=placed:week&count=true",
    [
      [null, 1],
      ["-0001-12-27", 1], // 0000-01-01 is a Saturday
      ["1969-12-29", 1],
      ["2020-12-28", 1], // Sunday 2021-01-03 ends ISO week 2020-W53
      ["2026-11-23", 2], // Sunday 23:59:59.999 and 01:00+02:00 (Sunday UTC)
      ["2026-11-30", 1], // Monday 00:00:00.000
      ["2026-12-28", 2], // 2026-12-31 and 2027-01-01
      ["9999-12-27", 1],
    ],
  ],
  [
    "group=placed:day&count=true",
    [
      [null, 1],
      ["0000-01-01", 1],
      ["1969-12-31", 1],
      ["2021-01-03", 1],
      ["2026-11-29", 2],
      ["2026-11-30", 1],
      ["2026-12-31", 1],
      ["2027-01-01", 1],
      ["9999-12-31", 1],
    ],
  ],
  [
    "group=placed:month&count=true",
    [
      [null, 1],
      ["0000-01", 1],
      ["1969-12", 1],
      ["2021-01", 1],
      ["2026-11", 3],
      ["2026-12", 1],
      ["2027-01", 1],
      ["9999-12", 1],
    ],
  ],
  [
    "group=placed:year&count=true",
    [
      [null, 1],
      ["0000", 1],
      ["1969", 1],
      ["2021", 1],
      ["2026", 4],
      ["2027", 1],
      ["9999", 1],
    ],
  ],
];

/** Refused asks: [what, query, who, status, error pattern]. */
const REFUSED: [string, string, "admin" | "alice", number, RegExp][] = [
  ["nothing asked", "group=status", "admin", 400, /ask for count=true/],
  [
    "an unknown parameter",
    "count=true&limit=5",
    "admin",
    400,
    /unknown parameter "limit"/,
  ],
  [
    "a parameter twice",
    "count=true&group=status&group=paid",
    "admin",
    400,
    /"group" given twice/,
  ],
  ["count not a flag", "count=yes", "admin", 400, /count must be true/],
  [
    "an unknown field",
    "count=true&group=nope",
    "admin",
    400,
    /"nope" in group/,
  ],
  ["a field twice", "count=true&group=paid,paid", "admin", 400, /twice/],
  [
    "four group terms",
    "count=true&group=status,paid,qty,price",
    "admin",
    400,
    /at most 3/,
  ],
  [
    "grouping by text",
    "count=true&group=body",
    "admin",
    400,
    /cannot group by body: a text field/,
  ],
  ["grouping by json", "count=true&group=meta", "admin", 400, /json field/],
  [
    "a bucket on a number",
    "count=true&group=qty:day",
    "admin",
    400,
    /only date fields take a bucket/,
  ],
  [
    "an unknown bucket",
    "count=true&group=created:hour",
    "admin",
    400,
    /created:day, created:week, created:month or created:year/,
  ],
  [
    "sum of a string",
    "sum=note",
    "admin",
    400,
    /sum of note: .*int and double/,
  ],
  ["avg of a date", "avg=placed", "admin", 400, /avg of placed/],
  ["sum of a bool", "sum=paid", "admin", 400, /sum of paid/],
  ["min of a string", "min=status", "admin", 400, /min of status/],
  ["max of a relation", "max=owner", "admin", 400, /max of owner/],
  [
    "a filter that does not parse",
    "count=true&filter=qty%20%3D%3D",
    "admin",
    400,
    /Cannot parse filter/,
  ],
  [
    "a filter on an unknown field",
    "count=true&filter=nope%20%3D%3D%201",
    "alice",
    400,
    /unknown name "nope"/,
  ],
];

function groupsOf(r: Reply): [unknown, number][] {
  return r.data.groups.map((
    g: { key: Record<string, unknown>; count: number },
  ) => [Object.values(g.key)[0], g.count]);
}

forEachDb("aggregate: groups, figures and rules", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await setupOrders(s);
    const admin = await s.adminToken();
    const callers = [
      ["admin", admin],
      ["alice", w.alice.token],
      ["bob", w.bob.token],
    ] as const;

    await t.step("each caller's answer is the one its list gives", async () => {
      for (const [who, token] of callers) {
        const mine = await listAll(s, "orders", token);
        for (const ask of ASKS) {
          const r = await s.request("GET", path(askQuery(ask)), { token });
          status(r, 200, `${who} ${askQuery(ask)}`);
          assertEquals(r.data, reference(mine, ask), `${who} ${askQuery(ask)}`);
        }
      }
    });

    await t.step(
      "with a filter, the rows are the filtered list's",
      async () => {
        for (const filter of ["qty > 1", 'status == "paid" || price < 1']) {
          for (const [who, token] of callers) {
            const mine = await listAll(s, "orders", token, filter);
            const ask: Ask = { group: ["status"], count: true, sum: ["qty"] };
            const r = await s.request(
              "GET",
              path(askQuery(ask, { filter })),
              { token },
            );
            status(r, 200, `${who} ${filter}`);
            assertEquals(r.data, reference(mine, ask), `${who} ${filter}`);
          }
        }
      },
    );

    await t.step(
      "date buckets: UTC days, ISO weeks, months, years",
      async () => {
        for (const [q, expected] of EDGES) {
          const r = await s.request("GET", path(q), { token: admin });
          status(r, 200, q);
          eq(groupsOf(r), expected, q);
        }
      },
    );

    await t.step("a hidden row is never counted, summed or shown", async () => {
      // Bob's own orders hold no 999.5, no qty 100: the maxima are his.
      const r = await s.request(
        "GET",
        path("count=true&sum=qty&max=price,qty,placed&min=placed"),
        { token: w.bob.token },
      );
      status(r, 200, "bob's totals");
      eq(r.data.groups, [{
        key: {},
        count: 3,
        sum: { qty: 15 },
        min: { placed: "1969-12-31T23:59:59.999Z" },
        max: {
          price: 3.75,
          qty: 10,
          placed: "2026-11-29T23:00:00.000Z",
        },
      }], "bob's totals");
      // A filter naming another's values finds nothing of theirs.
      const probe = await s.request(
        "GET",
        path(`count=true&filter=${encodeURIComponent("price == 999.5")}`),
        { token: w.bob.token },
      );
      status(probe, 200, "probe");
      eq(probe.data.groups, [{ key: {}, count: 0 }], "probe counts nothing");
      // A guest is refused as the list refuses it.
      const guest = await s.request("GET", path("count=true"));
      const list = await s.request("GET", "/api/v1/entities/orders");
      eq([guest.status, guest.error], [list.status, list.error], "guest");
    });

    await t.step(
      "totals of no rows: count 0, sum 0, no avg, min or max",
      async () => {
        const r = await s.request(
          "GET",
          path(
            `count=true&sum=qty&avg=qty&min=qty&max=placed&filter=${
              encodeURIComponent("qty > 1000")
            }`,
          ),
          { token: admin },
        );
        status(r, 200, "empty");
        eq(r.data.groups, [{
          key: {},
          count: 0,
          sum: { qty: 0 },
          avg: { qty: null },
          min: { qty: null },
          max: { placed: null },
        }], "totals of nothing");
        const grouped = await s.request(
          "GET",
          path(
            `group=status&count=true&filter=${
              encodeURIComponent("qty > 1000")
            }`,
          ),
          { token: admin },
        );
        eq(grouped.data.groups, [], "no groups");
      },
    );

    await t.step("the refusals", async () => {
      for (const [what, q, who, code, error] of REFUSED) {
        const r = await s.request("GET", path(q), {
          token: who === "admin" ? admin : w.alice.token,
        });
        status(r, code, what);
        if (!error.test(r.error)) {
          throw new Error(`${what}: error ${JSON.stringify(r.error)}`);
        }
      }
    });

    await t.step("password is no field here, even for admins", async () => {
      const people = "users";
      for (
        const q of [
          "count=true&group=password",
          "min=password",
          "max=password",
          "sum=password",
          `count=true&filter=${encodeURIComponent('password != ""')}`,
        ]
      ) {
        const r = await s.request("GET", path(q, people), { token: admin });
        status(r, 400, q);
        if (!/password/.test(r.error) || r.text.includes("scrypt")) {
          throw new Error(`${q}: ${r.text}`);
        }
      }
      // The same 400 as a field that does not exist.
      const none = await s.request("GET", path("min=nothing", people), {
        token: admin,
      });
      eq(
        none.error.replace("nothing", "password"),
        (await s.request("GET", path("min=password", people), {
          token: admin,
        })).error,
        "password reads as unknown",
      );
    });

    await t.step(
      "a per-row rule or filter: 400, whatever the data",
      async () => {
        await createEntity(s, {
          name: "notes",
          fields: [{ name: "owner", type: "string" }],
          rules: {
            ...allRules(""),
            list: { mode: "custom", expr: '(record.owner + "") == auth.id' },
          },
        });
        const r = await s.request("GET", path("count=true", "notes"), {
          token: w.alice.token,
        });
        status(r, 400, "per-row rule");
        eq(
          r.error,
          "Cannot aggregate records: the rule or filter is checked row by row (not compiled to SQL), and aggregates run in SQL only; use a filter that compiles to SQL, or a list rule that does",
          "per-row rule",
        );
        // A filter the SQL compiler does not take, under a rule it does.
        const f = await s.request(
          "GET",
          path(`count=true&filter=${encodeURIComponent('(qty + "") == "2"')}`),
          { token: w.alice.token },
        );
        status(f, 400, "per-row filter");
      },
    );

    await t.step("views are refused, with what to do", async () => {
      await createEntity(s, {
        name: "order_view",
        type: "view",
        view_query: "SELECT id, status FROM orders",
        rules: allRules("public"),
      });
      const r = await s.request("GET", path("count=true", "order_view"));
      status(r, 400, "view");
      eq(
        r.error,
        "Cannot aggregate records: order_view is a view; aggregate its source entity, or group in the view's query",
        "view",
      );
    });

    await t.step("search answers as the list does", async () => {
      // Until the list takes `search`, both refuse it with the list's 400;
      // once it does, the aggregate counts what the list finds.
      const list = await s.request(
        "GET",
        "/api/v1/entities/orders?search=paid&count=true",
        { token: admin },
      );
      const agg = await s.request("GET", path("search=paid&count=true"), {
        token: admin,
      });
      if (list.status === 200) {
        status(agg, 200, "search");
        eq(agg.data.groups[0].count, list.data.total, "search counts");
      } else eq([agg.status, agg.error], [list.status, list.error], "search");
    });

    await t.step(
      "the entity must have an API; other methods: 405",
      async () => {
        const r = await s.request("GET", path("count=true", "nothing_here"), {
          token: admin,
        });
        status(r, 404, "no entity");
        // Without an API, a system entity, admins only: the list's answers.
        await createEntity(s, {
          name: "hidden_api",
          has_api: false,
          fields: [{ name: "n", type: "int" }],
          rules: allRules("public"),
        });
        await createEntity(s, {
          name: "admins_only",
          fields: [{ name: "n", type: "int" }],
        });
        for (
          const [entity, token] of [
            ["hidden_api", admin],
            ["mb_admins", admin],
            ["admins_only", w.bob.token],
            ["admins_only", undefined],
          ] as const
        ) {
          const agg = await s.request("GET", path("count=true", entity), {
            token,
          });
          const list = await s.request("GET", `/api/v1/entities/${entity}`, {
            token,
          });
          eq(
            [agg.status, agg.error.replace(/aggregate|list/, "…")],
            [list.status, list.error.replace(/aggregate|list/, "…")],
            `${entity} as ${token ? "a caller" : "a guest"}`,
          );
          if (![401, 403, 404].includes(agg.status)) {
            throw new Error(`${entity}: ${agg.status}`);
          }
        }
        const patch = await s.request("PATCH", path("count=true"), {
          token: admin,
          body: {},
        });
        status(patch, 405, "PATCH");
      },
    );

    await t.step("at most 1000 groups", async () => {
      await createEntity(s, {
        name: "tags",
        fields: [{ name: "label", type: "string" }],
        rules: allRules("public"),
      });
      await insertSeries(s, "tags", 1000, {
        id: { sqlite: "'t' || i", postgres: "'t' || i" },
        label: { sqlite: "'l' || i", postgres: "'l' || i" },
      });
      const ok = await s.request("GET", path("group=label&count=true", "tags"));
      status(ok, 200, "1000 groups");
      eq(ok.data.groups.length, 1000, "1000 groups");
      await createRecord(s, "tags", { label: "one more" });
      const r = await s.request("GET", path("group=label&count=true", "tags"));
      status(r, 400, "1001 groups");
      eq(
        r.error,
        "Cannot aggregate records: more than 1000 groups; group by fewer fields or a coarser bucket (created:month rather than created:day), or narrow the rows with filter",
        "1001 groups",
      );
      const narrowed = await s.request(
        "GET",
        path(
          `group=label&count=true&filter=${
            encodeURIComponent('label != "one more"')
          }`,
          "tags",
        ),
      );
      status(narrowed, 200, "narrowed");
    });

    await t.step("int sums are exact; past 2^53 - 1 a 400", async () => {
      await createEntity(s, {
        name: "big",
        fields: [{ name: "n", type: "int" }, { name: "g", type: "string" }],
        rules: allRules("public"),
      });
      const max = Number.MAX_SAFE_INTEGER;
      for (
        const [n, g] of [[max, "a"], [-max, "a"], [max - 1, "b"], [1, "b"]]
      ) {
        await createRecord(s, "big", { n, g });
      }
      const ok = await s.request("GET", path("group=g&sum=n&avg=n", "big"));
      status(ok, 200, "sums");
      eq(ok.data.groups, [
        { key: { g: "a" }, sum: { n: 0 }, avg: { n: 0 } },
        { key: { g: "b" }, sum: { n: max }, avg: { n: 4503599627370000 } },
      ], "exact sums");
      const r = await s.request(
        "GET",
        path(`sum=n&filter=${encodeURIComponent("n > 0")}`, "big"),
      );
      status(r, 400, "past 2^53");
      eq(
        r.error,
        `Cannot aggregate records: the sum of n is beyond ${max}, the largest integer a JSON number holds exactly; sum fewer rows (filter), or ask for avg`,
        "past 2^53",
      );
      const avg = await s.request(
        "GET",
        path(`avg=n&filter=${encodeURIComponent("n > 0")}`, "big"),
      );
      status(avg, 200, "avg past 2^53");
    });
  } finally {
    await s.close();
  }
});
