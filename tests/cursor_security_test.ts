/**
 * List cursors cannot be used as an ordering oracle: they are sealed, bound
 * to entity, sort, filter and caller (400 otherwise), built only from rows
 * the caller was shown, and paging under a per-row rule still returns every
 * visible row exactly once — also past the per-request scan budget.
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
import {
  callerOf,
  type CursorContext,
  openCursor,
  sealCursor,
} from "../lib/records/list_cursor.ts";
import { MAX_SCAN } from "../lib/records/list.ts";
import { orderKeys } from "../lib/records/list_query.ts";

type Rec = Record<string, unknown> & { id: string };
interface Page {
  items: Rec[];
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

/** Not compiled to SQL (string concatenation): checked row by row in JavaScript. */
const JS_RULE = { mode: "custom", expr: '(record.owner + "") == auth.id' };
/** The same rule, compiled to SQL. */
const SQL_RULE = { mode: "custom", expr: "record.owner == auth.id" };

interface World {
  s: TestServer;
  admin: string;
  bob: { id: string; token: string };
  carol: { id: string; token: string };
}

async function world(s: TestServer): Promise<World> {
  const admin = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name: "people",
      type: "auth",
      fields: [],
      rules: {
        list: { mode: "public", expr: "" },
        get: { mode: "public", expr: "" },
      },
    },
  });
  assert.equal(r.status, 201, r.text);
  const people = s.app.schemas.get("people")!;
  const user = async (email: string) => {
    const u = await seedUser(s, "people", { email }, "password-123");
    const token =
      (await s.app.sessions.issue(people, (await people.read(u.id))!))
        .token;
    return { id: u.id, token };
  };
  return {
    s,
    admin,
    bob: await user("bob@example.com"),
    carol: await user("carol@example.com"),
  };
}

async function entity(
  w: World,
  name: string,
  rule: { mode: string; expr: string },
): Promise<void> {
  const r = await w.s.request("POST", "/api/v1/schemas", {
    token: w.admin,
    body: {
      name,
      type: "base",
      fields: [
        { name: "title", type: "string" },
        { name: "secret", type: "string" },
        { name: "owner", type: "string" },
        { name: "n", type: "int" },
      ],
      rules: { list: rule, get: rule, add: { mode: "public", expr: "" } },
    },
  });
  assert.equal(r.status, 201, r.text);
}

async function add(w: World, name: string, body: Record<string, unknown>) {
  const r = await w.s.request("POST", `/api/v1/entities/${name}`, {
    token: w.admin,
    body,
  });
  assert.equal(r.status, 201, r.text);
  return r.data as Rec;
}

async function list(w: World, token: string | undefined, path: string) {
  return await w.s.request("GET", `/api/v1/entities/${path}`, { token });
}

/** Walks every page; returns the items and each page. */
async function walk(
  w: World,
  token: string,
  name: string,
  params: string,
): Promise<{ items: Rec[]; pages: Page[] }> {
  const items: Rec[] = [], pages: Page[] = [];
  let after = "";
  for (let i = 0; i < 400; i++) {
    const r = await list(w, token, `${name}?${params}${after}`);
    assert.equal(r.status, 200, r.text);
    const p = r.data as Page;
    pages.push(p);
    items.push(...p.items);
    if (!p.has_more) {
      assert.equal(p.cursor, null);
      return { items, pages };
    }
    assert.ok(p.cursor, "has_more without cursor");
    after = `&after=${encodeURIComponent(p.cursor)}`;
  }
  throw new Error("more than 400 pages");
}

/** bob's rows "a…" and "z…" around carol's hidden row "m-secret". */
async function oracleSetup(w: World, name: string) {
  await entity(w, name, JS_RULE);
  const a = await add(w, name, { title: "a", secret: "a", owner: w.bob.id });
  const hidden = await add(w, name, {
    title: "hidden",
    secret: "m-secret",
    owner: w.carol.id,
  });
  const z = await add(w, name, { title: "z", secret: "z", owner: w.bob.id });
  return { a, hidden, z };
}

forEachDb(
  "cursors: bound to their query, never from hidden rows",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const w = await world(s);

      await t.step(
        "page 1's cursor is on the last shown row, not the hidden one",
        async () => {
          const { a, z } = await oracleSetup(w, "oracle1");
          const r = await list(w, w.bob.token, "oracle1?sort=created&limit=1");
          assert.equal(r.status, 200, r.text);
          const p = r.data as Page;
          assert.deepEqual(p.items.map((x) => x.id), [a.id]);
          assert.ok(p.has_more && p.cursor);
          const ctx: CursorContext = {
            key: s.app.cursorKey,
            caller: callerOf({ type: "user", entity: "people", id: w.bob.id }),
          };
          const opened = openCursor(ctx, {
            entityId: s.app.schemas.get("oracle1")!.id,
            keys: orderKeys([{ field: "created", desc: false }]),
            kinds: ["text", "text"],
          }, p.cursor);
          assert.equal(opened?.values?.[1], a.id);
          assert.equal(opened?.skip, 0);
          const r2 = await list(
            w,
            w.bob.token,
            `oracle1?sort=created&limit=1&after=${
              encodeURIComponent(p.cursor)
            }`,
          );
          assert.deepEqual((r2.data as Page).items.map((x) => x.id), [z.id]);
        },
      );

      await t.step("a cursor replayed on another query is a 400", async () => {
        await oracleSetup(w, "oracle2");
        await oracleSetup(w, "oracle2b");
        const r = await list(w, w.bob.token, "oracle2?sort=created&limit=1");
        const c = encodeURIComponent(String((r.data as Page).cursor));
        const own = encodeURIComponent(`title == "probe"`);
        const replays: [string | undefined, string][] = [
          [w.bob.token, `oracle2?sort=-created&limit=1&after=${c}`],
          [w.bob.token, `oracle2?sort=updated&limit=1&after=${c}`],
          [w.bob.token, `oracle2?limit=1&after=${c}`],
          [w.bob.token, `oracle2?sort=created&filter=${own}&after=${c}`],
          [w.bob.token, `oracle2b?sort=created&limit=1&after=${c}`],
          [w.carol.token, `oracle2?sort=created&limit=1&after=${c}`],
          [undefined, `oracle2?sort=created&limit=1&after=${c}`],
        ];
        for (const [token, path] of replays) {
          const x = await list(w, token, path);
          assert.equal(x.status, 400, `${path}: ${x.text}`);
          assert.match(x.error, /^Cannot use cursor: /);
        }
        // The same query (another limit is fine) still pages on.
        const ok = await list(
          w,
          w.bob.token,
          `oracle2?sort=created&limit=5&after=${c}`,
        );
        assert.equal(ok.status, 200, ok.text);
      });

      await t.step(
        "garbled, hand-made or wrongly typed cursors are 400s, never 500s",
        async () => {
          await entity(w, "garbled", JS_RULE);
          await add(w, "garbled", { title: "x", owner: w.bob.id, n: 1 });
          const made = btoa(JSON.stringify(["x", "y"])).replaceAll("=", "");
          const forged = sealCursor(
            {
              key: s.app.cursorKey,
              caller: callerOf({
                type: "user",
                entity: "people",
                id: w.bob.id,
              }),
            },
            {
              entityId: s.app.schemas.get("garbled")!.id,
              keys: orderKeys([{ field: "created", desc: false }]),
              kinds: ["text", "text"],
            },
            { values: [123, "id"], skip: 0 },
          );
          for (
            const bad of [
              "s.AAAA",
              made,
              "W10",
              "%E2%82%AC",
              "A".repeat(200),
              forged,
            ]
          ) {
            const x = await list(
              w,
              w.bob.token,
              `garbled?sort=created&after=${bad}`,
            );
            assert.equal(x.status, 400, `${bad}: ${x.text}`);
          }
        },
      );

      await t.step(
        "under a per-row rule only id, created and updated may sort",
        async () => {
          await oracleSetup(w, "sorted");
          for (const sort of ["secret", "-title", "created,n", "+owner"]) {
            const x = await list(w, w.bob.token, `sorted?sort=${sort}`);
            assert.equal(x.status, 400, `${sort}: ${x.text}`);
            assert.match(
              x.error,
              /^Cannot sort by \w+: the list rule is checked row by row/,
            );
          }
          // Admins pass every rule: any sort.
          const admin = await s.adminToken();
          const y = await list(w, admin, "sorted?sort=secret");
          assert.equal(y.status, 200, y.text);
          // A rule compiled to SQL hides rows in SQL: any sort.
          await entity(w, "sorted_sql", SQL_RULE);
          const z = await list(w, w.bob.token, "sorted_sql?sort=-title");
          assert.equal(z.status, 200, z.text);
        },
      );

      await t.step(
        "paging under a per-row rule returns each visible row once",
        async () => {
          await entity(w, "walked", JS_RULE);
          const mine: string[] = [];
          for (let i = 0; i < 60; i++) {
            const owner = i % 3 === 0 ? w.bob.id : w.carol.id;
            const rec = await add(w, "walked", {
              title: `t${(i * 7) % 13}`,
              secret: `s${i % 5}`,
              owner,
              n: i % 4 === 0 ? null : (i * 37) % 11,
            });
            if (owner === w.bob.id) mine.push(rec.id);
          }
          for (const sort of ["", "-created", "updated,-id", "created,-id"]) {
            const { items, pages } = await walk(
              w,
              w.bob.token,
              "walked",
              `limit=3&sort=${sort}`,
            );
            assert.deepEqual(
              items.map((x) => x.id).sort(),
              [...mine].sort(),
              sort,
            );
            assert.ok(pages.length >= 7, "several pages");
            const checked = await list(w, w.bob.token, `walked?sort=${sort}`);
            assert.equal(
              checked.headers.get("x-moonbase-checked")?.startsWith("per-row"),
              true,
            );
          }
          // The same rule compiled to SQL gives the same walk (and no per-row header).
          await entity(w, "walked_sql", SQL_RULE);
          const r = await list(w, w.bob.token, "walked_sql");
          assert.equal(r.headers.get("x-moonbase-checked"), null);
        },
      );
    } finally {
      await s.close();
    }
  },
);

/** Inserts `count` rows owned by `owner` with ids sorting before any made now. */
function bulk(
  s: TestServer,
  name: string,
  count: number,
  owner: string,
  prefix: string,
): Promise<void> {
  return insertSeries(s, name, count, {
    id: padded(prefix, 12),
    title: "'bulk'",
    owner: "?",
  }, [owner]);
}

forEachDb(
  "cursors: per-row scans are bounded and still reach every row",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const w = await world(s);

      await t.step(
        "visible rows behind more hidden rows than the budget",
        async () => {
          await entity(w, "sparse", JS_RULE);
          // Two bob rows first, then MAX_SCAN + 700 carol rows, then two more bob rows.
          await bulk(s, "sparse", 2, w.bob.id, "00000000-0000-7000-8000-");
          await bulk(
            s,
            "sparse",
            MAX_SCAN + 700,
            w.carol.id,
            "00000000-0000-7000-9000-",
          );
          const late1 = await add(w, "sparse", {
            title: "late",
            owner: w.bob.id,
          });
          const late2 = await add(w, "sparse", {
            title: "late",
            owner: w.bob.id,
          });
          const { items, pages } = await walk(
            w,
            w.bob.token,
            "sparse",
            "limit=50",
          );
          assert.equal(items.length, 4);
          assert.deepEqual(items.slice(2).map((x) => x.id), [
            late1.id,
            late2.id,
          ]);
          assert.equal(new Set(items.map((x) => x.id)).size, 4);
          assert.ok(pages.length >= 2, "the budget split the walk");
          // A page that showed nothing keeps the start position (no hidden row's values).
          const empty = pages.find((p) => p.items.length === 0 && p.has_more);
          if (empty) {
            const opened = openCursor({
              key: s.app.cursorKey,
              caller: callerOf({
                type: "user",
                entity: "people",
                id: w.bob.id,
              }),
            }, {
              entityId: s.app.schemas.get("sparse")!.id,
              keys: orderKeys([]),
              kinds: ["text"],
            }, empty.cursor!);
            assert.equal(opened.values?.[0], items[1].id);
            assert.ok(opened.skip > 0);
          }
        },
      );

      await t.step(
        "count=true under a per-row check: exact up to the budget, then 400",
        async () => {
          await entity(w, "counted", JS_RULE);
          await bulk(s, "counted", 30, w.bob.id, "00000000-0000-7000-8000-");
          await bulk(s, "counted", 40, w.carol.id, "00000000-0000-7000-9000-");
          const small = await list(
            w,
            w.bob.token,
            "counted?count=true&limit=5",
          );
          assert.equal(small.status, 200, small.text);
          assert.equal((small.data as Page).total, 30);
          await bulk(
            s,
            "counted",
            MAX_SCAN,
            w.carol.id,
            "00000000-0000-7000-a000-",
          );
          const big = await list(w, w.bob.token, "counted?count=true&limit=5");
          assert.equal(big.status, 400, big.text);
          assert.match(big.error, /^Cannot count records: /);
          // Without count the page is served.
          const page = await list(w, w.bob.token, "counted?limit=5");
          assert.equal(page.status, 200, page.text);
          // Admins see every row: their count is SQL, exact at any size.
          const admin = await list(w, w.admin, "counted?count=true&limit=1");
          assert.equal((admin.data as Page).total, 70 + MAX_SCAN);
        },
      );
    } finally {
      await s.close();
    }
  },
);
