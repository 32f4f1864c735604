/**
 * The `filter` list parameter on both databases. Every filter's expected
 * result is computed from the rows the admin lists (no filter), with a
 * predicate written with JavaScript semantics: the filter language is a
 * JavaScript subset, so both must agree whether the database or the per-row
 * evaluator runs it. Also: pages with sort/limit/after, filters combined with
 * list rules (never revealing hidden rows), errors (unknown field, syntax,
 * `password`, length) and SQL metacharacters matched literally.
 *
 * @module
 */

import {
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { seedUser as seedStoredUser } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";

const PASSWORD = "password-123";

interface Row {
  id: string;
  created: string;
  updated: string;
  title: string;
  n: number | null;
  price: number | null;
  active: boolean | null;
  due: string | null;
  note: string | null;
  owner: string | null;
}

interface Page {
  items: Row[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

async function seedUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
): Promise<{ id: string }> {
  return { id: (await seedStoredUser(s, entity, values, PASSWORD)).id };
}

async function tokenOf(
  s: TestServer,
  entity: string,
  id: string,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  return (await s.app.sessions.issue(e, (await e.read(id))!)).token;
}

const enc = encodeURIComponent;

/** Lists with a filter (and extra parameters). */
function list(
  s: TestServer,
  entity: string,
  filter: string,
  token?: string,
  extra = "",
): Promise<Reply> {
  return s.request(
    "GET",
    `/api/v1/entities/${entity}?limit=500&count=true&filter=${
      enc(filter)
    }${extra}`,
    { token },
  );
}

/** Walks every page of a filtered list. */
async function pages(
  s: TestServer,
  entity: string,
  params: string,
  token: string | undefined,
): Promise<Row[]> {
  const out: Row[] = [];
  let after: string | null = null;
  for (let i = 0; i < 200; i++) {
    const q: string = params + (after ? `&after=${enc(after)}` : "");
    const r = await s.request("GET", `/api/v1/entities/${entity}?${q}`, {
      token,
    });
    status(r, 200, `list ${q}`);
    const p = r.data as Page;
    eq(p.items_count, p.items.length, "items_count");
    if (p.has_more && p.items.length !== p.limit) {
      fail(`short page with has_more (${q})`);
    }
    out.push(...p.items);
    if (!p.has_more) return out;
    after = p.cursor;
  }
  return fail("more than 200 pages");
}

const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id);

// Titles with SQL (and LIKE) metacharacters, matched literally.
const NUMERIC_TITLES = ["5", "05", " 5 ", "10", "1e1", "0x5", "true", "null"];

/** JavaScript `==` (the filter language's semantics), for the oracle. */
function loose(a: unknown, b: unknown): boolean {
  // deno-lint-ignore eqeqeq
  return a == b;
}

/** JavaScript `<` on any two values, for the oracle. */
function lt(a: unknown, b: unknown): boolean {
  return (a as number) < (b as number);
}

/** JavaScript `>=` on any two values, for the oracle. */
function ge(a: unknown, b: unknown): boolean {
  return (a as number) >= (b as number);
}

const NASTY = [
  "'; DROP TABLE items; --",
  '"; DROP TABLE items; --',
  "100% sure",
  "%",
  "a_b",
  "_",
  "axb",
  "back\\slash",
  "back\\\\double",
  "it's",
  "[abc]",
  "*star*",
];

forEachDb("filter parameter", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const admin = await s.adminToken();
    const mk = async (body: Record<string, unknown>) => {
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body,
      });
      status(r, 201, `schema ${body.name}`);
    };
    await mk({
      name: "people",
      type: "auth",
      fields: [{ name: "nick", type: "string" }],
    });
    const alice = await seedUser(s, "people", {
      email: "alice@example.com",
      nick: "al",
    });
    const bob = await seedUser(s, "people", {
      email: "bob@example.com",
      nick: "bo",
    });
    const tAlice = await tokenOf(s, "people", alice.id);
    const tBob = await tokenOf(s, "people", bob.id);

    const FIELDS = [
      { name: "title", type: "string" },
      { name: "n", type: "int" },
      { name: "price", type: "double" },
      { name: "active", type: "bool" },
      { name: "due", type: "date" },
      { name: "note", type: "text" },
      { name: "owner", type: "string" },
    ];
    const pub = { mode: "public", expr: "" };
    await mk({
      name: "items",
      type: "base",
      fields: FIELDS,
      rules: { list: pub, get: pub },
    });
    const WORDS = [
      "apple",
      "banana",
      "cherry",
      "date",
      "elder",
      "fig",
      "grape",
    ];
    const DATES = [
      "2024-01-15T10:00:00.000Z",
      "2024-06-01T00:00:00.000Z",
      "2024-06-30T23:59:59.999Z",
      "2025-02-28T12:30:00.000Z",
      null,
    ];
    const bodies: Record<string, unknown>[] = [];
    for (let i = 0; i < 28; i++) {
      bodies.push({
        title: `${WORDS[i % 7]} ${i}`,
        n: i % 5 === 4 ? null : (i * 3) % 11,
        price: i % 6 === 5 ? null : Math.round(((i * 7) % 13) * 25) / 10,
        active: i % 3 === 2 ? null : i % 2 === 0,
        due: DATES[i % 5],
        note: i % 4 === 0 ? null : i % 4 === 1 ? "" : `note ${i}`,
        owner: [alice.id, bob.id, "", null][i % 4],
      });
    }
    for (const title of NASTY) bodies.push({ title, n: 100, owner: bob.id });
    // Titles that JavaScript converts to numbers when compared with one.
    for (const title of NUMERIC_TITLES) {
      bodies.push({ title, n: 0, price: 0.5, note: title });
    }
    for (const body of bodies) {
      const r = await s.request("POST", "/api/v1/entities/items", {
        token: admin,
        body,
      });
      status(r, 201, `seed ${JSON.stringify(body)}`);
    }
    const all = (await pages(s, "items", "limit=500", admin)) as Row[];
    eq(all.length, bodies.length, "seeded rows");

    type Pred = (r: Row, authId: string) => boolean;
    // Casts only satisfy the type checker: the comparisons run with
    // JavaScript semantics on the JSON values (null included).
    const num = (v: unknown) => v as number;
    const str = (v: unknown) => v as string;
    const CASES: readonly [string, Pred][] = [
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
      // JavaScript conversions between strings, numbers, booleans and null.
      ["title == 5", (r) => loose(r.title, 5)],
      ["title == 10", (r) => loose(r.title, 10)],
      ["title != 5", (r) => !loose(r.title, 5)],
      ["title < 6", (r) => lt(r.title, 6)],
      [
        "title >= 10",
        (r) => ge(r.title, 10),
      ],
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

    await t.step("filters select exactly what JavaScript would", async () => {
      const problems: string[] = [];
      for (const [filter, pred] of CASES) {
        for (
          const [who, token, authId] of [
            ["alice", tAlice, alice.id],
            ["bob", tBob, bob.id],
            ["guest", undefined, ""],
          ] as const
        ) {
          if (who !== "alice" && !filter.includes("auth.")) continue;
          const r = await list(s, "items", filter, token);
          if (r.status !== 200) {
            problems.push(
              `${filter} (${who}): ${r.status} ${r.text.slice(0, 200)}`,
            );
            continue;
          }
          const p = r.data as Page;
          const expected = all.filter((x) => pred(x, authId));
          if (JSON.stringify(p.items) !== JSON.stringify(expected)) {
            problems.push(
              `${filter} (${who}): expected ${
                JSON.stringify(expected.map((x) => x.title))
              }, got ${JSON.stringify(p.items.map((x) => x.title))}`,
            );
          } else if (p.total !== expected.length) {
            problems.push(
              `${filter} (${who}): total ${p.total} != ${expected.length}`,
            );
          }
        }
      }
      if (problems.length) {
        fail(`${problems.length} filter(s) wrong:\n  ${problems.join("\n  ")}`);
      }
    });

    await t.step("nothing was dropped by metacharacters", async () => {
      const r = await s.request(
        "GET",
        "/api/v1/entities/items?count=true&limit=1",
      );
      status(r, 200, "items still listable");
      eq(r.data.total, bodies.length, "all rows still there");
      const h = await s.request("GET", "/api/v1/health");
      status(h, 200, "health");
      const sc = await s.request("GET", "/api/v1/schemas/items", {
        token: admin,
      });
      status(sc, 200, "schema still there");
    });

    await t.step("filter with sort, limit and after: exact pages", async () => {
      const cases: [string, string, (a: Row, b: Row) => number, Pred][] = [
        [
          "n >= 2",
          "-price",
          (a, b) => cmpNullsFirst(b.price, a.price) || cmpId(a, b),
          (r) => num(r.n) >= 2,
        ],
        [
          'title.includes("a") && active != null',
          "n,-title",
          (a, b) =>
            cmpNullsFirst(a.n, b.n) || -cmpNullsFirst(a.title, b.title) ||
            cmpId(a, b),
          (r) => r.title.includes("a") && r.active !== null,
        ],
        [
          'note != "x"',
          "-note,-due",
          (a, b) =>
            cmpNullsFirst(b.note, a.note) || cmpNullsFirst(b.due, a.due) ||
            cmpId(a, b),
          (r) => r.note !== "x",
        ],
        [
          "title.length > 5",
          "-due",
          (a, b) => cmpNullsFirst(b.due, a.due) || cmpId(a, b),
          (r) => r.title.length > 5,
        ],
        [
          "title.length > 7",
          "due",
          (a, b) => cmpNullsFirst(a.due, b.due) || cmpId(a, b),
          (r) => r.title.length > 7,
        ],
      ];
      for (const [filter, sort, order, pred] of cases) {
        const expected = all.filter((x) => pred(x, "")).sort(order);
        for (const limit of [1, 3, 5]) {
          const got = await pages(
            s,
            "items",
            `filter=${enc(filter)}&sort=${sort}&limit=${limit}`,
            tBob,
          );
          if (new Set(ids(got)).size !== got.length) {
            fail(`${filter} sort=${sort} limit=${limit}: duplicates`);
          }
          eq(
            got.map((x) => x.title),
            expected.map((x) => x.title),
            `${filter} sort=${sort} limit=${limit}`,
          );
        }
        const one = await s.request(
          "GET",
          `/api/v1/entities/items?filter=${
            enc(filter)
          }&sort=${sort}&limit=2&count=true`,
        );
        status(one, 200, "first page");
        eq(one.data.total, expected.length, `${filter}: total on a page`);
        eq(one.data.items_count, Math.min(2, expected.length), "items_count");
      }
    });

    await t.step(
      "a filter never reveals rows the list rule hides",
      async () => {
        for (
          const [name, rule] of [
            ["vault", "record.owner == auth.id"],
            ["vault_js", "record.owner == auth.id && record.title.length > 0"],
          ]
        ) {
          const r = { mode: "custom", expr: rule };
          await mk({
            name,
            type: "base",
            fields: FIELDS,
            rules: { list: r, get: r },
          });
          const rows: Row[] = [];
          for (let i = 0; i < 20; i++) {
            const c = await s.request("POST", `/api/v1/entities/${name}`, {
              token: admin,
              body: {
                title: `v${i}`,
                n: i,
                owner: i % 3 === 0 ? alice.id : bob.id,
                active: i % 2 === 0,
              },
            });
            status(c, 201, "seed vault");
            rows.push(c.data as Row);
          }
          const mine = (pred: (r: Row) => boolean) =>
            rows.filter((x) => x.owner === alice.id && pred(x)).map((x) =>
              x.title
            );
          const checks: [string, (r: Row) => boolean][] = [
            [`owner == "${bob.id}"`, (x) => x.owner === bob.id],
            [`owner != "${alice.id}"`, (x) => x.owner !== alice.id],
            ["true", () => true],
            ["n >= 0", (x) => num(x.n) >= 0],
            ["owner != auth.id", (x) => x.owner !== alice.id],
            ['title.startsWith("v")', (x) => x.title.startsWith("v")],
            ["title.length > 2", (x) => x.title.length > 2],
            ["active || !active", () => true],
            [`owner == "${bob.id}" || n >= 0`, () => true],
          ];
          for (const [filter, pred] of checks) {
            const l = await list(s, name, filter, tAlice);
            status(l, 200, `${name} ${filter}`);
            eq(
              (l.data as Page).items.map((x) => x.title),
              mine(pred),
              `${name} ${filter}`,
            );
            eq(
              (l.data as Page).total,
              mine(pred).length,
              `${name} ${filter} total`,
            );
            const paged = await pages(
              s,
              name,
              `filter=${enc(filter)}&limit=2`,
              tAlice,
            );
            eq(
              paged.map((x) => x.title),
              mine(pred),
              `${name} ${filter} paged`,
            );
          }
          // A guest sees no row whatever the filter.
          const g = await list(
            s,
            name,
            `owner == "${alice.id}" || owner != ""`,
          );
          status(g, 200, "guest vault");
          eq(
            [(g.data as Page).items, (g.data as Page).total],
            [[], 0],
            "guest vault",
          );
          // Unknown fields are still reported (before anything is listed).
          const u = await list(s, name, "secret_field == 1", tAlice);
          status(u, 400, "unknown field in vault");
        }
      },
    );

    await t.step("unknown field → 400 naming it", async () => {
      for (
        const [filter, name] of [
          ["nope == 1", "nope"],
          ['title == "x" && missing_field > 2', "missing_field"],
          ["record.title == 1", "record"],
          ["req.body.x == 1", "req"],
          ["constructor == 1", "constructor"],
          ["__proto__ == 1", "__proto__"],
        ]
      ) {
        const r = await list(s, "items", filter, admin);
        status(r, 400, filter);
        if (!r.error.includes(name)) {
          fail(`${filter}: error does not name ${name}: ${r.error}`);
        }
      }
    });

    await t.step("syntax error → 400 with the position", async () => {
      for (
        const [filter, pos] of [
          ['title = "x"', 6],
          ["n == ", 5],
          ["(n == 1", 7],
          ["n == 1)", 6],
          ["n == 1 ; n == 2", 7],
          ["title.foo()", 6],
          ["n == `1`", 5],
          ["n ==== 1", 5],
        ] as const
      ) {
        const r = await list(s, "items", filter, admin);
        status(r, 400, filter);
        if (!new RegExp(`\\bat ${pos}\\b`).test(r.error)) {
          fail(
            `${filter}: expected position ${pos} in ${JSON.stringify(r.error)}`,
          );
        }
      }
    });

    await t.step("password is never filterable, even for admins", async () => {
      for (
        const filter of [
          'password == "x"',
          'password != ""',
          'password.startsWith("scrypt")',
          "password",
          'email != "" && password.length > 10',
        ]
      ) {
        const r = await list(s, "people", filter, admin);
        status(r, 400, `admin filters people by ${filter}`);
        if (!r.error.includes("password")) {
          fail(`${filter}: error does not name password: ${r.error}`);
        }
        if (r.text.includes("scrypt$")) fail("a hash leaked");
      }
      const ok = await list(
        s,
        "people",
        'email.endsWith("@example.com")',
        admin,
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
      const srt = await s.request(
        "GET",
        "/api/v1/entities/people?sort=password",
        {
          token: admin,
        },
      );
      status(srt, 400, "sort by password");
    });

    await t.step("filter length limit: 4096 ok, 4097 → 400", async () => {
      const base = "n == 3";
      const ok = await list(
        s,
        "items",
        base + " ".repeat(4096 - base.length),
        tBob,
      );
      status(ok, 200, "4096-character filter");
      eq(
        (ok.data as Page).items.map((x) => x.title),
        all.filter((x) => x.n === 3).map((x) => x.title),
        "4096-character filter result",
      );
      const long = await list(
        s,
        "items",
        base + " ".repeat(4097 - base.length),
        tBob,
      );
      status(long, 400, "4097-character filter");
      const huge = await list(
        s,
        "items",
        `title == "${"x".repeat(20000)}"`,
        tBob,
      );
      status(huge, 400, "20000-character filter");
    });

    await t.step("filter on fields not in the fields parameter", async () => {
      const r = await s.request(
        "GET",
        `/api/v1/entities/items?fields=title&count=true&filter=${
          enc("n == 3 && price != null")
        }`,
      );
      status(r, 200, "fields + filter");
      eq(
        r.data.items,
        all.filter((x) => x.n === 3 && x.price !== null).map((x) => ({
          title: x.title,
        })),
        "only titles, of the filtered rows",
      );
    });

    await t.step(
      "empty filter is no filter; filter twice is a 400",
      async () => {
        const r = await s.request(
          "GET",
          "/api/v1/entities/items?filter=&count=true",
        );
        status(r, 200, "empty filter");
        eq(r.data.total, bodies.length, "empty filter total");
        const twice = await s.request(
          "GET",
          `/api/v1/entities/items?filter=${enc("n == 1")}&filter=${
            enc("n == 2")
          }`,
        );
        status(twice, 400, "filter given twice");
      },
    );
  } finally {
    await s.close();
  }
});

/** Ascending order with null first (the documented list order). */
function cmpNullsFirst(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

function cmpId(a: Row, b: Row): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
