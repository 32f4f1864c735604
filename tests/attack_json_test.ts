/**
 * Security review of json reads compiled to SQL (issue 13 item 5): odd
 * stored JSON (lone surrogates, quotes, backslashes, LIKE wildcards,
 * number-like strings, huge and tiny numbers, keys with `$`, own
 * `toString`/`valueOf`/`length` keys) selects the same rows in SQL as per
 * row; a rule that is only a prefilter in SQL shows, reads, updates and
 * deletes exactly what the evaluator allows; large json expressions answer
 * 200 or 400, never 500.
 */
import assert from "node:assert/strict";
import {
  forEachDb,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";

const q = encodeURIComponent;
const checked = (r: { headers: Headers }) =>
  r.headers.get("x-moonbase-checked");

const LEAVES: unknown[] = [
  ...["undefined", "null", "[object Object]", "7,8", "true", '"', "\\", "'"],
  ...["\n", "\u2028", "\u007f", "a\u0001", "$", "${a}", "%", "_", "a%"],
  ...["1e400", "Infinity", "NaN", "0.0", "-0", "00", ".5", "+5", "0b11"],
  ...["\ufffd", "x\ufffd", "é", "e\u0301", "😀"],
  ...[1e21, 1e-7, 5e-324, 1.7976931348623157e308, -0, 0.1 + 0.2],
  ...[123456789012345678, 9007199254740993, 7, 0],
  ...[[[7]], [[["x"]]], ["7"], [7, 8], [{ a: 7 }], [null], [[]], [true]],
  ...[[false], [0], [""], ["%"], ["_"]],
  ...[{ toString: "x" }, { valueOf: 7 }, { length: 1 }, { $: 1 }, { a: 7 }],
  ...[true, false, null],
];

/** Strings that are not well-formed Unicode: refused (400) on both databases. */
const LONE = ["\ud800", "x\ud800y", "\udc00"];

const FILTERS = [
  'meta.a === "\ufffd"',
  'meta.a !== "\ufffd"',
  'meta.a.includes("\ufffd")',
  'meta.a === "x\ufffd"',
  "meta.a",
  "!meta.a",
  'meta.a == "7,8"',
  'meta.a === "\\""',
  'meta.a === "\\\\"',
  'meta.a === "\'"',
  'meta.a.includes("%")',
  'meta.a.includes("_")',
  'meta.a.includes("\\\\")',
  "meta.a.includes(7)",
  "meta.a.includes(-0)",
  'meta.a.includes("")',
  "meta.a.includes(null)",
  "meta.a.includes(undefined)",
  "meta.a.includes(auth.nothing)",
  "meta.a.includes(auth)",
  "meta.a == auth",
  "meta.a == auth.nothing",
  'meta.a < "a"',
  'meta.a > "\u007f"',
  "meta.a < 1e21",
  "meta.a === 1e21",
  "meta.a === 123456789012345678",
  "meta.a === 9007199254740993",
  "meta.a === 5e-324",
  "meta.a >= 1.7976931348623157e308",
  "meta.a === 0.30000000000000004",
  "meta.a == 0",
  "meta.a > 1e308",
  "meta.$a === 7",
  "meta.a$ === 7",
  "meta._ === 7",
  "meta.toString",
  "meta.valueOf === 7",
  "meta.a.toString",
  "meta.a.$ === 1",
  "meta.a.a === 7",
  "!meta.a.a",
];

async function things(s: TestServer, admin: string) {
  const r = await s.request("POST", "/api/v1/schemas", {
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
}

forEachDb("attack json: odd stored JSON, SQL equals per row", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    await things(s, admin);
    const metas: unknown[] = [
      ...LEAVES.map((a) => ({ a })),
      ...LEAVES.map((a) => ({ $a: a, a$: a, _: a, toString: a, valueOf: a })),
      ...LEAVES,
    ];
    for (const [i, meta] of [...metas, ...LONE.map((a) => ({ a }))].entries()) {
      const r = await s.request("POST", "/api/v1/entities/things", {
        token: admin,
        body: { title: `t${i}`, meta },
      });
      const lone = i >= metas.length;
      // PostgreSQL's jsonb cannot hold a lone surrogate, nor a text column
      // on either database: a 400 on both, never a 500.
      const want = lone ? 400 : 201;
      assert.equal(r.status, want, `${JSON.stringify(meta)}: ${r.text}`);
    }
    const titles = async (filter: string) => {
      const p = await s.request(
        "GET",
        `/api/v1/entities/things?limit=500&filter=${q(filter)}`,
        { token: admin },
      );
      assert.equal(p.status, 200, `${filter}: ${p.text}`);
      return {
        header: checked(p),
        titles: p.data.items.map((x: { title: string }) => x.title).sort(),
      };
    };
    for (const f of FILTERS) {
      await t.step(f, async () => {
        const sql = await titles(f);
        // `title + ""` is never compiled: the whole filter runs per row.
        const js = await titles(`(${f}) && (title + "") !== "-"`);
        assert.match(String(js.header), /^per-row/);
        assert.deepEqual(sql.titles, js.titles);
      });
    }
  } finally {
    await s.close();
  }
});

/** An auth entity `members` with one user; its id and token. */
async function member(s: TestServer, admin: string) {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: { name: "members", type: "auth", fields: [] },
  });
  assert.equal(r.status, 201, r.text);
  const u = await seedUser(s, "members", { email: "m@example.com" }, "pw-1234");
  const members = s.app.schemas.get("members")!;
  const token =
    (await s.app.sessions.issue(members, (await members.read(u.id))!)).token;
  return { id: u.id, token };
}

forEachDb(
  "attack json: a prefiltered rule allows exactly what the evaluator allows",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      const user = await member(s, admin);
      const rule = {
        mode: "custom",
        expr: "record.meta.owner == auth.id || record.meta.n < 3",
      };
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "docs",
          type: "base",
          fields: [{ name: "title", type: "string" }, {
            name: "meta",
            type: "json",
          }],
          rules: { list: rule, get: rule, update: rule, delete: rule },
        },
      });
      assert.equal(r.status, 201, r.text);
      const u = user.id;
      // [label, meta]: "v" rows are visible to the user, "h" rows hidden.
      const rows: [string, unknown][] = [
        ["v1", { owner: u }],
        ["v2", { owner: [u] }],
        ["v3", { owner: [[u]] }],
        ["h1", { owner: [u, "x"] }],
        ["h2", { owner: ` ${u}` }],
        ["h3", { owner: { toString: u } }],
        ["h4", { owner: {} }],
        ["h5", { owner: 7 }],
        ["h6", { owner: null }],
        ["v4", { n: 2 }],
        ["v5", { n: " 2 " }],
        ["v6", { n: [2] }],
        ["v7", { n: null }],
        ["v8", { n: true }],
        ["v9", { n: [] }],
        ["va", { n: "" }],
        ["vb", { n: "0x2" }],
        ["h7", { n: "abc" }],
        ["h8", { n: 3 }],
        ["h9", { n: {} }],
        ["ha", { n: [1, 2] }],
        ["hb", { n: "1e400" }],
        ["hc", {}],
        ["hd", null],
        ["he", [u]],
      ];
      const ids = new Map<string, string>();
      for (const [title, meta] of rows) {
        const c = await s.request("POST", "/api/v1/entities/docs", {
          token: admin,
          body: { title, meta },
        });
        assert.equal(c.status, 201, c.text);
        ids.set(title, c.data.id);
      }
      const visible = rows.map(([t]) => t).filter((t) => t[0] === "v").sort();
      const list = await s.request("GET", "/api/v1/entities/docs?limit=100", {
        token: user.token,
      });
      assert.equal(list.status, 200, list.text);
      assert.match(String(checked(list)), /^per-row/);
      const seen = list.data.items.map((x: { title: string }) => x.title);
      assert.deepEqual(seen.sort(), visible);
      // The client's filter runs per row under the prefiltered rule.
      const f = await s.request(
        "GET",
        `/api/v1/entities/docs?limit=100&filter=${q("meta.n == 2")}`,
        { token: user.token },
      );
      assert.equal(f.status, 200, f.text);
      assert.deepEqual(
        f.data.items.map((x: { title: string }) => x.title).sort(),
        ["v4", "v5", "v6", "vb"], // Number("0x2") is 2
      );
      for (const [title] of rows) {
        const path = `/api/v1/entities/docs/${ids.get(title)}`;
        const want = title[0] === "v" ? 200 : 404;
        const g = await s.request("GET", path, { token: user.token });
        assert.equal(g.status, want, `get ${title}: ${g.text}`);
        const p = await s.request("PATCH", path, {
          token: user.token,
          body: { title },
        });
        assert.equal(p.status, want, `update ${title}: ${p.text}`);
      }
      for (const [title] of rows) {
        const path = `/api/v1/entities/docs/${ids.get(title)}`;
        const d = await s.request("DELETE", path, { token: user.token });
        assert.equal(d.status, title[0] === "v" ? 204 : 404, `delete ${title}`);
      }
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "attack json: large json expressions never answer 500",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const admin = await s.adminToken();
      await things(s, admin);
      for (const meta of [{ a: 1 }, { a: "x" }, { a: [1] }, { a: { a: 1 } }]) {
        const c = await s.request("POST", "/api/v1/entities/things", {
          token: admin,
          body: { title: "t", meta },
        });
        assert.equal(c.status, 201, c.text);
      }
      const join = (n: number, f: (i: number) => string, op: string) =>
        Array.from({ length: n }, (_, i) => f(i)).join(op);
      const filters = [
        "meta" + ".a".repeat(490) + " === 1",
        "meta" + ".a".repeat(490) + " == 1",
        "meta" + ".a".repeat(2000) + " == 1",
        join(99, (i) => `meta.a===${i}`, "||"),
        join(99, (i) => `meta.a==${i}`, "||"),
        join(99, (i) => `meta.a<"${i}"`, "&&"),
        join(99, (i) => `meta.a<${i}`, "!="),
        join(99, (i) => `meta.a==${i}`, "=="),
        join(60, (i) => `meta.a.a.a.a.includes(${i})`, "||"),
        "!".repeat(40) + "meta.a",
      ];
      for (const f of filters) {
        const p = await s.request(
          "GET",
          `/api/v1/entities/things?filter=${q(f)}`,
          { token: admin },
        );
        assert.ok(p.status === 200 || p.status === 400, `${f}: ${p.text}`);
      }
    } finally {
      await s.close();
    }
  },
);
