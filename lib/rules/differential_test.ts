/**
 * Differential test: random rules are compiled to SQL and run on SQLite and
 * PostgreSQL; the selected rows must be exactly those the evaluator accepts.
 */
import assert from "node:assert/strict";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import postgres from "postgres";
import { hasPostgres, startPostgres } from "../../tests/_pg.ts";
import { test } from "./evaluate.ts";
import { parseExpression } from "./parser.ts";
import { compileToSql, type SqlContext } from "./to_sql.ts";

type Row = Record<string, string | number | boolean | null>;
type Dialect = "sqlite" | "postgres";

/** mulberry32: a small deterministic PRNG. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(20260102);
const pick = <T>(items: readonly T[]): T =>
  items[Math.floor(rand() * items.length)];
const chance = (p: number) => rand() < p;

const TYPES: Record<string, string> = {
  s: "string",
  s2: "string",
  i: "int",
  f: "double",
  b: "bool",
  dt: "date",
};
const TEXT = ["s", "s2", "dt"];
const NUMBER = ["i", "f"];
const STRINGS = [
  ..."|a|A|b|ab|abc|abd|5|05|5.0| 5 |-3|1e3|0x10|Infinity|NaN|true|null".split(
    "|",
  ),
  ..."ÀB|é|😀|a😀|\ue000|\uffff|%|_|a%b|a_b|\\|'|\"| |u1|Ann".split("|"),
  "2026-01-02T03:04:05.000Z",
];
const DATES = [
  "2025-12-31T23:59:59.999Z",
  "2026-01-02T03:04:05.000Z",
  "2026-01-02T03:04:05.001Z",
  "2030-06-15T00:00:00.000Z",
];
const MAX = Number.MAX_SAFE_INTEGER;
const INTS = [0, 1, -1, 2, 5, 10, 42, -42, 100, MAX, -MAX];
const DOUBLES = [
  ...[0, -0, 0.5, -0.5, 1, 1.5, 2.5, 5, 3.14],
  ...[1e20, -1e-7, 1e308, Infinity, -Infinity],
];

function makeRows(): Row[] {
  const rows: Row[] = [
    { s: null, s2: null, i: null, f: null, b: null, dt: null },
    { s: "", s2: "", i: 0, f: 0, b: false, dt: DATES[0] },
    { s: "5", s2: "5", i: 5, f: 5, b: true, dt: DATES[1] },
    { s: "u1", s2: "a", i: -1, f: -0, b: null, dt: DATES[2] },
  ];
  while (rows.length < 50) {
    const maybe = <T>(v: T) => (chance(0.15) ? null : v);
    rows.push({
      s: maybe(pick(STRINGS)),
      s2: maybe(pick(STRINGS)),
      i: maybe(pick(INTS)),
      f: maybe(pick(DOUBLES)),
      b: maybe(chance(0.5)),
      dt: maybe(pick(DATES)),
    });
  }
  return rows.map((r, n) => ({ id: `r${String(n).padStart(2, "0")}`, ...r }));
}

const AUTHS = [
  { id: "", entity: "users", type: "guest", user: null },
  {
    id: "u1",
    entity: "users",
    type: "user",
    user: {
      id: "u1",
      name: "Ann",
      age: 30,
      score: 2.5,
      tags: ["a", "5", null, "😀"],
      nums: [5, -1, 0.5],
      flags: [true],
    },
  },
  {
    id: "5",
    entity: "users",
    type: "admin",
    user: {
      id: "5",
      name: "",
      age: "10",
      score: null,
      tags: [],
      nums: [],
      flags: [false, true],
    },
  },
];
const REQ = {
  method: "GET",
  body: { x: "a", n: 5, s: "5", list: ["abc", 1, null] },
  query: { q: "ab" },
};

const literal = (v: unknown): string => {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "(0 / 0)";
    if (v === Infinity) return "1e309";
    if (v === -Infinity) return "-1e309";
    return Object.is(v, -0) ? "-0" : String(v);
  }
  return String(v);
};

const AUTH_VALUES = [
  "auth.id",
  "auth.user.name",
  "auth.user.age",
  "auth.user.score",
  "auth.user.missing",
  "auth.user",
  "auth.type",
];
const REQ_VALUES = [
  "req.body.x",
  "req.body.n",
  "req.body.s",
  "req.query.q",
  "req.body.list",
];
const ARRAYS = [
  "auth.user.tags",
  "auth.user.nums",
  "auth.user.flags",
  "req.body.list",
  "auth.user",
];

/** A value known at request time, biased toward the family of `column`. */
function constant(column: string): string {
  const r = rand();
  if (r < 0.15) return pick(AUTH_VALUES);
  if (r < 0.22) return pick(REQ_VALUES);
  if (r < 0.27) {
    return pick([
      "null",
      "undefined",
      "true",
      "false",
      "(0 / 0)",
      "'a' + 'b'",
      "2 * 3",
      "-5",
    ]);
  }
  if (TEXT.includes(column)) {
    return literal(
      chance(0.8)
        ? pick(column === "dt" ? [...DATES, ...STRINGS] : STRINGS)
        : pick(INTS),
    );
  }
  if (NUMBER.includes(column)) {
    return literal(chance(0.75) ? pick([...INTS, ...DOUBLES]) : pick(STRINGS));
  }
  return literal(chance(0.6) ? chance(0.5) : pick([0, 1, 2, "1", "", "true"]));
}

const column = (names = Object.keys(TYPES)) => `record.${pick(names)}`;
const COMPARE = ["==", "!=", "===", "!==", "<", "<=", ">", ">="];

function comparison(): string {
  const c = column();
  const k = constant(c.slice(7));
  return chance(0.8)
    ? `${c} ${pick(COMPARE)} ${k}`
    : `${k} ${pick(COMPARE)} ${c}`;
}

function atom(): string {
  const r = rand();
  if (r < 0.4) return comparison();
  if (r < 0.5) return `${column()} ${pick(COMPARE)} ${column()}`;
  if (r < 0.6) {
    const arg = chance(0.8) ? literal(pick(STRINGS)) : constant("s");
    return `${column(chance(0.9) ? TEXT : NUMBER)}.${
      pick(["includes", "startsWith", "endsWith"])
    }(${arg})`;
  }
  if (r < 0.67) return `${pick(ARRAYS)}.includes(${column()})`;
  if (r < 0.77) return chance(0.5) ? column() : `!${column()}`;
  if (r < 0.85) {
    return chance(0.5)
      ? `(${comparison()}) ${pick(COMPARE)} ${
        pick(["true", "false", "1", "0", "null"])
      }`
      : `(${comparison()}) ${pick(COMPARE)} (${comparison()})`;
  }
  if (r < 0.9) {
    return `${column(NUMBER)} ${pick(["+", "-", "*", "%"])} ${
      literal(pick(INTS))
    } > ${literal(pick(INTS))}`;
  }
  if (r < 0.95) {
    return `(${column()} ${pick(["||", "&&"])} ${constant("s")}) == ${
      constant("s")
    }`;
  }
  return `${pick(AUTH_VALUES)} ${pick(COMPARE)} ${literal(pick(STRINGS))}`;
}

function expression(depth: number): string {
  const r = rand();
  if (depth <= 0 || r < 0.45) return atom();
  if (r < 0.7) return `(${expression(depth - 1)} && ${expression(depth - 1)})`;
  if (r < 0.9) return `(${expression(depth - 1)} || ${expression(depth - 1)})`;
  return `!(${expression(depth - 1)})`;
}

const ROWS = makeRows();
const SOURCES = Array.from({ length: 600 }, () => expression(2));
const COLUMNS = ["id", ...Object.keys(TYPES)];

function context(dialect: Dialect, auth: unknown): SqlContext {
  return {
    dialect,
    column: (
      name,
    ) => (name === "id" || Object.hasOwn(TYPES, name)
      ? `"${name}"`
      : undefined),
    fieldType: (
      name,
    ) => (name === "id"
      ? "string"
      : Object.hasOwn(TYPES, name)
      ? TYPES[name]
      : undefined),
    scope: { auth, req: REQ },
  };
}

/** Runs every expression under every auth scope; returns how many compiled. */
async function differential(
  dialect: Dialect,
  select: (sql: string, params: unknown[]) => Promise<string[]>,
) {
  let compiled = 0;
  let total = 0;
  let selective = 0; // compiled queries selecting some but not all rows
  for (const source of SOURCES) {
    const expr = parseExpression(source, { mode: "rule" });
    for (const auth of AUTHS) {
      total++;
      const q = compileToSql(expr, context(dialect, auth));
      if (q === undefined) continue;
      compiled++;
      const want = ROWS.filter((record) =>
        test(expr, { auth, req: REQ, record })
      ).map((r) => String(r.id));
      let got: string[];
      try {
        got = (await select(q.sql, q.params)).sort();
      } catch (e) {
        throw new Error(
          `${dialect}: ${source}\n${q.sql}\n${JSON.stringify(q.params)}\n${e}`,
        );
      }
      assert.deepEqual(
        got,
        want,
        `${dialect} auth=${auth.id}: ${source}\n${q.sql}\n${
          JSON.stringify(q.params)
        }`,
      );
      if (want.length > 0 && want.length < ROWS.length) selective++;
    }
  }
  console.log(
    `${dialect}: ${compiled} of ${total} (expression, auth) pairs compiled ` +
      `and matched the evaluator; ${selective} of them select some but not all rows`,
  );
  assert.ok(compiled >= total / 2, `only ${compiled} of ${total} compiled`);
  return compiled;
}

Deno.test("differential: SQLite selects exactly the rows the evaluator accepts", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE t (id TEXT PRIMARY KEY, s TEXT, s2 TEXT, i INTEGER, f REAL, b INTEGER, dt TEXT)`,
  );
  const insert = db.prepare(
    `INSERT INTO t (${COLUMNS.join(", ")}) VALUES (${
      COLUMNS.map(() => "?").join(", ")
    })`,
  );
  for (const r of ROWS) {
    insert.run(
      ...COLUMNS.map((c) =>
        (typeof r[c] === "boolean" ? Number(r[c]) : r[c]) as SQLInputValue
      ),
    );
  }
  // The stored values decode back to the records the evaluator sees.
  const back = db.prepare("SELECT * FROM t ORDER BY id").all().map((r) => ({
    ...r,
    b: r.b === null ? null : r.b === 1,
  }));
  assert.deepEqual(back, ROWS.map((r) => ({ ...r, f: r.f === 0 ? 0 : r.f })));
  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  await differential("sqlite", (sql, params) => {
    const text = `SELECT id FROM t WHERE ${sql}`;
    const stmt = statements.get(text) ?? db.prepare(text);
    statements.set(text, stmt);
    return Promise.resolve(
      stmt.all(...(params as SQLInputValue[])).map((r) => String(r.id)),
    );
  });
  db.close();
});

Deno.test({
  name:
    "differential: PostgreSQL selects exactly the rows the evaluator accepts",
  ignore: !hasPostgres(),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const pg = await startPostgres();
    const sql = postgres(await pg.createDatabase(), { onnotice: () => {} });
    try {
      // A linguistic collation, as production databases often have: text
      // order must not depend on it.
      const [icu] = await sql.unsafe(
        `SELECT 1 FROM pg_collation WHERE collname = 'en-x-icu'`,
      );
      const text = icu ? `text COLLATE "en-x-icu"` : "text";
      await sql.unsafe(
        `CREATE TABLE t (id text PRIMARY KEY, s ${text}, s2 ${text}, i bigint, f double precision, b boolean, dt ${text})`,
      );
      const placeholders = COLUMNS.map((_, n) => `$${n + 1}`).join(", ");
      for (const r of ROWS) {
        await sql.unsafe(
          `INSERT INTO t (${COLUMNS.join(", ")}) VALUES (${placeholders})`,
          COLUMNS.map((c) => r[c]) as never,
        );
      }
      const back = (await sql.unsafe("SELECT * FROM t ORDER BY id")).map((
        r,
      ) => ({ ...r, i: r.i === null ? null : Number(r.i) }));
      assert.deepEqual(
        back,
        ROWS.map((r) => ({ ...r, f: r.f === 0 ? 0 : r.f })),
      );
      await differential("postgres", async (text, params) => {
        let n = 0;
        const numbered = text.replace(/\?/g, () => `$${++n}`);
        const rows = await sql.unsafe(
          `SELECT id FROM t WHERE ${numbered}`,
          params as never,
        );
        return rows.map((r) => String(r.id));
      });
    } finally {
      await sql.end();
    }
  },
});
