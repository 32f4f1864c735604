/**
 * The `filter` list parameter as a language, on both databases. A filter
 * selects exactly what JavaScript would: every filter's expected result is
 * computed from the rows the admin lists (no filter), with a predicate
 * written with JavaScript semantics (the filter language is a JavaScript
 * subset, so both must agree whether the database or the per-row evaluator
 * runs it); SQL (and LIKE) metacharacters are matched literally and drop
 * nothing. Filters the server refuses get a 400 that says why: an unknown
 * field (named), a syntax error (with its position), `password` (never
 * filterable or sortable, even for admins, and no hash in the answer), a
 * filter longer than 4096 characters, a filter given twice.
 *
 * @module
 */

import { forEachDb, startServer } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import {
  checkFilters,
  enc,
  ge,
  type ItemWorld,
  listFiltered,
  loose,
  lt,
  type Pred,
  setupItems,
} from "./_rules_fixtures.ts";

// Casts only satisfy the type checker: the comparisons run with JavaScript
// semantics on the JSON values (null included).
const num = (v: unknown) => v as number;
const str = (v: unknown) => v as string;

/** Comparisons, logic, string methods, null, booleans, dates, the caller. */
function basics(w: ItemWorld): [string, Pred][] {
  const { all } = w;
  return [
    ['title == "apple 0"', (r) => r.title === "apple 0"],
    ["n == 3", (r) => r.n === 3],
    ['n == "3"', (r) => num(r.n) === 3],
    ["n === 3", (r) => r.n === 3],
    ["n != 3", (r) => r.n !== 3],
    ["n !== 3", (r) => r.n !== 3],
    ["n >= 3 && n < 7", (r) => num(r.n) >= 3 && num(r.n) < 7],
    ["n > 8", (r) => num(r.n) > 8],
    ["n <= 0", (r) => num(r.n) <= 0],
    ["price > 1.5", (r) => num(r.price) > 1.5],
    [
      "price >= 2.5 && price <= 20",
      (r) => num(r.price) >= 2.5 && num(r.price) <= 20,
    ],
    ["-price < -10", (r) => -num(r.price) < -10],
    ["n == 3 || n == 5", (r) => r.n === 3 || r.n === 5],
    ["!(n > 3)", (r) => !(num(r.n) > 3)],
    [
      '!(n > 3) || title == "fig 5"',
      (r) => !(num(r.n) > 3) || r.title === "fig 5",
    ],
    [
      "n > 2 && (price < 5 || active)",
      (r) => num(r.n) > 2 && (num(r.price) < 5 || r.active === true),
    ],
    ['title.startsWith("ap")', (r) => r.title.startsWith("ap")],
    ['title.includes("an")', (r) => r.title.includes("an")],
    ['title.endsWith("e 0")', (r) => r.title.endsWith("e 0")],
    ['!title.includes("a")', (r) => !r.title.includes("a")],
    ['title.startsWith("")', () => true],
    ['title.startsWith("APPLE")', () => false],
    ["note == null", (r) => r.note === null],
    ["note != null", (r) => r.note !== null],
    ["note === null", (r) => r.note === null],
    ["note == undefined", (r) => r.note === null],
    ['note == ""', (r) => r.note === ""],
    ["note", (r) => !!r.note],
    ["!note", (r) => !r.note],
    ["n == null", (r) => r.n === null],
    ["price != null && price == 0", (r) => r.price === 0],
    ["active == true", (r) => r.active === true],
    ["active === false", (r) => r.active === false],
    ["active", (r) => r.active === true],
    ["!active", (r) => r.active !== true],
    ["active == null", (r) => r.active === null],
    [
      'due > "2024-06-01T00:00:00.000Z"',
      (r) => str(r.due) > "2024-06-01T00:00:00.000Z",
    ],
    [
      'due >= "2024-06-01T00:00:00.000Z" && due < "2025-01-01"',
      (r) =>
        str(r.due) >= "2024-06-01T00:00:00.000Z" && str(r.due) < "2025-01-01",
    ],
    // JavaScript compares these as strings: "2024-06-01T…" > "2024-06-01".
    ['due > "2024-06-01"', (r) => str(r.due) > "2024-06-01"],
    [
      'due == "2024-01-15T10:00:00.000Z"',
      (r) => r.due === "2024-01-15T10:00:00.000Z",
    ],
    ["due == null", (r) => r.due === null],
    [
      'due.startsWith("2024-06")',
      (r) => typeof r.due === "string" && r.due.startsWith("2024-06"),
    ],
    ["owner == auth.id", (r, a) => r.owner === a],
    [
      "owner == auth.id && n != null",
      (r, a) => r.owner === a && r.n !== null,
    ],
    [`id == "${all[3].id}"`, (r) => r.id === all[3].id],
    [`created >= "${all[10].created}"`, (r) => r.created >= all[10].created],
    ["title.length > 8", (r) => r.title.length > 8],
    ["n * 2 > 10", (r) => num(r.n) * 2 > 10],
    ["n + 1 == 4", (r) => num(r.n) + 1 === 4],
  ];
}

/** SQL and LIKE metacharacters, quotes and backslashes: matched literally. */
const LITERALS: [string, Pred][] = [
  [
    'title == "\'; DROP TABLE items; --"',
    (r) => r.title === "'; DROP TABLE items; --",
  ],
  [
    "title == '\"; DROP TABLE items; --'",
    (r) => r.title === '"; DROP TABLE items; --',
  ],
  ['title.includes("%")', (r) => r.title.includes("%")],
  ['title.endsWith("%")', (r) => r.title.endsWith("%")],
  ['title.startsWith("100%")', (r) => r.title.startsWith("100%")],
  ['title.includes("_")', (r) => r.title.includes("_")],
  ['title.startsWith("a_")', (r) => r.title.startsWith("a_")],
  ['title == "a_b"', (r) => r.title === "a_b"],
  ['title.includes("\\\\")', (r) => r.title.includes("\\")],
  ['title.includes("\\\\\\\\")', (r) => r.title.includes("\\\\")],
  ['title.endsWith("\\\\slash")', (r) => r.title.endsWith("\\slash")],
  ['title.includes("\'")', (r) => r.title.includes("'")],
  ['title.includes("[a")', (r) => r.title.includes("[a")],
  ['title.includes("*")', (r) => r.title.includes("*")],
  [
    'title.includes("%") && title.length > 1',
    (r) => r.title.includes("%") && r.title.length > 1,
  ],
];

/** JavaScript conversions between strings, numbers, booleans and null. */
const CONVERSIONS: [string, Pred][] = [
  ["title == 5", (r) => loose(r.title, 5)],
  ["title == 10", (r) => loose(r.title, 10)],
  ["title != 5", (r) => !loose(r.title, 5)],
  ["title < 6", (r) => lt(r.title, 6)],
  ["title >= 10", (r) => ge(r.title, 10)],
  ['title > "a"', (r) => lt("a", r.title)],
  ["title == true", (r) => loose(r.title, true)],
  ["title == null", (r) => r.title === null],
  ['n == "abc"', (r) => loose(r.n, "abc")],
  ['n < "x"', (r) => lt(r.n, "x")],
  ['n == "3.0"', (r) => loose(r.n, "3.0")],
  ['n == " 3 "', (r) => loose(r.n, " 3 ")],
  ['n == "0x3"', (r) => loose(r.n, "0x3")],
  ['n == ""', (r) => loose(r.n, "")],
  ['n === "3"', () => false],
  ["n == true", (r) => loose(r.n, true)],
  ["n == false", (r) => loose(r.n, false)],
  ["n > null", (r) => lt(null, r.n)],
  ["n >= null", (r) => ge(r.n, null)],
  ["!n", (r) => !r.n],
  ["active == 1", (r) => loose(r.active, 1)],
  ['active == "1"', (r) => loose(r.active, "1")],
  ["active == 0", (r) => loose(r.active, 0)],
  ['active == "true"', (r) => loose(r.active, "true")],
  ["active < 1", (r) => lt(r.active, 1)],
  ['price == "2.5"', (r) => loose(r.price, "2.5")],
  ["price < n", (r) => lt(r.price, r.n)],
  ["n == price", (r) => loose(r.n, r.price)],
  ["title == note", (r) => loose(r.title, r.note)],
  ["title != note", (r) => !loose(r.title, r.note)],
  ["due == 0", (r) => loose(r.due, 0)],
  ['n + "" == "3"', (r) => loose(`${r.n}`, "3")],
  ["n - 1 < 0", (r) => lt(num(r.n) - 1, 0)],
];

/** One refused list request. */
interface Case {
  name: string;
  method: "GET";
  path: string;
  token: "admin" | "bob" | "none";
  status: number;
  /** What the error message must contain (or match). */
  error?: string | RegExp;
  /** What the whole response must not contain. */
  notContains?: string;
}

const filterPath = (entity: string, filter: string) =>
  `/api/v1/entities/${entity}?limit=500&count=true&filter=${enc(filter)}`;

const unknownField: Case[] = [
  ["nope == 1", "nope"],
  ['title == "x" && missing_field > 2', "missing_field"],
  ["record.title == 1", "record"],
  ["req.body.x == 1", "req"],
  ["constructor == 1", "constructor"],
  ["__proto__ == 1", "__proto__"],
].map(([filter, field]) => ({
  name: `unknown field: ${filter}`,
  method: "GET",
  path: filterPath("items", filter),
  token: "admin",
  status: 400,
  error: field,
}));

const syntax: Case[] = ([
  ['title = "x"', 6],
  ["n == ", 5],
  ["(n == 1", 7],
  ["n == 1)", 6],
  ["n == 1 ; n == 2", 7],
  ["title.foo()", 6],
  ["n == `1`", 5],
  ["n ==== 1", 5],
] as const).map(([filter, pos]) => ({
  name: `syntax error at ${pos}: ${filter}`,
  method: "GET",
  path: filterPath("items", filter),
  token: "admin",
  status: 400,
  error: new RegExp(`\\bat ${pos}\\b`),
}));

const password: Case[] = [
  ...[
    'password == "x"',
    'password != ""',
    'password.startsWith("scrypt")',
    "password",
    'email != "" && password.length > 10',
  ].map((filter): Case => ({
    name: `admin filters people by ${filter}`,
    method: "GET",
    path: filterPath("people", filter),
    token: "admin",
    status: 400,
    error: "password",
    notContains: "scrypt$",
  })),
  {
    name: "sort by password",
    method: "GET",
    path: "/api/v1/entities/people?sort=password",
    token: "admin",
    status: 400,
  },
];

const base = "n == 3";
const other: Case[] = [
  {
    name: "4097-character filter",
    method: "GET",
    path: filterPath("items", base + " ".repeat(4097 - base.length)),
    token: "bob",
    status: 400,
  },
  {
    name: "20000-character filter",
    method: "GET",
    path: filterPath("items", `title == "${"x".repeat(20000)}"`),
    token: "bob",
    status: 400,
  },
  {
    name: "filter given twice",
    method: "GET",
    path: `/api/v1/entities/items?filter=${enc("n == 1")}&filter=${
      enc("n == 2")
    }`,
    token: "none",
    status: 400,
  },
];

const REFUSED: Case[] = [...unknownField, ...syntax, ...password, ...other];

// Every step only lists: they share one server and one fixture.
forEachDb("filter: expressions", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await setupItems(s);
    await t.step(
      "comparisons, logic, null, booleans, dates",
      (t) => checkFilters(t, s, w, basics(w)),
    );
    await t.step(
      "metacharacters are matched literally",
      (t) => checkFilters(t, s, w, LITERALS),
    );
    await t.step(
      "conversions follow JavaScript",
      (t) => checkFilters(t, s, w, CONVERSIONS),
    );

    await t.step("nothing was dropped by metacharacters", async () => {
      const r = await s.request(
        "GET",
        "/api/v1/entities/items?count=true&limit=1",
      );
      status(r, 200, "items still listable");
      eq(r.data.total, w.all.length, "all rows still there");
      const h = await s.request("GET", "/api/v1/health");
      status(h, 200, "health");
      const sc = await s.request("GET", "/api/v1/schemas/items", {
        token: w.admin,
      });
      status(sc, 200, "schema still there");
    });

    await t.step("refused with a reason", async (t) => {
      const tokens = { admin: w.admin, bob: w.tBob, none: undefined };
      for (const c of REFUSED) {
        await t.step(c.name, async () => {
          const r = await s.request(c.method, c.path, {
            token: tokens[c.token],
          });
          status(r, c.status, c.name);
          if (typeof c.error === "string" && !r.error.includes(c.error)) {
            fail(`${c.name}: error does not name ${c.error}: ${r.error}`);
          }
          if (c.error instanceof RegExp && !c.error.test(r.error)) {
            fail(
              `${c.name}: expected ${c.error} in ${JSON.stringify(r.error)}`,
            );
          }
          if (c.notContains && r.text.includes(c.notContains)) {
            fail(`${c.name}: the response contains ${c.notContains}`);
          }
        });
      }
    });

    await t.step(
      "people are filterable by email, never shown a hash",
      async () => {
        const ok = await listFiltered(
          s,
          "people",
          'email.endsWith("@example.com")',
          w.admin,
        );
        status(ok, 200, "admin filters people by email");
        eq(
          (ok.data as { items: { email: string }[] }).items.map((x) => x.email),
          ["alice@example.com", "bob@example.com"],
          "people by email",
        );
        if (ok.text.includes("scrypt$") || ok.text.includes('"password"')) {
          fail("password returned in a list");
        }
      },
    );
  } finally {
    await s.close();
  }
});
