/**
 * Full-text search (`?search=`) on both databases: every word (the last as a
 * prefix), case- and accent-insensitive, ranked, with filter, expand,
 * cursors and count, and only among the rows the list rule lets the caller
 * list — compared with the caller's own list, so a hidden row is never
 * counted, ranked or hinted at. Turning `searchable` on indexes the records
 * already there; off drops the index.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import {
  asAdmin,
  createEntity,
  createRecord,
  fieldId,
  userToken,
} from "./_scenarios.ts";
import { searchText, searchWords } from "../lib/rules/text_fold.ts";

interface Note {
  id: string;
  title: string | null;
  body: string | null;
  owner: string;
  secret: boolean;
}

/** Whether a record matches the words as the contract says (the reference). */
function matches(n: Note, search: string): boolean {
  const words = searchWords(search);
  const text = searchText(
    [n.title, n.body].filter((v) => v !== null).join(" "),
  )!;
  const tokens = text.split(" ");
  return words.every((w, i) =>
    tokens.some((t) => i === words.length - 1 ? t.startsWith(w) : t === w)
  );
}

async function list(
  s: TestServer,
  token: string,
  query: string,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const r = await s.request("GET", `/api/v1/entities/notes?${query}`, {
    token,
  });
  assert.equal(r.status, 200, `${query}: ${r.text}`);
  return r.data;
}

/** Every page of a list, following cursors. */
async function allPages(
  s: TestServer,
  token: string,
  query: string,
): Promise<string[]> {
  const ids: string[] = [];
  let after = "";
  for (let i = 0; i < 100; i++) {
    const page = await list(s, token, `${query}${after}`);
    ids.push(...page.items.map((x: { id: string }) => x.id));
    if (!page.has_more) return ids;
    after = `&after=${encodeURIComponent(page.cursor)}`;
  }
  throw new Error("too many pages");
}

const TEXTS: [string, string][] = [
  ["Émile Zola", "Germinal, a novel about miners"],
  ["EMILE's notes", "zoology lecture"],
  ["Straße", "la rue, die STRASSE"],
  ["Οδός", "ΟΔΟΣ street street street"],
  ["İstanbul", "istanbul guide"],
  ["ﬁne print", "fine details"],
  ["한국어", "Korean language"],
  ["Crème brûlée", "dessert: crème, sucre"],
  ['quotes "NEAR" * : \'', "title: body"],
  ["", "empty title"],
];

const SEARCHES = [
  "emile",
  "ÉMILE zo",
  "strasse",
  "οδος",
  "istanbul",
  "fine",
  "한국",
  "creme brul",
  "street",
  '"NEAR" *',
  "title:",
  "e",
  "nothing-matches-this",
  "' OR 1=1 --",
  "a & b | !c (d)",
];

forEachDb("search: words, rules, cursors and counts", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await asAdmin(s);
    const alice = await userToken(s, "alice@example.com");
    const bob = await userToken(s, "bob@example.com");
    const own = {
      mode: "custom",
      expr: "record.owner == auth.id || !record.secret",
    };
    await createEntity(s, {
      name: "notes",
      fields: [
        { name: "title", type: "string", searchable: true },
        { name: "body", type: "text", searchable: true },
        { name: "owner", type: "string" },
        { name: "secret", type: "bool" },
      ],
      rules: {
        list: own,
        get: own,
        add: { mode: "auth", expr: "" },
        update: { mode: "", expr: "" },
        delete: { mode: "", expr: "" },
      },
    });
    const notes: Note[] = [];
    const add = async (n: Omit<Note, "id">) => {
      const r = await createRecord(s, "notes", n);
      notes.push({ ...n, id: r.id });
      return r.id as string;
    };
    for (const [i, [title, body]] of TEXTS.entries()) {
      await add({ title, body, owner: alice.id, secret: false });
      // Alice's secret twins: bob never sees them.
      await add({ title, body: `${body} ${i}`, owner: alice.id, secret: true });
      await add({
        title: `${title} bob`,
        body,
        owner: bob.id,
        secret: i % 2 === 0,
      });
    }

    const visible = (who: { id: string }) =>
      notes.filter((n) => n.owner === who.id || !n.secret);

    await t.step(
      "the records that have every word, among the caller's",
      async () => {
        for (const who of [alice, bob]) {
          // The caller's own list, searched by the reference.
          const mine = await allPages(s, who.token, "limit=500&sort=id");
          assert.deepEqual(mine.sort(), visible(who).map((n) => n.id).sort());
          for (const q of SEARCHES) {
            const want = visible(who).filter((n) => matches(n, q)).map((n) =>
              n.id
            )
              .sort();
            if (searchWords(q).length === 0) continue;
            const page = await list(
              s,
              who.token,
              `limit=500&count=true&search=${encodeURIComponent(q)}`,
            );
            const got = page.items.map((x: { id: string }) => x.id).sort();
            assert.deepEqual(got, want, `${db} ${q}`);
            assert.equal(page.total, want.length, `count of ${q}`);
          }
        }
        assert.ok(
          visible(bob).filter((n) => matches(n, "emile")).length >= 2,
          "the table matches",
        );
      },
    );

    await t.step("aggregates count what the search lists", async () => {
      for (const q of ["emile", "street", "e"]) {
        const want = visible(bob).filter((n) => matches(n, q)).length;
        const r = await s.request(
          "GET",
          `/api/v1/entities/notes/aggregate?count=true&search=${q}`,
          { token: bob.token },
        );
        assert.equal(r.status, 200, r.text);
        assert.equal(r.data.groups[0]?.count ?? 0, want, q);
      }
    });

    await t.step(
      "ranked by relevance; cursors walk the same order",
      async () => {
        const ranked = await list(s, bob.token, "limit=500&search=street");
        const ids = ranked.items.map((x: { id: string }) => x.id);
        // "street street street" before a title with the word once.
        const first = notes.find((n) => n.id === ids[0])!;
        assert.match(first.body ?? "", /street street street/);
        const paged = await allPages(s, bob.token, "limit=1&search=street");
        assert.deepEqual(paged, ids);
        const e = await allPages(s, bob.token, "limit=2&search=e");
        assert.deepEqual(
          e,
          (await list(s, bob.token, "limit=500&search=e")).items.map((
            x: { id: string },
          ) => x.id),
        );
        // A cursor of one search does not serve another.
        const p1 = await list(s, bob.token, "limit=1&search=e");
        const r = await s.request(
          "GET",
          `/api/v1/entities/notes?limit=1&search=emile&after=${
            encodeURIComponent(p1.cursor)
          }`,
          { token: bob.token },
        );
        assert.equal(r.status, 400, r.text);
      },
    );

    await t.step("hidden records never move, count or reveal", async () => {
      const before = await list(
        s,
        bob.token,
        "limit=500&count=true&search=street",
      );
      // Many hidden records full of the word, and longer ones.
      for (let i = 0; i < 30; i++) {
        await add({
          title: "street",
          body: "street ".repeat(i + 1) + "x ".repeat(i * 5),
          owner: alice.id,
          secret: true,
        });
      }
      const after = await list(
        s,
        bob.token,
        "limit=500&count=true&search=street",
      );
      assert.deepEqual(after.items, before.items);
      assert.equal(after.total, before.total);
      assert.deepEqual(
        await allPages(s, bob.token, "limit=1&search=street"),
        before.items.map((x: { id: string }) => x.id),
      );
    });

    await t.step("with filter, sort and fields", async () => {
      const f = await list(
        s,
        bob.token,
        `limit=500&search=emile&filter=${
          encodeURIComponent("owner == auth.id")
        }&sort=-created&fields=id,title`,
      );
      const want = visible(bob).filter((n) =>
        matches(n, "emile") && n.owner === bob.id
      );
      assert.deepEqual(
        f.items.map((x: { id: string }) => x.id).sort(),
        want.map((n) => n.id).sort(),
      );
      assert.deepEqual(Object.keys(f.items[0]).sort(), ["id", "title"]);
    });

    await t.step("writes keep the index in step", async () => {
      const id = await add({
        title: "Quixotic",
        body: null,
        owner: bob.id,
        secret: false,
      });
      assert.equal((await list(s, bob.token, "search=quixo")).items.length, 1);
      const p = await admin.patch(`entities/notes/${id}`, { title: "Zany" });
      assert.equal(p.status, 200, p.text);
      assert.equal((await list(s, bob.token, "search=quixo")).items.length, 0);
      assert.equal((await list(s, bob.token, "search=zany")).items.length, 1);
      assert.equal((await admin.del(`entities/notes/${id}`)).status, 204);
      assert.equal((await list(s, bob.token, "search=zany")).items.length, 0);
      notes.splice(notes.findIndex((n) => n.id === id), 1);
    });

    await t.step(
      "renames keep the index; searchable off drops it",
      async () => {
        const title = await fieldId(s, "notes", "title");
        const r = await admin.patch("schemas/notes", {
          name: "notes2",
          fields: [{
            id: title,
            name: "heading",
            type: "string",
            searchable: true,
          }],
        });
        assert.equal(r.status, 200, r.text);
        const after = await s.request(
          "GET",
          "/api/v1/entities/notes2?search=zola",
          {
            token: bob.token,
          },
        );
        assert.equal(after.status, 200, after.text);
        assert.ok(after.data.items.length >= 1);
        const back = await admin.patch("schemas/notes2", { name: "notes" });
        assert.equal(back.status, 200, back.text);
        await createRecord(s, "notes", {
          heading: "Renamed field",
          owner: bob.id,
        });
        assert.equal(
          (await list(s, bob.token, "search=renamed")).items.length,
          1,
        );
      },
    );

    await t.step("no searchable field: 400 naming the fix", async () => {
      const body = await fieldId(s, "notes", "body");
      const heading = await fieldId(s, "notes", "heading");
      const r = await admin.patch("schemas/notes", {
        fields: [
          { id: body, name: "body", type: "text", searchable: false },
          { id: heading, name: "heading", type: "string", searchable: false },
        ],
      });
      assert.equal(r.status, 200, r.text);
      const q = await s.request("GET", "/api/v1/entities/notes?search=emile", {
        token: bob.token,
      });
      assert.equal(q.status, 400, q.text);
      assert.match(
        q.error,
        /no searchable field; mark a string or text field "searchable": true/,
      );
      const tables = await searchTables(s);
      assert.deepEqual(tables, [], "the index is dropped");
    });

    await t.step(
      "searchable on for a live entity indexes its records",
      async () => {
        const body = await fieldId(s, "notes", "body");
        const r = await admin.patch("schemas/notes", {
          fields: [{ id: body, name: "body", type: "text", searchable: true }],
        });
        assert.equal(r.status, 200, r.text);
        const want = visible(bob).filter((n) => {
          const words = searchText(n.body ?? "")!.split(" ");
          return words.some((w) => w.startsWith("stree"));
        });
        const page = await list(s, bob.token, "limit=500&search=stree");
        assert.equal(page.items.length, want.length);
        await s.app.log.flush();
        const logs = await s.request(
          "GET",
          "/api/v1/sys/logs?type=app&search=search%20index%20of%20notes",
          { token: await s.adminToken() },
        );
        assert.ok(
          logs.data.items.some((e: { message: string }) =>
            /records indexed/.test(e.message)
          ),
          JSON.stringify(
            logs.data.items.map((e: { message: string }) => e.message),
          ),
        );
      },
    );

    await t.step("bad searches are 400s", async () => {
      for (const q of ["!!!", "a ".repeat(17), "x".repeat(501)]) {
        const r = await s.request(
          "GET",
          `/api/v1/entities/notes?search=${encodeURIComponent(q)}`,
          { token: bob.token },
        );
        assert.equal(r.status, 400, `${q}: ${r.text}`);
      }
    });
  } finally {
    await s.close();
  }
});

forEachDb("search: under a rule checked row by row", async (t, db) => {
  const s = await startServer(db);
  try {
    const bob = await userToken(s, "bob@example.com");
    // A json comparison SQL cannot decide: the rule runs per row.
    const rule = { mode: "custom", expr: "record.meta.open == true" };
    await createEntity(s, {
      name: "notes",
      fields: [
        { name: "title", type: "string", searchable: true },
        { name: "meta", type: "json" },
      ],
      rules: { list: rule, get: rule },
    });
    const open: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await createRecord(s, "notes", {
        title: `report ${i % 3 === 0 ? "secret" : "public"}`,
        meta: { open: i % 2 === 0 },
      });
      if (i % 2 === 0 && i % 3 === 0) open.push(r.id);
    }
    await t.step(
      "relevance order is refused (hidden rows would choose the scan)",
      async () => {
        const r = await s.request(
          "GET",
          "/api/v1/entities/notes?search=secret",
          {
            token: bob.token,
          },
        );
        assert.equal(r.status, 400, r.text);
        assert.match(r.error, /checked row by row/);
      },
    );
    await t.step("with a sort, the search runs after the rule", async () => {
      const r = await s.request(
        "GET",
        "/api/v1/entities/notes?search=secret&sort=id&count=true&limit=500",
        { token: bob.token },
      );
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        r.data.items.map((x: { id: string }) => x.id).sort(),
        open.sort(),
      );
      assert.equal(r.data.total, open.length);
      assert.ok(r.headers.get("x-moonbase-checked"));
    });
  } finally {
    await s.close();
  }
});

/** The search tables in the database. */
async function searchTables(s: TestServer): Promise<string[]> {
  const rows = s.app.storage.dialect.name === "postgres"
    ? await s.app.storage.query(
      `SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'mb_search_%'`,
    )
    : await s.app.storage.query(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mb_search_%'`,
    );
  return rows.map((r) => String(r.name));
}

forEachDb(
  "search: another Unicode version rebuilds what fold computed",
  async (_t, db) => {
    const dataDir = await Deno.makeTempDir({ prefix: "mb_refold_" });
    let s = await startServer(db, { dataDir });
    const connection = s.connection;
    try {
      await createEntity(s, {
        name: "notes",
        fields: [{ name: "title", type: "string", searchable: true }],
        indexes: [{ fields: ["fold(title)"] }],
        rules: { list: { mode: "public", expr: "" } },
      });
      await createRecord(s, "notes", { title: "Émile Zola" });
      const table = (await s.app.storage.query(
        db === "postgres"
          ? `SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'mb_search_%'`
          : `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mb_search_%' AND name NOT LIKE '%_fts%'`,
      ))[0].name;
      // What an older runtime would have stored, and its version.
      await s.app.storage.run(
        db === "postgres"
          ? `UPDATE "${table}" SET "vec" = 'stale'::tsvector`
          : `UPDATE "${table}" SET "body" = 'stale'`,
      );
      await s.app.storage.run(
        `UPDATE "mb_meta" SET "value" = 'unicode 0' WHERE "key" = 'text_version'`,
      );
      const count = async (q: string) =>
        (await s.request("GET", `/api/v1/entities/notes?search=${q}`)).data
          .items.length;
      assert.equal(await count("emile"), 0, "the stale index");
      await s.close();
      s = await startServer(db, { dataDir, connection });
      assert.equal(await count("emile"), 1, "rebuilt at start");
      assert.equal(await count("stale"), 0);
      const [v] = await s.app.storage.query(
        `SELECT "value" FROM "mb_meta" WHERE "key" = 'text_version'`,
      );
      assert.notEqual(v.value, "unicode 0");
      const f = await s.request(
        "GET",
        `/api/v1/entities/notes?filter=${
          encodeURIComponent('fold(title) == "emile zola"')
        }`,
      );
      assert.equal(f.data.items.length, 1);
    } finally {
      await s.close();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
);

forEachDb("search: with expand, and no rank in the records", async (_t, db) => {
  const s = await startServer(db);
  try {
    const pub = { mode: "public", expr: "" };
    await createEntity(s, {
      name: "authors",
      fields: [{ name: "name", type: "string" }],
      rules: { list: pub, get: pub },
    });
    await createEntity(s, {
      name: "books",
      fields: [
        { name: "title", type: "string", searchable: true },
        {
          name: "author",
          type: "relation",
          foreign_key: { entity: "authors" },
        },
      ],
      rules: { list: pub, get: pub },
    });
    const a = await createRecord(s, "authors", { name: "Émile Zola" });
    await createRecord(s, "books", { title: "Germinal", author: a.id });
    await createRecord(s, "books", { title: "Nana", author: a.id });
    const r = await s.request(
      "GET",
      "/api/v1/entities/books?search=germ&expand=author&count=true",
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(r.data.total, 1);
    const [book] = r.data.items;
    assert.equal(book.expand.author.name, "Émile Zola");
    // fold reads through a relation too, in SQL.
    const via = await s.request(
      "GET",
      `/api/v1/entities/books?filter=${
        encodeURIComponent('fold(author.name).startsWith(fold("EMILE"))')
      }&search=nana`,
    );
    assert.equal(via.status, 200, via.text);
    assert.deepEqual(via.data.items.map((x: { title: string }) => x.title), [
      "Nana",
    ]);
    assert.equal(via.headers.get("x-moonbase-checked"), null, "in SQL");
    assert.deepEqual(Object.keys(book).sort(), [
      "author",
      "created",
      "expand",
      "id",
      "title",
      "updated",
    ]);
  } finally {
    await s.close();
  }
});
