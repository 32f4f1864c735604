import {
  deepStrictEqual as assertEquals,
  ok as assert,
} from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MoonbaseError } from "../errors.ts";
import { physicalName, type SqlValue } from "../db/storage.ts";
import {
  adminOnlyRules,
  type EntitySchema,
  type FieldDef,
  type FieldType,
} from "../schema/types.ts";
import {
  afterWhere,
  cursorOf,
  DEFAULT_LIMIT,
  MAX_LIMIT,
  orderBy,
  orderKeys,
  parseListOptions,
  type SortKey,
} from "./list_query.ts";

function field(name: string, type: FieldType): FieldDef {
  return { id: `f_${name}`, name, type, required: false, unique: false };
}

function schema(
  type: "base" | "auth" = "base",
  fields: FieldDef[] = [],
): EntitySchema {
  return {
    id: "e1",
    name: "posts",
    type,
    view_query: "",
    has_api: true,
    is_system: false,
    created: "",
    updated: "",
    rules: adminOnlyRules(),
    fields,
  };
}

const POSTS = schema("base", [
  field("title", "string"),
  field("views", "int"),
  field("meta", "json"),
  field("score", "double"),
]);

function parse(q: string, s: EntitySchema = POSTS) {
  return parseListOptions(s, new URLSearchParams(q));
}

function fails(q: string, s: EntitySchema = POSTS): string {
  try {
    parse(q, s);
  } catch (err) {
    assert(err instanceof MoonbaseError, `not a MoonbaseError: ${err}`);
    assertEquals(err.code, "invalid", q);
    assert(err.message.startsWith("Cannot list records"), err.message);
    return err.message;
  }
  throw new Error(`expected ${JSON.stringify(q)} to be refused`);
}

Deno.test("list_query: defaults", () => {
  assertEquals(parse(""), { limit: DEFAULT_LIMIT, sort: [], count: false });
  assertEquals(DEFAULT_LIMIT, 50);
  assertEquals(MAX_LIMIT, 500);
});

Deno.test("list_query: valid options", () => {
  const o = parse(
    "limit=500&sort=-created,title,+views&fields=id,title&count=true&filter=views > 1&token=abc",
  );
  assertEquals(o.limit, 500);
  assertEquals(o.sort, [
    { field: "created", desc: true },
    { field: "title", desc: false },
    { field: "views", desc: false },
  ]);
  assertEquals(o.fields, ["id", "title"]);
  assertEquals(o.count, true);
  assertEquals(o.filter, "views > 1");
  assertEquals(parse("limit=1").limit, 1);
  assertEquals(parse("count=1").count, true);
  assertEquals(parse("count=0").count, false);
  assertEquals(parse("count=false").count, false);
  assertEquals(parse("filter=%20%20").filter, undefined);
  assertEquals(parse("sort=").sort, []);
  assertEquals(parse("sort=-id").sort, [{ field: "id", desc: true }]);
});

Deno.test("list_query: parse errors are 400 invalid", () => {
  const refused = [
    "bogus=1",
    "limit=1&limit=2",
    "sort=title&sort=views",
    "limit=0",
    "limit=501",
    "limit=-1",
    "limit=abc",
    "limit=1.5",
    "limit=",
    "limit=1e2",
    "limit=%201",
    "limit=0000001000",
    "sort=nope",
    "sort=-nope",
    "sort=meta",
    "sort=title,-title",
    "sort=title,",
    "sort=id,created,updated,title,views,score",
    "fields=id,nope",
    "count=yes",
    "count=",
  ];
  for (const q of refused) fails(q);
  // The unknown name is echoed but bounded.
  const long = "x".repeat(1000);
  assert(fails(`${long}=1`).length < 200);
  assert(fails(`sort=${long}`).length < 200);
});

Deno.test("list_query: password is neither sortable nor selectable on auth entities", () => {
  const users = schema("auth");
  assertEquals(parse("sort=email", users).sort, [
    { field: "email", desc: false },
  ]);
  fails("sort=password", users);
  fails("fields=id,password", users);
  fails("filter=x&sort=-password", users);
});

Deno.test("list_query: after is kept as the sealed text (opened by the list)", () => {
  assertEquals(parse("after=abc").after, "abc");
  assertEquals(parse("after=").after, undefined);
});

Deno.test("list_query: orderKeys appends id unless it is a key", () => {
  assertEquals(orderKeys([]), [{ field: "id", desc: false }]);
  assertEquals(orderKeys([{ field: "title", desc: true }]), [
    { field: "title", desc: true },
    { field: "id", desc: false },
  ]);
  assertEquals(orderKeys([{ field: "id", desc: true }]), [
    { field: "id", desc: true },
  ]);
  assertEquals(
    orderBy(orderKeys([{ field: "title", desc: true }])),
    { sql: '"title" DESC NULLS LAST, "id" ASC', params: [] },
  );
});

Deno.test("list_query: afterWhere shape, ascending, with a value", () => {
  const w = afterWhere([{ field: "title", desc: false }, {
    field: "id",
    desc: false,
  }], ["b", "x"]);
  assertEquals(w.sql, '("title" > ?) OR ("title" = ? AND "id" > ?)');
  assertEquals(w.params, ["b", "b", "x"]);
});

Deno.test("list_query: afterWhere shape, ascending, NULL value", () => {
  const w = afterWhere([{ field: "title", desc: false }, {
    field: "id",
    desc: false,
  }], [null, "x"]);
  assertEquals(
    w.sql,
    '("title" IS NOT NULL) OR ("title" IS NULL AND "id" > ?)',
  );
  assertEquals(w.params, ["x"]);
});

Deno.test("list_query: afterWhere shape, descending, with a value", () => {
  const w = afterWhere([{ field: "views", desc: true }, {
    field: "id",
    desc: false,
  }], [5, "x"]);
  assertEquals(
    w.sql,
    '(("views" < ? OR "views" IS NULL)) OR ("views" = ? AND "id" > ?)',
  );
  assertEquals(w.params, [5, 5, "x"]);
});

Deno.test("list_query: afterWhere shape, descending, NULL value", () => {
  const w = afterWhere([{ field: "views", desc: true }, {
    field: "id",
    desc: false,
  }], [null, "x"]);
  // Nothing sorts below NULL in DESC NULLS LAST: only ties on NULL remain.
  assertEquals(w.sql, '("views" IS NULL AND "id" > ?)');
  assertEquals(w.params, ["x"]);
  // All keys NULL and descending: nothing comes after.
  assertEquals(
    afterWhere([{ field: "views", desc: true }], [null]).sql,
    "1 = 0",
  );
  assertEquals(afterWhere([], []).sql, "1 = 0");
});

Deno.test("list_query: afterWhere, NULL on a later descending key after a tie", () => {
  // sort=-views,-title: the cursor row has views 5 and a NULL title. The
  // placeholders and the parameters must line up.
  const keys: SortKey[] = [
    { field: "views", desc: true },
    { field: "title", desc: true },
    { field: "id", desc: false },
  ];
  const w = afterWhere(keys, [5, null, "x"]);
  assertEquals(
    w.sql,
    '(("views" < ? OR "views" IS NULL)) OR ("views" = ? AND "title" IS NULL AND "id" > ?)',
  );
  assertEquals(w.params, [5, 5, "x"]);
  assertEquals(w.sql.split("?").length - 1, w.params.length);
});

Deno.test("list_query: afterWhere placeholders always match parameters", () => {
  const values: SqlValue[] = [null, 1, "a"];
  const fields = ["a", "b", "c"];
  for (let mask = 0; mask < 8; mask++) {
    for (let v = 0; v < 27; v++) {
      const keys = fields.map((f, i) => ({
        field: f,
        desc: !!(mask & 1 << i),
      }));
      const vals = [v % 3, Math.floor(v / 3) % 3, Math.floor(v / 9)].map((
        k,
      ) => values[k]);
      const w = afterWhere(keys, vals);
      assertEquals(
        w.sql.split("?").length - 1,
        w.params.length,
        `${JSON.stringify(keys)} ${JSON.stringify(vals)}: ${w.sql} ${
          JSON.stringify(w.params)
        }`,
      );
    }
  }
});

Deno.test("list_query: afterWhere uses physical names for long fields", () => {
  const long = "f".repeat(64);
  const w = afterWhere([{ field: long, desc: false }], [1]);
  assertEquals(w.sql, `("${physicalName(long)}" > ?)`);
  assert(physicalName(long).length <= 63);
});

Deno.test("list_query: keyset pages equal the ORDER BY tail (NULLs, ties, desc)", () => {
  // Semantic check on SQLite: for every row and every order, the rows
  // strictly after it per afterWhere are exactly the rows after it in the
  // ORDER BY, in the same order.
  const db = new DatabaseSync(":memory:");
  try {
    db.exec(
      `CREATE TABLE t ("id" TEXT PRIMARY KEY, "title" TEXT, "views" INTEGER, "score" REAL)`,
    );
    const titles = [null, "a", "b", "b", null, "c"];
    const views = [null, 1, 1, 2, null, 3, 2];
    const ins = db.prepare(`INSERT INTO t VALUES (?, ?, ?, ?)`);
    for (let i = 0; i < 24; i++) {
      ins.run(
        `id${String(i).padStart(2, "0")}`,
        titles[i % titles.length],
        views[i % views.length],
        i % 4 === 0 ? null : (i % 3) / 2,
      );
    }
    const orders: SortKey[][] = [
      [],
      [{ field: "title", desc: false }],
      [{ field: "title", desc: true }],
      [{ field: "views", desc: true }, { field: "title", desc: false }],
      [{ field: "views", desc: false }, { field: "title", desc: true }],
      [{ field: "score", desc: true }, { field: "views", desc: true }, {
        field: "title",
        desc: true,
      }],
      [{ field: "title", desc: false }, { field: "id", desc: true }],
      [{ field: "id", desc: true }],
    ];
    for (const sort of orders) {
      const keys = orderKeys(sort);
      const ob = orderBy(keys).sql;
      const all = db.prepare(`SELECT * FROM t ORDER BY ${ob}`).all() as Record<
        string,
        unknown
      >[];
      assertEquals(all.length, 24);
      for (let i = 0; i < all.length; i++) {
        const w = afterWhere(keys, cursorOf(keys, all[i]));
        const rest = db.prepare(
          `SELECT "id" FROM t WHERE ${w.sql} ORDER BY ${ob}`,
        ).all(...(w.params as never[])).map((r) => r.id);
        assertEquals(
          rest,
          all.slice(i + 1).map((r) => r.id),
          `${JSON.stringify(sort)} after row ${i}`,
        );
      }
    }
  } finally {
    db.close();
  }
});
