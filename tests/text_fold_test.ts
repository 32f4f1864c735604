/**
 * `.toLowerCase()`, `.toUpperCase()` and `fold(…)` in filters and rules give
 * JavaScript's result on both databases: a table of non-ASCII strings, each
 * compared through an HTTP filter (compiled to SQL) with the evaluator, and
 * through the SQL functions directly with lib/rules/text_fold.ts. A
 * `fold(<field>)` index serves `==` and `startsWith` (EXPLAIN).
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { asAdmin, createEntity, createRecord } from "./_scenarios.ts";
import { parseExpression } from "../lib/rules/parser.ts";
import { test as evaluate } from "../lib/rules/evaluate.ts";
import { compileToSql } from "../lib/rules/to_sql.ts";
import { foldText } from "../lib/rules/text_fold.ts";
import { columnOf } from "../lib/schema/ddl.ts";
import { changingChars } from "../lib/db/pg_text.ts";

/** Strings whose case or accents JavaScript treats specially. */
const WORDS: readonly string[] = [
  "İstanbul",
  "ISTANBUL",
  "istanbul",
  "ıi",
  "Straße",
  "STRASSE",
  "strasse",
  "ΟΔΟΣ",
  "οδός",
  "Σίσυφος ΣΊΣΥΦΟΣ",
  "ﬁne ﬂow",
  "FINE",
  "Émile",
  "émile",
  "E\u0301mile",
  "école",
  "한국어",
  "한국",
  "\u1112\u1161\u11ab",
  "😀 smile 👍🏽",
  "Ǆemal",
  "ǆ",
  "ŉ",
  "ΐ",
  "Ⅻ",
  "\u212b",
  "\u212a",
  "ǰ",
  "abc",
  "ABC",
  "",
];

const FIELDS = new Set(["id", "title"]);

/** The filters asked for each word. */
function filters(w: string): string[] {
  const q = JSON.stringify;
  const head = [...w].slice(0, 2).join("");
  return [
    `title.toLowerCase() == ${q(w.toLowerCase())}`,
    `title.toUpperCase() == ${q(w.toUpperCase())}`,
    `fold(title) == fold(${q(w)})`,
    `fold(title).includes(fold(${q(head)}))`,
    `fold(title).startsWith(fold(${q(head)}))`,
    `fold(title) != ${q(foldText(w))}`,
    `title.toUpperCase().length == ${w.toUpperCase().length}`,
    `fold(title.toUpperCase()) < ${q(foldText(w))}`,
  ];
}

async function listAll(
  s: TestServer,
  token: string,
  filter: string,
): Promise<{ ids: string[]; perRow: boolean }> {
  const r = await s.request(
    "GET",
    `/api/v1/entities/words?limit=500&filter=${encodeURIComponent(filter)}`,
    { token },
  );
  assert.equal(r.status, 200, `${filter}: ${r.text}`);
  return {
    ids: r.data.items.map((x: { id: string }) => x.id).sort(),
    perRow: r.headers.get("x-moonbase-checked") !== null,
  };
}

forEachDb("text functions: JavaScript's results in SQL", async (t, db) => {
  const s = await startServer(db);
  try {
    const token = await s.adminToken();
    await createEntity(s, {
      name: "words",
      fields: [{ name: "title", type: "string" }, { name: "n", type: "int" }],
      indexes: [{ fields: ["fold(title)"] }],
    });
    for (const w of WORDS) await createRecord(s, "words", { title: w });
    await createRecord(s, "words", { n: 1 });
    // As stored (an empty string may come back as null).
    const rows: { id: string; title: string | null }[] = (await s.request(
      "GET",
      "/api/v1/entities/words?limit=500",
      { token },
    )).data.items;
    assert.equal(rows.length, WORDS.length + 1);

    await t.step(
      "each filter selects what JavaScript selects, in SQL",
      async () => {
        for (const w of WORDS) {
          for (const f of filters(w)) {
            const expr = parseExpression(f, { mode: "filter", fields: FIELDS });
            const want = rows.filter((r) => evaluate(expr, { ...r, auth: {} }))
              .map((r) => r.id).sort();
            const got = await listAll(s, token, f);
            assert.deepEqual(got.ids, want, `${db}: ${f}`);
            // Order against text with units ≥ U+D800 differs between UTF-8 and
            // UTF-16: checked row by row (as for any text column).
            const utf16 = f.includes("<") && /[\uD800-\uFFFF]/.test(f);
            assert.equal(got.perRow, utf16, `${f} runs in SQL`);
          }
        }
      },
    );

    await t.step(
      "the SQL functions equal the JavaScript reference",
      async () => {
        const out = await s.app.storage.query(
          `SELECT "id", mb_lower("title") AS l, mb_upper("title") AS u, mb_fold("title") AS f FROM "words"`,
        );
        for (const row of out) {
          const title = rows.find((r) => r.id === row.id)!.title;
          if (title === null) {
            assert.deepEqual([row.l, row.u, row.f], [null, null, null]);
            continue;
          }
          assert.equal(row.l, title.toLowerCase(), `lower ${title}`);
          assert.equal(row.u, title.toUpperCase(), `upper ${title}`);
          assert.equal(row.f, foldText(title), `fold ${title}`);
        }
        assert.equal(foldText("Straße"), foldText("STRASSE"));
        assert.equal(foldText("ΟΔΟΣ"), foldText("οδός"));
        assert.equal(foldText("İstanbul"), foldText("istanbul"));
        assert.equal(foldText("ﬁne"), "fine");
      },
    );

    await t.step(
      "every code point JavaScript maps maps alike in SQL",
      async () => {
        const chars = changingChars();
        const literal = `{${
          chars.map((c) => `"${c === '"' || c === "\\" ? "\\" + c : c}"`).join(
            ",",
          )
        }}`;
        const out = db === "postgres"
          ? await s.app.storage.query(
            `SELECT mb_lower(c) AS l, mb_upper(c) AS u, mb_fold(c) AS f FROM unnest(?::text[]) WITH ORDINALITY AS x(c, i) ORDER BY i`,
            [literal],
          )
          : await s.app.storage.query(
            `SELECT mb_lower(value) AS l, mb_upper(value) AS u, mb_fold(value) AS f FROM json_each(?) ORDER BY key`,
            [JSON.stringify(chars)],
          );
        const wrong = chars.filter((c, i) =>
          out[i].l !== c.toLowerCase() || out[i].u !== c.toUpperCase() ||
          out[i].f !== foldText(c)
        ).map((c) => c.codePointAt(0)!.toString(16));
        assert.ok(chars.length > 10_000, "candidates");
        assert.deepEqual(wrong, []);
      },
    );

    await t.step("a lone surrogate is refused as before", async () => {
      const r = await s.request("POST", "/api/v1/entities/words", {
        token,
        raw: '{"title": "a\\ud800"}',
        headers: { "content-type": "application/json" },
      });
      assert.equal(r.status, 400, r.text);
      // In a filter it is not compiled: checked row by row, and matches nothing.
      const got = await listAll(s, token, 'fold(title) == "\\ud800"');
      assert.deepEqual(got, { ids: [], perRow: true });
    });

    await t.step(
      "fold(title) == and startsWith use the fold index",
      async () => {
        const ctx = {
          dialect: db,
          column: (n: string) => FIELDS.has(n) ? columnOf(n) : undefined,
          fieldType: () => "string",
          scope: { auth: {} },
        };
        for (
          const f of [
            'fold(title) == fold("Émile")',
            'fold(title).startsWith("em")',
          ]
        ) {
          const q = compileToSql(
            parseExpression(f, { mode: "filter", fields: FIELDS }),
            ctx,
          )!;
          const plan = await explain(
            s,
            `SELECT "id" FROM "words" WHERE ${q.sql}`,
            q.params,
          );
          assert.match(plan, /mbx_/, `${db}: ${f}\n${plan}`);
        }
      },
    );

    await t.step(
      "a unique fold index refuses values equal but for case",
      async () => {
        const admin = await asAdmin(s);
        await createEntity(s, {
          name: "handles",
          fields: [{ name: "name", type: "string" }],
          indexes: [{ fields: ["fold(name)"], unique: true }],
        });
        await createRecord(s, "handles", { name: "Émile" });
        const r = await admin.post("entities/handles", { name: "EMILE" });
        assert.equal(r.status, 409, r.text);
        assert.deepEqual(Object.keys(r.data?.fields ?? {}), ["name"], r.text);
        const bad = await admin.post("schemas", {
          name: "nums",
          type: "base",
          fields: [{ name: "n", type: "int" }],
          indexes: [{ fields: ["fold(n)"] }],
        });
        assert.equal(bad.status, 400, bad.text);
        assert.match(bad.error, /only string, text, email, url and select/);
        // A rename keeps the index, under the new name.
        const schema = (await admin.get("schemas/handles")).data;
        const id = schema.fields.find((f: { name: string }) =>
          f.name === "name"
        ).id;
        const p = await admin.patch("schemas/handles", {
          fields: [{ id, name: "handle", type: "string" }],
        });
        assert.equal(p.status, 200, p.text);
        assert.deepEqual(
          p.data.indexes.map((i: { fields: string[] }) => i.fields),
          [["fold(handle)"]],
        );
        const again = await admin.post("entities/handles", { handle: "emile" });
        assert.equal(again.status, 409, again.text);
      },
    );
  } finally {
    await s.close();
  }
});

/** The query plan of `sql` (PostgreSQL: sequential scans off, so a usable index shows). */
async function explain(
  s: TestServer,
  sql: string,
  params: unknown[],
): Promise<string> {
  const store = s.app.storage;
  if (store.dialect.name === "sqlite") {
    const rows = await store.query(
      `EXPLAIN QUERY PLAN ${sql}`,
      params as never,
    );
    return rows.map((r) => String(r.detail)).join("\n");
  }
  return await store.transaction(async (tx) => {
    await tx.exec("SET LOCAL enable_seqscan = off");
    const rows = await tx.query(`EXPLAIN ${sql}`, params as never);
    return rows.map((r) => String(Object.values(r)[0])).join("\n");
  });
}
