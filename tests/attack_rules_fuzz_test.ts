/**
 * Attack on the rule compiler's NULL-branch pruning (`and` in
 * lib/rules/sql_fragment.ts): random expressions dense in conjunctions on the
 * same few columns (ranges, `!=`, negations, nested `&&`/`||`/`!`, boolean
 * comparisons, lengths, arithmetic, methods, `in`-style includes, column
 * pairs), in rule and filter mode, compiled to SQL and run on SQLite and
 * PostgreSQL: the selected rows must be exactly those the evaluator accepts,
 * and a prefilter must hold every accepted row.
 */
import assert from "node:assert/strict";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import postgres from "postgres";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { type RuleScope, test } from "../lib/rules/evaluate.ts";
import { parseExpression } from "../lib/rules/parser.ts";
import {
  compilePrefilter,
  compileToSql,
  type SqlContext,
} from "../lib/rules/to_sql.ts";

type Dialect = "sqlite" | "postgres";
type Row = Record<string, unknown>;

const TYPES: Readonly<Record<string, string>> = {
  n: "int",
  d: "double",
  t: "string",
  u: "string",
  b: "bool",
  dt: "date",
};
const COLUMNS = ["id", ...Object.keys(TYPES)];

function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(Number(Deno.env.get("MB_FUZZ_SEED") ?? 7));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const chance = (p: number) => rand() < p;

const NUMS = [-2, -1, 0, 1, 2, 3, 4, 5];
const TEXTS = ["", "a", "ab", "b", "1", "2", "0", " ", "abc"];
const DATES = ["2026-01-01T00:00:00.000Z", "2026-06-01T00:00:00.000Z"];

function makeRows(): Row[] {
  const rows: Row[] = [];
  const maybe = <T>(v: T) => (chance(0.3) ? null : v);
  for (let i = 0; i < 80; i++) {
    rows.push({
      id: `r${String(i).padStart(3, "0")}`,
      n: maybe(pick(NUMS)),
      d: maybe(pick([...NUMS, 0.5, -0.5, 2.5])),
      t: maybe(pick(TEXTS)),
      u: maybe(pick(TEXTS)),
      b: maybe(chance(0.5)),
      dt: maybe(pick(DATES)),
    });
  }
  return rows;
}
const ROWS = makeRows();

const AUTHS = [
  { id: "", type: "guest", user: null },
  {
    id: "u1",
    type: "user",
    user: { n: 2, t: "a", list: [1, "a", null, true], strs: ["", "b", 0] },
  },
];

const lit = (
  v: unknown,
) => (typeof v === "string" ? JSON.stringify(v) : String(v));
const NUM_K = [
  ...NUMS.map(String),
  "0.5",
  "null",
  "undefined",
  "'2'",
  "''",
  "true",
  "auth.user.n",
  "auth.user.missing",
  "auth.id",
];
const TEXT_K = [
  ...TEXTS.map(lit),
  "null",
  "undefined",
  "1",
  "auth.user.t",
  "auth.id",
  "auth.user.missing",
];
const OPS = ["==", "!=", "===", "!==", "<", "<=", ">", ">="];

/** A comparison of a column (or computed number) with a constant. */
function compare(col: string): string {
  const op = pick(OPS);
  if (col === "b") {
    return `record.b ${op} ${pick(["true", "false", "null", "1", "0"])}`;
  }
  if (col === "t" || col === "u") {
    if (chance(0.2)) {
      return `record.${col}.length ${op} ${pick(["0", "1", "2"])}`;
    }
    return `record.${col} ${op} ${pick(TEXT_K)}`;
  }
  if (col === "dt") {
    return `record.dt ${op} ${lit(pick([...DATES, "2026-03"]))}`;
  }
  const lhs = chance(0.2)
    ? `(record.${col} ${pick(["+", "-", "*"])} ${pick(["1", "2", "-1"])})`
    : chance(0.1)
    ? `-record.${col}`
    : `record.${col}`;
  const k = pick(NUM_K);
  return chance(0.85) ? `${lhs} ${op} ${k}` : `${k} ${op} ${lhs}`;
}

function atom(cols: readonly string[]): string {
  const c = pick(cols);
  const r = rand();
  if (r < 0.6) return compare(c);
  if (r < 0.68) return chance(0.5) ? `record.${c}` : `!record.${c}`;
  if (r < 0.74 && (c === "t" || c === "u")) {
    return `record.${c}.${pick(["includes", "startsWith", "endsWith"])}(${
      pick(["'a'", "'b'", "''", "auth.user.t"])
    })`;
  }
  if (r < 0.8) {
    return `${
      pick(["auth.user.list", "auth.user.strs", "auth.user"])
    }.includes(record.${c})`;
  }
  if (r < 0.88) {
    const other = pick(["n", "d", "b"]);
    return `record.${pick(["n", "d"])} ${pick(OPS)} record.${other}`;
  }
  if (r < 0.92) return `record.t ${pick(["==", "!=", "===", "!=="])} record.u`;
  return `(${compare(c)}) ${pick(["==", "!="])} ${
    pick(["true", "false", `(${compare(c)})`])
  }`;
}

function expression(depth: number, cols: readonly string[]): string {
  const r = rand();
  if (depth <= 0 || r < 0.3) return atom(cols);
  if (r < 0.7) {
    return `(${expression(depth - 1, cols)} && ${expression(depth - 1, cols)})`;
  }
  if (r < 0.85) {
    return `(${expression(depth - 1, cols)} || ${expression(depth - 1, cols)})`;
  }
  if (r < 0.93) return `!(${expression(depth - 1, cols)})`;
  return `(${expression(depth - 1, cols)}) ${pick(["==", "!="])} (${
    expression(depth - 1, cols)
  })`;
}

function sources(count: number): string[] {
  const out: string[] = [];
  const all = Object.keys(TYPES);
  for (let i = 0; i < count; i++) {
    // One or two "hot" columns, so conjuncts meet on the same column.
    const cols = chance(0.6) ? [pick(all)] : [pick(all), pick(all)];
    out.push(expression(chance(0.5) ? 3 : 4, cols));
  }
  return out;
}

const SOURCES = sources(Number(Deno.env.get("MB_FUZZ_COUNT") ?? 1500));
const CASES = SOURCES.flatMap((source) => {
  type Scope = (record: Row, auth: unknown) => RuleScope;
  const rule: Scope = (record, auth) => ({ auth, req: {}, record });
  const out = [{
    source,
    expr: parseExpression(source, { mode: "rule" }),
    scope: rule,
  }];
  const filter = source.replaceAll("record.", "");
  const fields = new Set(COLUMNS);
  out.push({
    source: filter,
    expr: parseExpression(filter, { mode: "filter", fields }),
    scope: (record, auth) => ({ ...record, auth }),
  });
  return out;
});

function context(dialect: Dialect, auth: unknown): SqlContext {
  return {
    dialect,
    column: (name) => (COLUMNS.includes(name) ? `"${name}"` : undefined),
    fieldType: (name) => (name === "id" ? "string" : TYPES[name]),
    scope: { auth, req: {} },
  };
}

async function differential(
  dialect: Dialect,
  select: (sql: string, params: unknown[]) => Promise<string[]>,
): Promise<void> {
  let compiled = 0, pruned = 0, selective = 0;
  const failures: string[] = [];
  for (const { source, expr, scope } of CASES) {
    for (const auth of AUTHS) {
      const ctx = context(dialect, auth);
      const want = ROWS.filter((r) => test(expr, scope(r, auth))).map((r) =>
        String(r.id)
      );
      const q = compileToSql(expr, ctx) ?? compilePrefilter(expr, ctx);
      if (q === undefined) continue;
      const exact = compileToSql(expr, ctx) !== undefined;
      let got: string[];
      try {
        got = (await select(q.sql, q.params)).sort();
      } catch (e) {
        failures.push(`${dialect} error: ${source}\n  ${q.sql}\n  ${e}`);
        continue;
      }
      if (exact) {
        compiled++;
        if (/\(\("\w+" IS NOT NULL/.test(q.sql)) pruned++;
        if (want.length > 0 && want.length < ROWS.length) selective++;
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          failures.push(
            `${dialect} auth=${auth.id}: ${source}\n  ${q.sql}\n  ${
              JSON.stringify(q.params)
            }\n  want ${want}\n  got  ${got}`,
          );
        }
      } else {
        const have = new Set(got);
        const missing = want.filter((id) => !have.has(id));
        if (missing.length > 0) {
          failures.push(`${dialect} prefilter: ${source} misses ${missing}`);
        }
      }
    }
  }
  console.log(
    `${dialect}: ${compiled} exact compilations matched (${selective} selective, ${pruned} with a pruned NULL branch)`,
  );
  assert.deepEqual(failures.slice(0, 10), []);
  assert.ok(compiled > CASES.length / 2, `only ${compiled} compiled`);
}

Deno.test("attack rules fuzz: SQLite rows equal the evaluator's", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, d REAL, t TEXT, u TEXT, b INTEGER, dt TEXT)`,
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
  await differential("sqlite", (sql, params) =>
    Promise.resolve(
      db.prepare(`SELECT id FROM t WHERE ${sql}`)
        .all(...(params as SQLInputValue[])).map((r) => String(r.id)),
    ));
  db.close();
});

Deno.test({
  name: "attack rules fuzz: PostgreSQL rows equal the evaluator's",
  ignore: !hasPostgres(),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const pg = await startPostgres();
    const sql = postgres(await pg.createDatabase(), { onnotice: () => {} });
    try {
      await sql.unsafe(
        `CREATE TABLE t (id text PRIMARY KEY, n bigint, d double precision, t text, u text, b boolean, dt text)`,
      );
      for (const r of ROWS) {
        await sql.unsafe(
          `INSERT INTO t (${COLUMNS.join(", ")}) VALUES (${
            COLUMNS.map((_, i) => `$${i + 1}`).join(", ")
          })`,
          COLUMNS.map((c) => r[c]) as never,
        );
      }
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
