/**
 * Reads of json fields in filters and rules run in SQL (issue 13 item 5):
 * on a 20 000-row entity `meta.kind === "a"` and the rule
 * `record.meta.owner === auth.id` need no per-row check (no
 * X-Moonbase-Checked header, count=true beyond the 5000-row scan budget),
 * and on a small table every JSON expression selects what the per-row
 * evaluator selects. What runs in SQL is told by the answers, not by their
 * times (timings belong to `deno task bench`).
 */
import assert from "node:assert/strict";
import {
  forEachDb,
  insertSeries,
  padded,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";
import { tableOf } from "../lib/schema/ddl.ts";

const ROWS = 20_000;

/**
 * A list request. What runs in SQL is told by the answer (no
 * X-Moonbase-Checked header), not by its time: timings belong to
 * `deno task bench`.
 */
function get(
  s: TestServer,
  _label: string,
  path: string,
  token: string,
) {
  return s.request("GET", `/api/v1/entities/${path}`, { token });
}

const q = encodeURIComponent;
const checked = (r: { headers: Headers }) =>
  r.headers.get("x-moonbase-checked");

/** An auth entity `members` with one user; returns the user's id and token. */
async function member(s: TestServer, admin: string) {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: { name: "members", type: "auth", fields: [] },
  });
  assert.equal(r.status, 201, r.text);
  const u = await seedUser(
    s,
    "members",
    { email: "m@example.com" },
    "pw-12345678",
  );
  const members = s.app.schemas.get("members")!;
  const token =
    (await s.app.sessions.issue(members, (await members.read(u.id))!)).token;
  return { id: u.id, token };
}

forEachDb("list: json reads compile to SQL at 20k rows", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    const user = await member(s, admin);
    const rule = { mode: "custom", expr: "record.meta.owner === auth.id" };
    const r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: {
        name: "docs",
        type: "base",
        fields: [{ name: "title", type: "string" }, {
          name: "meta",
          type: "json",
        }],
        rules: { list: rule, get: rule },
      },
    });
    assert.equal(r.status, 201, r.text);
    // meta = {kind: "a"|"b" (alternating), owner: the user on 2 rows of 3, n: i}
    const kind = "CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END";
    const owner = `CASE WHEN i % 3 = 0 THEN 'someone' ELSE ? END`;
    await insertSeries(
      s,
      "docs",
      ROWS,
      {
        id: padded("00000000-0000-7000-8000-", 12),
        title: "'doc ' || i",
        meta: {
          sqlite: `json_object('kind', ${kind}, 'owner', ${owner}, 'n', i)`,
          postgres:
            `jsonb_build_object('kind', ${kind}, 'owner', ${owner}::text, 'n', i)`,
        },
      },
      [user.id],
      0,
    );
    if (db === "postgres") {
      await s.app.storage.exec(`ANALYZE ${tableOf("docs")}`);
    }
    const owned = ROWS - Math.ceil(ROWS / 3);

    await t.step('filter=meta.kind === "a" runs in SQL', async () => {
      const path = `docs?count=true&filter=${q('meta.kind === "a"')}`;
      const p = await get(s, 'filter meta.kind === "a", count', path, admin);
      assert.equal(p.status, 200, p.text);
      assert.equal(checked(p), null, "compiled");
      assert.equal(p.data.total, ROWS / 2);
      assert.ok(
        p.data.items.every((x: { meta: { kind: string } }) =>
          x.meta.kind === "a"
        ),
      );
    });

    await t.step(
      "the rule record.meta.owner === auth.id runs in SQL",
      async () => {
        const p = await get(
          s,
          "rule meta.owner === auth.id, count",
          "docs?count=true&limit=10",
          user.token,
        );
        assert.equal(p.status, 200, p.text);
        assert.equal(checked(p), null, "compiled");
        assert.equal(p.data.total, owned);
        assert.ok(
          p.data.items.every((x: { meta: { owner: string } }) =>
            x.meta.owner === user.id
          ),
        );
        const f = await get(
          s,
          'rule + filter meta.kind === "b", count',
          `docs?count=true&filter=${q('meta.kind === "b"')}`,
          user.token,
        );
        assert.equal(f.status, 200, f.text);
        assert.equal(checked(f), null, "compiled");
        const odd = (i: number) => i % 2 === 1 && i % 3 !== 0;
        const all = Array.from({ length: ROWS }, (_, i) => i);
        assert.equal(f.data.total, all.filter(odd).length);
        // meta.n < 100 holds for the string " 5 " too (Number): strings are
        // checked per row, after SQL kept the numbers below 100 and the strings.
        const n = await get(
          s,
          'rule + filter meta.kind === "b" && meta.n < 100 (prefilter), count',
          `docs?count=true&filter=${q('meta.kind === "b" && meta.n < 100')}`,
          user.token,
        );
        assert.equal(n.status, 200, n.text);
        assert.match(String(checked(n)), /^per-row/);
        assert.equal(n.data.total, all.filter((i) => odd(i) && i < 100).length);
      },
    );

    await t.step(
      "a loose comparison narrows in SQL, then checks per row",
      async () => {
        // meta.n == 7 is true for the string "7" and for [7] too: SQL keeps
        // the rows it cannot decide and JavaScript checks them.
        const p = await get(
          s,
          "filter meta.n == 7 (prefilter), count",
          `docs?count=true&filter=${q("meta.n == 7")}`,
          admin,
        );
        assert.equal(p.status, 200, p.text);
        assert.match(String(checked(p)), /^per-row/);
        assert.equal(p.data.total, 1);
      },
    );
  } finally {
    await s.close();
  }
});

/** Values of `meta` on the small table: every JSON type at `meta.a`. */
const METAS: unknown[] = [
  null,
  {},
  "a",
  7,
  [7],
  ...["", "x", "u1", "7", " 7 ", "0x10", "[object Object]", "a,b", "é", "😀"]
    .map((a) => ({ a })),
  ...[0, -0, 7, 7.5, 16, 1e300, -1e-7, 2 ** 53 + 2, 23193437918487570]
    .map((a) => ({ a })),
  ...[true, false, null].map((a) => ({ a })),
  ...[[], ["x"], [7], ["a", "b"], [["x"]], [null], {}, { toString: 1 }]
    .map((a) => ({ a })),
  { a: { b: "x" } },
  { a: { b: 7 } },
  { b: "x" },
];

const EXPRESSIONS = [
  'meta.a === "x"',
  'meta.a !== "x"',
  "meta.a === 7",
  "meta.a === 23193437918487568",
  "meta.a === null",
  "meta.a === undefined",
  "meta.a === true",
  "meta.a == null",
  "meta.a != null",
  "meta.a",
  "!meta.a",
  "meta.a.b === 7",
  'meta.a.b === "x" || meta.a === false',
  "meta === 7",
  "!meta",
  'meta.a.includes("x")',
  "meta.a.includes(7)",
  "meta.a.includes(null)",
  'meta.a == "x"',
  'meta.a != "7"',
  "meta.a == 7",
  "meta.a < 8",
  "meta.a >= 16",
  'meta.a > "a"',
  "!(meta.a <= 7)",
];

forEachDb(
  "list: json expressions select what the per-row evaluator selects",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      let r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "things",
          type: "base",
          fields: [{ name: "title", type: "string" }, {
            name: "meta",
            type: "json",
          }],
        },
      });
      assert.equal(r.status, 201, r.text);
      for (const [i, meta] of METAS.entries()) {
        r = await s.request("POST", "/api/v1/entities/things", {
          token: admin,
          body: { title: `t${i}`, meta },
        });
        assert.equal(r.status, 201, `${JSON.stringify(meta)}: ${r.text}`);
      }
      const ids = async (filter: string) => {
        const p = await s.request(
          "GET",
          `/api/v1/entities/things?limit=500&filter=${q(filter)}`,
          { token: admin },
        );
        assert.equal(p.status, 200, `${filter}: ${p.text}`);
        return {
          header: checked(p),
          ids: p.data.items.map((x: { title: string }) => x.title).sort(),
        };
      };
      let exact = 0;
      for (const e of EXPRESSIONS) {
        await t.step(e, async () => {
          const sql = await ids(e);
          // `title + ""` cannot be compiled: the whole filter runs per row.
          const js = await ids(`(${e}) && (title + "") !== "-"`);
          assert.match(String(js.header), /^per-row/);
          assert.deepEqual(sql.ids, js.ids);
          if (sql.header === null) exact++;
        });
      }
      // ===, == null, truthiness and includes are exact; == and < on a
      // string or number constant are prefilters.
      console.log(`${db}: ${exact} of ${EXPRESSIONS.length} compiled exactly`);
      assert.ok(exact >= 17, `${exact} compiled exactly`);
    } finally {
      await s.close();
    }
  },
);
