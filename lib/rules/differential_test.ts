/**
 * Differential test: random rules are compiled to SQL and run on SQLite and
 * PostgreSQL; the selected rows must be exactly those the evaluator accepts.
 */
import assert from "node:assert/strict";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import postgres from "postgres";
import { hasPostgres, startPostgres } from "../../tests/_pg.ts";
import { ABSENT, type Related, type RuleScope, test } from "./evaluate.ts";
import type { Expr } from "./ast.ts";
import { parseExpression } from "./parser.ts";
import { bindRelations, type ShapeEntity, type Shapes } from "./relations.ts";
import { compilePrefilter, compileToSql, type SqlContext } from "./to_sql.ts";
import {
  differentialCases,
  manySources,
  relationSources,
  withParents,
} from "./_differential_cases.ts";

type Dialect = "sqlite" | "postgres";
const generated = differentialCases(20260102, 600);
const { auths: AUTHS, req: REQ, sources: SOURCES } = generated;
/**
 * The columns, `p`: a relation to the table itself (`t_via_p` back), and
 * `q`: a multiple relation to it.
 */
const TYPES: Readonly<Record<string, string>> = {
  ...generated.types,
  p: "relation",
  q: "relation[]",
};
const ROWS = withParents(generated.rows);
const COLUMNS = ["id", ...Object.keys(TYPES)];
const RULE = { mode: "rule" } as const;

/** The test's one entity `t`, as relation reads see it. */
const T: ShapeEntity = {
  name: "t",
  fieldNames: COLUMNS,
  field: (n) =>
    n === "id"
      ? { type: "string" }
      : n === "p"
      ? { type: "relation", target: "t" }
      : n === "q"
      ? { type: "relation", target: "t", multiple: true }
      : Object.hasOwn(TYPES, n)
      ? { type: TYPES[n] }
      : undefined,
};
const SHAPES: Shapes = {
  record: T,
  entity: (n) => n === "t" ? T : undefined,
  back: (_of, n) => n === "t_via_p" ? { entity: T, field: "p" } : undefined,
};
const BY_ID = new Map(ROWS.map((r) => [String(r.id), r]));
/** The related records, from the rows in memory (the loader's part). */
const RELATED: Related = {
  get: (parent, node) => {
    const p = parent as Record<string, unknown>;
    if (node.kind === "forward") {
      return BY_ID.get(String(p[node.field])) ?? ABSENT;
    }
    if (node.kind === "many") {
      return (p[node.field] as string[]).flatMap((id) => BY_ID.get(id) ?? []);
    }
    return ROWS.filter((r) => r[node.field] === p.id);
  },
};

/** Rule sources through relations, and their filter forms. */
const RELATION_CASES = [
  ...relationSources(SOURCES),
  // A third of the sources through the multiple relation (the run's time).
  ...manySources(SOURCES.filter((_, k) => k % 3 === 0)),
].flatMap((source) => {
  const rule = (record: (typeof ROWS)[number], auth: unknown): RuleScope => ({
    auth,
    req: REQ,
    record,
  });
  const bind = (e: Expr, what: "rule" | "filter") =>
    bindRelations(e, SHAPES, { what });
  const cases = [{
    source,
    expr: bind(parseExpression(source, RULE), "rule"),
    scope: rule,
  }];
  if (!source.includes("req.")) {
    // Bare names; a bound filter reads them as `record.<name>`.
    const filter = source.replace(/\brecord\./g, "");
    const fields = new Set([...COLUMNS, "t_via_p"]);
    const expr = bind(
      parseExpression(filter, { mode: "filter", fields }),
      "filter",
    );
    cases.push({ source: filter, expr, scope: rule });
  }
  return cases;
});

/** Each source as a rule and, when it does not read `req`, as a filter. */
const CASES = SOURCES.flatMap((source) => {
  type Scope = (record: (typeof ROWS)[number], auth: unknown) => RuleScope;
  const rule: Scope = (record, auth) => ({ auth, req: REQ, record });
  const cases = [{ source, expr: parseExpression(source, RULE), scope: rule }];
  if (!source.includes("req.")) {
    const filter = source.replaceAll("record.", "");
    const fields = new Set(COLUMNS);
    const expr = parseExpression(filter, { mode: "filter", fields });
    const scope: Scope = (record, auth) => ({ ...record, auth });
    cases.push({ source: filter, expr, scope });
  }
  return cases;
});

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
    table: '"t"',
    tables: (name) =>
      name === "t"
        ? {
          table: '"t"',
          column: (n) => (COLUMNS.includes(n) ? `"${n}"` : undefined),
          fieldType: (n) => (n === "id" ? "string" : TYPES[n]),
        }
        : undefined,
  };
}

/** Runs every expression under every auth scope; returns how many compiled. */
async function differential(
  dialect: Dialect,
  select: (sql: string, params: unknown[]) => Promise<string[]>,
) {
  await relations(dialect, select);
  let compiled = 0;
  let total = 0;
  let selective = 0; // compiled queries selecting some but not all rows
  let prefilters = 0; // supersets (JSON comparisons SQL cannot decide)
  let json = 0; // compiled expressions reading the json field
  let lists = 0; // compiled expressions reading the multiple relation
  for (const { source, expr, scope } of CASES) {
    for (const auth of AUTHS) {
      total++;
      const ctx = context(dialect, auth);
      const q = compileToSql(expr, ctx);
      const want = ROWS.filter((record) => test(expr, scope(record, auth)))
        .map((r) => String(r.id));
      if (q === undefined) {
        const pre = compilePrefilter(expr, ctx);
        if (pre === undefined) continue;
        prefilters++;
        const got = new Set(await select(pre.sql, pre.params));
        const missing = want.filter((id) => !got.has(id));
        assert.deepEqual(missing, [], `${dialect} prefilter: ${source}`);
        continue;
      }
      compiled++;
      if (/\bj\b/.test(source)) json++;
      if (/\brel\b/.test(source)) lists++;
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
    `${dialect}: ${compiled} of ${total} (rule or filter, auth) pairs compiled ` +
      `and matched the evaluator; ${selective} of them select some but not all rows; ` +
      `${json} read the json field, ${lists} the multiple relation; ` +
      `${prefilters} prefilters were supersets`,
  );
  assert.ok(json > 100, `only ${json} json expressions compiled`);
  assert.ok(
    lists > 100,
    `only ${lists} multiple relation expressions compiled`,
  );
  assert.ok(compiled >= total / 2, `only ${compiled} of ${total} compiled`);
  return compiled;
}

/**
 * The rules through relations (`p`, `t_via_p`): the rows SQL selects are
 * those the evaluator accepts with the related records loaded.
 */
async function relations(
  dialect: Dialect,
  select: (sql: string, params: unknown[]) => Promise<string[]>,
) {
  let compiled = 0, total = 0, selective = 0, prefilters = 0, many = 0;
  for (const { source, expr, scope } of RELATION_CASES) {
    for (const auth of AUTHS) {
      total++;
      const ctx = context(dialect, auth);
      const q = compileToSql(expr, ctx);
      const want = ROWS.filter((record) =>
        test(expr, scope(record, auth), undefined, RELATED)
      ).map((r) => String(r.id));
      if (q === undefined) {
        const pre = compilePrefilter(expr, ctx);
        if (pre === undefined) continue;
        prefilters++;
        const got = new Set(await select(pre.sql, pre.params));
        const missing = want.filter((id) => !got.has(id));
        assert.deepEqual(missing, [], `${dialect} prefilter: ${source}`);
        continue;
      }
      compiled++;
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
      if (want.length > 0 && want.length < ROWS.length) {
        selective++;
        if (/\bq\.(some|every)/.test(source)) many++;
      }
    }
  }
  console.log(
    `${dialect}: ${compiled} of ${total} (relation rule or filter, auth) pairs ` +
      `compiled and matched the evaluator; ${selective} of them select some ` +
      `but not all rows (${many} through the multiple relation); ` +
      `${prefilters} prefilters were supersets`,
  );
  assert.ok(many > 200, `only ${many} selective through the multiple relation`);
  assert.ok(compiled >= total / 3, `only ${compiled} of ${total} compiled`);
  assert.ok(selective >= compiled / 4, `only ${selective} selective`);
}

Deno.test("differential: SQLite selects exactly the rows the evaluator accepts", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE t (id TEXT PRIMARY KEY, s TEXT, s2 TEXT, i INTEGER, f REAL, b INTEGER, dt TEXT, j TEXT, rel TEXT, p TEXT, q TEXT)`,
  );
  db.exec(`CREATE INDEX t_p ON t (p)`);
  const insert = db.prepare(
    `INSERT INTO t (${COLUMNS.join(", ")}) VALUES (${
      COLUMNS.map(() => "?").join(", ")
    })`,
  );
  for (const r of ROWS) {
    insert.run(
      ...COLUMNS.map((c) =>
        (c === "j" || c === "rel" || c === "q"
          ? r[c] === null ? null : JSON.stringify(r[c])
          : typeof r[c] === "boolean"
          ? Number(r[c])
          : r[c]) as SQLInputValue
      ),
    );
  }
  // The stored values decode back to the records the evaluator sees.
  const back = db.prepare("SELECT * FROM t ORDER BY id").all().map((r) => ({
    ...r,
    b: r.b === null ? null : r.b === 1,
    j: typeof r.j === "string" ? JSON.parse(r.j) : null,
    rel: typeof r.rel === "string" ? JSON.parse(r.rel) : null,
    q: JSON.parse(String(r.q)),
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
        `CREATE TABLE t (id text PRIMARY KEY, s ${text}, s2 ${text}, i bigint, f double precision, b boolean, dt ${text}, j jsonb, rel jsonb, p text, q jsonb)`,
      );
      await sql.unsafe(`CREATE INDEX t_p ON t (p)`);
      // j and rel as JSON.stringify text, like the storage's jsonb parameters.
      const json = (c: string) => c === "j" || c === "rel" || c === "q";
      const placeholders = COLUMNS.map((c, n) =>
        json(c) ? `$${n + 1}::text::jsonb` : `$${n + 1}`
      ).join(", ");
      for (const r of ROWS) {
        await sql.unsafe(
          `INSERT INTO t (${COLUMNS.join(", ")}) VALUES (${placeholders})`,
          COLUMNS.map((c) =>
            json(c) && r[c] !== null ? JSON.stringify(r[c]) : r[c]
          ) as never,
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
