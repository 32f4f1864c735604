import assert from "node:assert/strict";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { test } from "./evaluate.ts";
import { parseExpression, type ParseOptions } from "./parser.ts";
import { compileToSql, type SqlContext } from "./to_sql.ts";

const TYPES: Record<string, string> = {
  id: "string",
  title: "string",
  n: "int",
  d: "double",
  b: "bool",
  dt: "date",
  meta: "json",
  files: "files",
};
const AUTH = {
  id: "u1",
  user: { name: "Ann", tags: ["x", "a_b", null], age: 30 },
};

function ctx(
  dialect: "sqlite" | "postgres",
  scope: SqlContext["scope"] = { auth: AUTH },
): SqlContext {
  return {
    dialect,
    column: (name) => Object.hasOwn(TYPES, name) ? `"${name}"` : undefined,
    fieldType: (name) => Object.hasOwn(TYPES, name) ? TYPES[name] : undefined,
    scope,
  };
}

const RULE: ParseOptions = { mode: "rule" };
const compile = (
  source: string,
  dialect: "sqlite" | "postgres" = "sqlite",
  options = RULE,
) => compileToSql(parseExpression(source, options), ctx(dialect));

Deno.test("to_sql: generated SQL", () => {
  const cases: [string, string, string, unknown[]][] = [
    [
      "record.title == auth.id",
      '("title" IS NOT NULL AND "title" = ?)',
      '("title" IS NOT NULL AND "title" = ?::text)',
      [
        "u1",
      ],
    ],
    [
      "record.title != 'a'",
      '("title" IS NULL OR NOT ("title" = ?))',
      '("title" IS NULL OR NOT ("title" = ?::text))',
      ["a"],
    ],
    ["record.title == null", '"title" IS NULL', '"title" IS NULL', []],
    [
      "record.n > '5'",
      '("n" IS NOT NULL AND "n" > ?)',
      '("n" IS NOT NULL AND "n" > ?::bigint)',
      [5],
    ],
    [
      "record.n < 0.5",
      '("n" IS NULL OR "n" < ?)',
      '("n" IS NULL OR "n" < ?::double precision)',
      [0.5],
    ],
    [
      "record.dt >= '2026'",
      '("dt" IS NOT NULL AND "dt" >= ?)',
      '("dt" IS NOT NULL AND "dt" COLLATE "C" >= ?::text)',
      ["2026"],
    ],
    ["!record.b", 'NOT ("b" IS TRUE)', 'NOT ("b" IS TRUE)', []],
    [
      "record.b == 0",
      '("b" IS NOT NULL AND "b" IS FALSE)',
      '("b" IS NOT NULL AND "b" IS FALSE)',
      [],
    ],
    [
      "record.title",
      `("title" IS NOT NULL AND "title" <> '')`,
      `("title" IS NOT NULL AND "title" <> '')`,
      [],
    ],
    ["record.n == record.d", '"n" IS "d"', '"n" IS NOT DISTINCT FROM "d"', []],
    [
      "record.n < record.b",
      'COALESCE("n", 0) < COALESCE("b", 0)',
      'COALESCE("n", 0) < COALESCE(CAST("b" AS integer), 0)',
      [],
    ],
    [
      "record.title === record.n",
      '("title" IS NULL AND "n" IS NULL)',
      '("title" IS NULL AND "n" IS NULL)',
      [],
    ],
    [
      "record.title.includes('%')",
      '("title" IS NOT NULL AND instr("title", ?) > 0)',
      '("title" IS NOT NULL AND strpos("title", ?::text) > 0)',
      [
        "%",
      ],
    ],
    [
      "record.title.startsWith('ab')",
      '("title" IS NOT NULL AND substr("title", 1, ?) = ?)',
      '("title" IS NOT NULL AND left("title", ?::integer) = ?::text)',
      [
        2,
        "ab",
      ],
    ],
    [
      "auth.user.tags.includes(record.title)",
      '("title" IS NULL OR "title" IN (?, ?))',
      '("title" IS NULL OR "title" IN (?::text, ?::text))',
      [
        "x",
        "a_b",
      ],
    ],
    ["auth.id == ''", "0", "FALSE", []],
    [
      "auth.id != '' && record.n == 1 || false",
      '("n" IS NOT NULL AND "n" = ?)',
      '("n" IS NOT NULL AND "n" = ?::bigint)',
      [1],
    ],
    [
      "(record.n == 1) == (record.d == 2)",
      '(("n" IS NOT NULL AND "n" = ?)) = (("d" IS NOT NULL AND "d" = ?))',
      '(("n" IS NOT NULL AND "n" = ?::bigint)) = (("d" IS NOT NULL AND "d" = ?::double precision))',
      [1, 2],
    ],
    ["record.n == 0 / 0", "0", "FALSE", []],
    ["record.n.includes(1)", "0", "FALSE", []],
  ];
  for (const [source, sqlite, postgres, params] of cases) {
    assert.deepEqual(
      compile(source, "sqlite"),
      { sql: sqlite, params },
      source,
    );
    assert.deepEqual(compile(source, "postgres")?.sql, postgres, source);
  }
});

Deno.test("to_sql: a range needs no NULL branch once a bound excludes NULL", () => {
  const cases: [string, string][] = [
    [
      "record.n >= 2 && record.n < 4",
      '(("n" IS NOT NULL AND "n" >= ?) AND "n" < ?)',
    ],
    [
      "record.n < 4 && record.n >= 2",
      '("n" < ? AND ("n" IS NOT NULL AND "n" >= ?))',
    ],
    [
      "record.n >= 2 && record.title == 'a' && record.n < 4",
      '((("n" IS NOT NULL AND "n" >= ?) AND ("title" IS NOT NULL AND "title" = ?)) AND "n" < ?)',
    ],
    // Nothing excludes NULL: the branch stays.
    [
      "record.n < 4 && record.d < 1",
      '(("n" IS NULL OR "n" < ?) AND ("d" IS NULL OR "d" < ?))',
    ],
    [
      "record.n != 0 && record.n < 4",
      '(("n" IS NULL OR NOT ("n" = ?)) AND ("n" IS NULL OR "n" < ?))',
    ],
    // Another column's bound does not count; nor does one side of an OR.
    [
      "record.d >= 2 && record.n < 4",
      '(("d" IS NOT NULL AND "d" >= ?) AND ("n" IS NULL OR "n" < ?))',
    ],
    [
      "(record.n >= 2 || record.d > 1) && record.n < 4",
      '((("n" IS NOT NULL AND "n" >= ?) OR ("d" IS NOT NULL AND "d" > ?)) AND ("n" IS NULL OR "n" < ?))',
    ],
  ];
  for (const [source, want] of cases) {
    assert.equal(compile(source)?.sql, want, source);
  }
});

Deno.test("to_sql: filter mode uses bare field names", () => {
  const options: ParseOptions = {
    mode: "filter",
    fields: new Set(Object.keys(TYPES)),
  };
  assert.deepEqual(compile("title == auth.id && n > 2", "sqlite", options), {
    sql:
      '(("title" IS NOT NULL AND "title" = ?) AND ("n" IS NOT NULL AND "n" > ?))',
    params: ["u1", 2],
  });
});

Deno.test("to_sql: compiles lengths and arithmetic", () => {
  const compiled = [
    "record.title.length > 999",
    "record.n + 1 > 2",
    "-record.n < 0",
    "record.n * 2 + record.title.length >= 10",
    "record.n % 3 == 1",
    "record.n / 4 < 0.3",
    "(record.n - 1) * 1.2 != 5",
  ];
  for (const source of compiled) {
    for (const dialect of ["sqlite", "postgres"] as const) {
      assert.ok(compile(source, dialect), `${dialect}: ${source}`);
    }
  }
  // Doubles may overflow: SQLite gives Infinity like JavaScript, PostgreSQL raises.
  assert.ok(compile("record.d * 2 > 1", "sqlite"));
  assert.equal(compile("record.d * 2 > 1", "postgres"), undefined);
  // Non-integers in products could underflow (an error on PostgreSQL).
  assert.ok(compile("(record.n - 0.1) * 1.2 != 5", "sqlite"));
  assert.equal(compile("(record.n - 0.1) * 1.2 != 5", "postgres"), undefined);
});

Deno.test("to_sql: falls back when semantics could differ", () => {
  const fallback = [
    "record.title + 1 > 2", // string concatenation
    "record.n / record.n > 0", // division by a column
    "record.n / 0 > 0", // division by zero
    "record.n % 2.5 > 0", // remainder of non-integers
    "record.d % 2 > 0",
    "(record.d * 2) * 0 == 0", // Infinity * 0 would be NaN (NULL in SQL)
    "record.n * 1e301 > 0", // beyond ±1e300
    "record.b + 1 > 1", // booleans
    "record.title.length < record.dt.length", // two computed values
    "record.title == 5", // ToNumber of a string column
    "record.title < 5",
    "record.title < record.dt", // order of two arbitrary strings
    "record.title == record.n",
    "record.title < '\\uE000'", // UTF-8 vs UTF-16 order
    "record.title == 'a\\0b'", // NUL cannot be bound on PostgreSQL
    "record.title == '\\uD800'", // lone surrogate
    "record.meta.owner == 'u1'", // arrays and objects convert: a prefilter only
    "record.meta.length === 3", // .length of a json value
    "record.meta['a b'] === 1", // keys other than names
    "record.meta.a < record.n", // json against a column
    "record.files.includes('a')",
    "record.unknown == 1",
    "record == null",
    "'abc'.includes(record.title)",
    "record.title.includes(record.dt)",
    "(record.title || 'x') == 'x'", // the value of || is not known
    "req.body.x == record.title", // req not given
    "f(record.title)",
  ];
  for (const source of fallback) {
    const expr = parseExpression(source, {
      mode: "rule",
      helpers: new Set(["f"]),
    });
    for (const dialect of ["sqlite", "postgres"] as const) {
      assert.equal(
        compileToSql(expr, ctx(dialect)),
        undefined,
        `${dialect}: ${source}`,
      );
    }
  }
  // With req known, request values are folded like auth values.
  const expr = parseExpression("req.body.x == record.title", RULE);
  assert.deepEqual(
    compileToSql(expr, ctx("sqlite", { auth: AUTH, req: { body: { x: "a" } } }))
      ?.params,
    ["a"],
  );
});

Deno.test("to_sql: values are bound, never interpolated", () => {
  const hostile = "x' OR 1=1 --";
  const expr = parseExpression("record.title == auth.id", RULE);
  const q = compileToSql(expr, ctx("sqlite", { auth: { id: hostile } }));
  assert.ok(q && !q.sql.includes("OR 1=1"));
  assert.deepEqual(q?.params, [hostile]);
});

Deno.test("to_sql: SQLite rows match the evaluator on tricky data", () => {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE t (id TEXT, title TEXT, n INTEGER, d REAL, b INTEGER, dt TEXT, meta TEXT, files TEXT)`,
  );
  const rows = [
    {
      id: "1",
      title: "a_b",
      n: 5,
      d: -0.5,
      b: true,
      dt: "2026-01-02T03:04:05.000Z",
    },
    {
      id: "2",
      title: "a%b",
      n: -5,
      d: 0,
      b: false,
      dt: "2025-12-31T23:59:59.999Z",
    },
    { id: "3", title: "axb", n: 0, d: 1e20, b: null, dt: null },
    { id: "4", title: null, n: null, d: null, b: null, dt: "" },
    { id: "5", title: "", n: 10, d: 2.5, b: true, dt: "2026" },
    {
      id: "6",
      title: "ÀB😀",
      n: 9007199254740991,
      d: -1e-7,
      b: false,
      dt: "z",
    },
    { id: "7", title: "😀x", n: 1, d: 1, b: true, dt: "\uffff" },
    { id: "8", title: "AB", n: 2, d: 2, b: false, dt: "a" },
  ];
  const insert = db.prepare(
    "INSERT INTO t (id, title, n, d, b, dt) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (const r of rows) {
    insert.run(
      r.id,
      r.title,
      r.n,
      r.d,
      r.b === null ? null : Number(r.b),
      r.dt,
    );
  }
  const sources = [
    "record.title.includes('%')",
    "record.title.includes('_')",
    "record.title.startsWith('a_')",
    "record.title.startsWith('ÀB')",
    "record.title.endsWith('😀')",
    "record.title.endsWith('b')",
    "!record.title.endsWith('b')",
    "record.title.includes('')",
    "record.title != 'a_b'",
    "record.title < 'b'",
    "record.title >= 'B'",
    "!record.b",
    "record.b != false",
    "record.n == '5'",
    "record.n < '10'",
    "record.n >= null",
    "record.n > true",
    "record.d <= 0",
    "record.d == -0",
    "record.dt >= '2026'",
    "auth.user.tags.includes(record.title)",
    "!auth.user.tags.includes(record.title)",
    "record.n == record.d",
    "record.n <= record.b",
    "record.b == record.n",
    "record.title && record.n",
    "record.title || record.b",
    "(record.n > 1) != (record.d > 1)",
    "record.n >= 1 && record.n < 5",
    "record.n < 5 && record.n >= 1",
    "!(record.n >= 1 && record.n < 5)",
    "(record.n < 5 && record.n > -10) == false",
    "record.n >= 1 && record.d < 1 && record.n < 5",
    "record.n != 0 && record.n < 3",
    "!(record.title == 'AB' && record.title != 'x')",
    "!(record.dt >= '2026' && record.dt < 'b')",
    "record.n < 5 && (record.n >= 1 || record.d < 1)",
  ];
  const auth = AUTH;
  for (const source of sources) {
    const expr = parseExpression(source, RULE);
    const q = compileToSql(expr, ctx("sqlite"));
    assert.ok(q, `not compiled: ${source}`);
    const got = db.prepare(`SELECT id FROM t WHERE ${q.sql} ORDER BY id`).all(
      ...(q.params as SQLInputValue[]),
    )
      .map((r) => r.id);
    const want = rows.filter((record) => test(expr, { auth, record })).map((
      r,
    ) => r.id);
    assert.deepEqual(got, want, `${source}\n${q.sql}`);
  }
  db.close();
});
