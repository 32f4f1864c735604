/**
 * Field patterns cannot block the server (issue 13, item 4): patterns run on
 * a linear-time engine, a request's pattern work is bounded, and what that
 * engine cannot run is refused when the schema is saved.
 */
import assert from "node:assert/strict";
import {
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createEntity } from "./_scenarios.ts";
import { pause, within } from "./_wait.ts";

/** The two patterns of the finding: exponential on a backtracking engine. */
const FIELDS = [
  { name: "word", type: "string", pattern: "^(\\w|\\d)*$" },
  { name: "digits", type: "text", pattern: "^\\d*\\d*\\d*\\d*\\d*\\d*$" },
];
const PUBLIC = { mode: "public", expr: "" };
/**
 * When a request counts as hung. No claim about speed: a backtracking engine
 * needs about 2^5000 steps for the 5000-character value below, so any answer
 * at all proves the linear engine ran (timings belong to `deno task bench`).
 */
const DEADLINE = 30_000;

async function codes(s: TestServer, fields: unknown[] = FIELDS): Promise<void> {
  await createEntity(s, {
    name: "codes",
    fields,
    rules: { add: PUBLIC, get: PUBLIC, list: PUBLIC },
  });
}

const post = (s: TestServer, body: Record<string, unknown>) =>
  s.request("POST", "/api/v1/entities/codes", { body });

/**
 * Runs `fn` while watching JavaScript's own (backtracking) RegExp engine:
 * how many times it was given `value` to match. Every native match (`test`,
 * `match`, `replace`, `split`…) goes through `RegExp.prototype.exec` once it
 * is replaced.
 */
async function nativeMatchesOf<T>(
  value: string,
  fn: () => Promise<T>,
): Promise<{ out: T; matches: number }> {
  const exec = RegExp.prototype.exec;
  let matches = 0;
  RegExp.prototype.exec = function (this: RegExp, s: string) {
    if (s === value) matches++;
    return exec.call(this, s);
  };
  try {
    return { out: await fn(), matches };
  } finally {
    RegExp.prototype.exec = exec;
  }
}

function assertFieldError(r: Reply, field: string, message: RegExp): void {
  assert.equal(r.status, 400, r.text.slice(0, 300));
  assert.equal(r.data?.fields?.[field]?.code, "pattern", r.text.slice(0, 300));
  assert.match(r.data.fields[field].message, message);
}

forEachDb(
  "patterns: a guest's value cannot block the event loop",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await codes(s);
      for (const { name } of FIELDS) {
        for (const n of [30, 5000]) {
          const evil = "1".repeat(n - 1) + "!";
          const { out: [w, h], matches } = await nativeMatchesOf(
            evil,
            () => {
              const write = post(s, { [name]: evil });
              // Health is asked while the write is being checked, and must
              // answer.
              return pause(1).then(() =>
                within(
                  `${name}, ${n} characters`,
                  DEADLINE,
                  Promise.all([write, s.request("GET", "/api/v1/health")]),
                )
              );
            },
          );
          assertFieldError(w, name, /Does not match the required pattern/);
          assert.equal(h.status, 200, h.text);
          // The structural proof: the backtracking engine never saw the value.
          assert.equal(matches, 0, `${name}: matched by RegExp ${matches}×`);
        }
      }
      const rows = await s.request("GET", "/api/v1/entities/codes");
      assert.equal(rows.data.items.length, 0, "nothing written");
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "patterns: valid values still pass, JavaScript syntax kept",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await codes(s, [
        ...FIELDS,
        { name: "slug", type: "string", pattern: "^[a-z0-9_]+$" },
        { name: "day", type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
        { name: "greek", type: "string", pattern: "^\\p{Script=Greek}+\\s?$" },
        { name: "named", type: "string", pattern: "^(?<a>x|y){2,3}\\.?$" },
      ]);
      const good = {
        word: "abc_123",
        digits: "1".repeat(5000),
        slug: "moon_base",
        day: "2024-02-29",
        greek: "αβγ\u00a0",
        named: "xyx.",
      };
      const r = await post(s, good);
      assert.equal(r.status, 201, r.text.slice(0, 300));
      assert.equal(r.data.digits.length, 5000);
      for (
        const [field, value] of [
          ["slug", "Moon"],
          ["day", "2024-2-29"],
          ["greek", "abc"],
          ["named", "xyzx"],
          ["word", "a b"],
        ]
      ) {
        assertFieldError(
          await post(s, { [field]: value }),
          field,
          /Does not match the required pattern/,
        );
      }
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "patterns: each value and each request is bounded",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const heavy = "^[a-z]{0,900}$"; // ~1800 engine steps per character
      await codes(s, [
        ...FIELDS,
        { name: "h1", type: "text", pattern: heavy },
        { name: "h2", type: "text", pattern: heavy },
      ]);
      assertFieldError(
        await post(s, { word: "1".repeat(10_001) }),
        "word",
        /Too long to check against the pattern \(10000 characters at most\)/,
      );
      // 2 × 5000 characters × ~1800 steps: past the record's budget, counted
      // before any matching (the budget is counted work, not time).
      const r = await within(
        "a record past its pattern budget",
        DEADLINE,
        post(s, { h1: "a".repeat(5000), h2: "a".repeat(5000) }),
      );
      assert.equal(r.status, 400, r.text.slice(0, 300));
      const messages = Object.values(r.data.fields).map((f) =>
        (f as { message: string }).message
      );
      assert.ok(
        messages.some((m) => /Too much text to check against patterns/.test(m)),
        r.text.slice(0, 300),
      );
      assert.equal((await post(s, { h1: "abc", h2: "xyz" })).status, 201);
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "patterns: what the engine cannot run is refused at schema time",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      const token = await s.adminToken();
      const cases: [string, RegExp][] = [
        ["(a)\\1", /backreferences/],
        ["(?<n>a)\\k<n>", /backreferences/],
        ["^(?=a)\\w+$", /lookahead and lookbehind/],
        ["^(?!a)\\w+$", /lookahead and lookbehind/],
        ["(?<=a)b", /lookahead and lookbehind/],
        ["(?<!a)b", /lookahead and lookbehind/],
        ["a{1001}", /not supported by the linear-time engine/],
        ["[a-z]{1,999}[0-9]{1,999}", /too complex/],
        ["(", /not a valid regular expression/],
      ];
      for (const [pattern, why] of cases) {
        const r = await s.request("POST", "/api/v1/schemas", {
          token,
          body: {
            name: "bad",
            type: "base",
            fields: [{ name: "code", type: "string", pattern }],
          },
        });
        assert.equal(r.status, 400, `${pattern}: ${r.text}`);
        assert.match(r.error, /field "code"\.pattern/);
        assert.match(r.error, why);
      }
      await codes(s);
      const r = await s.request("PATCH", "/api/v1/schemas/codes", {
        token,
        body: { fields: [{ name: "late", type: "string", pattern: "a(?=b)" }] },
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.error, /field "late"\.pattern: lookahead/);
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "patterns: a stored pattern the engine refuses loads and guards writes",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await codes(s);
      // A schema saved before this engine: its `word` pattern has a lookahead.
      const rows = await s.app.storage.query(
        `SELECT "schema" FROM "mb_tables" WHERE "name" = 'codes'`,
      );
      const schema = JSON.parse(String(rows[0].schema));
      schema.fields.find((f: { name: string }) => f.name === "word").pattern =
        "^(?=x)\\w+$";
      await s.app.storage.run(
        `UPDATE "mb_tables" SET "schema" = ? WHERE "name" = 'codes'`,
        [JSON.stringify(schema)],
      );
      await s.app.schemas.load();
      assert.equal((await s.request("GET", "/api/v1/health")).status, 200);
      assertFieldError(
        await post(s, { word: "xyz" }),
        "word",
        /Cannot check against the pattern \(lookahead and lookbehind are not supported\): an admin must change it/,
      );
      assert.equal((await post(s, { digits: "123" })).status, 201);
    } finally {
      await s.close();
    }
  },
);
