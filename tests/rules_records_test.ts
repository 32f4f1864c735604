/**
 * Custom rules that read the record, the request and the caller, on both
 * databases: ownership (`record.owner == auth.id`) on every operation with
 * exact lists, totals and pages; rules the SQL compiler cannot take
 * (`.length`, arithmetic) enforced the same way; `req.body` (JSON and
 * multipart — pitfall 10), `req.query`, `req.method` and `auth.user.*`.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { seedUser as seedStoredUser } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import { columnOf, tableOf } from "../lib/schema/ddl.ts";

const PASSWORD = "password-123";

interface Rec {
  id: string;
  created: string;
  updated: string;
  [field: string]: unknown;
}

interface Page {
  items: Rec[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

async function seedUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
): Promise<Rec> {
  return (await seedStoredUser(s, entity, values, PASSWORD)) as unknown as Rec;
}

/** A token issued by the server's session service. */
async function tokenOf(
  s: TestServer,
  entity: string,
  user: Rec,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  return (await s.app.sessions.issue(e, (await e.read(user.id))!)).token;
}

async function schema(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  status(r, 201, `create schema ${body.name}`);
}

async function create(
  s: TestServer,
  token: string,
  entity: string,
  body: Record<string, unknown>,
): Promise<Rec> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, {
    token,
    body,
  });
  status(r, 201, `create ${entity} ${JSON.stringify(body)}`);
  return r.data as Rec;
}

/** Reads a record as the admin (undefined when it does not exist). */
async function stored(
  s: TestServer,
  admin: string,
  entity: string,
  id: string,
): Promise<Rec | undefined> {
  const r = await s.request("GET", `/api/v1/entities/${entity}/${id}`, {
    token: admin,
  });
  if (r.status === 404) return undefined;
  status(r, 200, `admin get ${entity}/${id}`);
  return r.data as Rec;
}

/** Walks every page of a list (following `cursor`); checks page invariants. */
async function allPages(
  s: TestServer,
  token: string | undefined,
  entity: string,
  params: string,
  limit: number,
  /** Pages may be short when a per-row rule hides more rows than one page scans. */
  partial = false,
): Promise<Rec[]> {
  const out: Rec[] = [];
  let after: string | null = null;
  for (let i = 0; i < 200; i++) {
    const q: string = `${params}&limit=${limit}` +
      (after ? `&after=${encodeURIComponent(after)}` : "");
    const r = await s.request("GET", `/api/v1/entities/${entity}?${q}`, {
      token,
    });
    status(r, 200, `list ${entity}?${q}`);
    const page = r.data as Page;
    eq(page.items_count, page.items.length, "items_count");
    eq(page.limit, limit, "limit echoed");
    if (page.has_more) {
      if (!partial) {
        eq(page.items.length, limit, `a page with has_more is full (${q})`);
      }
      if (!page.cursor) fail("has_more without cursor");
    } else eq(page.cursor, null, "last page has no cursor");
    out.push(...page.items);
    if (!page.has_more) return out;
    after = page.cursor;
  }
  return fail("more than 200 pages");
}

function ids(list: readonly Rec[]): string[] {
  return list.map((r) => r.id);
}

function noDuplicates(list: readonly Rec[], msg: string): void {
  const seen = new Set(ids(list));
  if (seen.size !== list.length) fail(`${msg}: duplicate rows in pages`);
}

const enc = encodeURIComponent;

forEachDb("rules reading record, req and auth", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const admin = await s.adminToken();
    await schema(s, admin, {
      name: "users",
      type: "auth",
      fields: [
        { name: "role", type: "string" },
        { name: "team", type: "string" },
        { name: "projects", type: "json" },
      ],
      rules: { get: { mode: "auth", expr: "" } },
    });
    const alice = await seedUser(s, "users", {
      email: "alice@example.com",
      role: "writer",
    });
    const bob = await seedUser(s, "users", {
      email: "bob@example.com",
      role: "writer",
    });
    const carol = await seedUser(s, "users", {
      email: "carol@example.com",
      role: "editor",
    });
    // One real login through the route (with a client address of its own).
    const login = await s.request("POST", "/api/v1/auth/users/login", {
      body: { identity: "alice@example.com", password: PASSWORD },
      headers: { "x-forwarded-for": "10.7.0.1" },
    });
    status(login, 200, "alice login");
    const tAlice: string = login.data.token;
    const tBob = await tokenOf(s, "users", bob);
    const tCarol = await tokenOf(s, "users", carol);

    const OWNER = "record.owner == auth.id";
    await schema(s, admin, {
      name: "notes",
      type: "base",
      fields: [
        {
          name: "owner",
          type: "relation",
          foreign_key: { entity: "users", on_delete: "cascade" },
        },
        { name: "title", type: "string" },
        { name: "n", type: "int" },
      ],
      rules: {
        list: { mode: "custom", expr: OWNER },
        get: { mode: "custom", expr: OWNER },
        add: { mode: "custom", expr: `auth.id != "" && ${OWNER}` },
        update: { mode: "custom", expr: OWNER },
        delete: { mode: "custom", expr: OWNER },
      },
    });
    // 40 notes, owners interleaved irregularly: alice, bob, carol, and
    // alice's in runs of different lengths.
    const pattern = [alice, bob, bob, alice, alice, alice, carol, bob];
    const notes: Rec[] = [];
    for (let i = 0; i < 40; i++) {
      const owner = pattern[(i * 7 + Math.floor(i / 5)) % pattern.length];
      notes.push(
        await create(s, admin, "notes", {
          owner: owner.id,
          title: `note ${String(i).padStart(2, "0")}`,
          n: (i * 13) % 17,
        }),
      );
    }
    const of = (u: Rec) => notes.filter((x) => x.owner === u.id);
    const aliceNotes = of(alice), bobNotes = of(bob);
    if (aliceNotes.length < 10 || bobNotes.length < 5) {
      fail(`bad fixture: ${aliceNotes.length}/${bobNotes.length}`);
    }

    await t.step(
      "ownership list: others' rows absent, total exact",
      async () => {
        const r = await s.request("GET", "/api/v1/entities/notes?count=true", {
          token: tAlice,
        });
        status(r, 200, "alice list");
        const page = r.data as Page;
        eq(ids(page.items), ids(aliceNotes), "alice sees exactly her notes");
        eq(page.total, aliceNotes.length, "total counts only visible rows");
        eq(page.has_more, false, "has_more");
        const b = await s.request("GET", "/api/v1/entities/notes?count=true", {
          token: tBob,
        });
        eq(ids((b.data as Page).items), ids(bobNotes), "bob sees his notes");
        eq((b.data as Page).total, bobNotes.length, "bob total");
        // A guest: the rule depends on the record, so no 401/403, just no rows.
        const g = await s.request("GET", "/api/v1/entities/notes?count=true");
        status(g, 200, "guest list");
        eq((g.data as Page).items, [], "guest sees nothing");
        eq((g.data as Page).total, 0, "guest total");
        // The admin sees all.
        const a = await s.request("GET", "/api/v1/entities/notes?count=true", {
          token: admin,
        });
        eq((a.data as Page).total, 40, "admin total");
      },
    );

    await t.step(
      "ownership list: pages over mixed rows are exact",
      async () => {
        for (const limit of [1, 2, 3, 7]) {
          const got = await allPages(s, tAlice, "notes", "count=true", limit);
          noDuplicates(got, `limit ${limit}`);
          eq(ids(got), ids(aliceNotes), `alice pages, limit ${limit}`);
        }
        // With a sort key that has duplicates: -n then id.
        const admins = await allPages(s, admin, "notes", "sort=-n", 500);
        const expected = admins.filter((x) => x.owner === alice.id);
        const got = await allPages(s, tAlice, "notes", "sort=-n", 3);
        noDuplicates(got, "sort=-n");
        eq(ids(got), ids(expected), "alice pages sorted by -n");
        const bobs = await allPages(s, tBob, "notes", "sort=title", 2);
        eq(ids(bobs), ids(bobNotes), "bob pages sorted by title");
      },
    );

    await t.step(
      "another user's record: get/update/delete → 404, unchanged",
      async () => {
        const target = aliceNotes[0];
        const g = await s.request(
          "GET",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tBob,
          },
        );
        status(g, 404, "bob gets alice's note");
        if (g.text.includes(target.title as string)) {
          fail("404 leaks the title");
        }
        const own = await s.request(
          "GET",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tAlice,
          },
        );
        status(own, 200, "alice gets her note");
        eq(own.data, target, "alice reads her note as stored");
        const u = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tBob,
            body: { title: "hijacked" },
          },
        );
        status(u, 404, "bob patches alice's note");
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        const d = await s.request(
          "DELETE",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tBob,
          },
        );
        status(d, 404, "bob deletes alice's note");
        eq(await stored(s, admin, "notes", target.id), target, "still there");
        // A guest is also refused by the record: 404, not 401.
        const gg = await s.request(
          "GET",
          `/api/v1/entities/notes/${target.id}`,
        );
        status(gg, 404, "guest gets alice's note");
        const gd = await s.request(
          "DELETE",
          `/api/v1/entities/notes/${target.id}`,
        );
        status(gd, 404, "guest deletes alice's note");
        eq(await stored(s, admin, "notes", target.id), target, "still there");
      },
    );

    await t.step(
      "owner's id in the body does not satisfy the rule",
      async () => {
        const target = aliceNotes[1];
        for (
          const body of [{ owner: alice.id }, { owner: bob.id }, {
            owner: bob.id,
            title: "mine now",
          }]
        ) {
          const u = await s.request(
            "PATCH",
            `/api/v1/entities/notes/${target.id}`,
            { token: tBob, body },
          );
          status(
            u,
            404,
            `bob patches alice's note with ${JSON.stringify(body)}`,
          );
        }
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        // Create for someone else.
        const before = await s.request(
          "GET",
          "/api/v1/entities/notes?count=true&limit=1",
          {
            token: admin,
          },
        );
        const c = await s.request("POST", "/api/v1/entities/notes", {
          token: tBob,
          body: { owner: alice.id, title: "forged" },
        });
        status(c, 403, "bob creates a note owned by alice");
        const guest = await s.request("POST", "/api/v1/entities/notes", {
          body: { owner: alice.id, title: "forged by a guest" },
        });
        if (guest.status !== 401 && guest.status !== 403) {
          fail(`guest create for alice: ${guest.status} ${guest.text}`);
        }
        const after = await s.request(
          "GET",
          "/api/v1/entities/notes?count=true&limit=1",
          {
            token: admin,
          },
        );
        eq(after.data.total, before.data.total, "nothing created");
        const f = await s.request(
          "GET",
          `/api/v1/entities/notes?count=true&filter=${
            enc('title.startsWith("forged")')
          }`,
          { token: admin },
        );
        eq(f.data.total, 0, "no forged note stored");
        // Creating one's own works and returns the record.
        const ok = await s.request("POST", "/api/v1/entities/notes", {
          token: tBob,
          body: { owner: bob.id, title: "bob's own", n: 3 },
        });
        status(ok, 201, "bob creates his own note");
        eq(
          [ok.data.owner, ok.data.title, ok.data.n],
          [bob.id, "bob's own", 3],
          "created",
        );
        const del = await s.request(
          "DELETE",
          `/api/v1/entities/notes/${ok.data.id}`,
          {
            token: tBob,
          },
        );
        status(del, 204, "bob deletes his own note");
        eq(await stored(s, admin, "notes", ok.data.id), undefined, "deleted");
      },
    );

    await t.step(
      "update that moves a record out of the rule → 403, unchanged",
      async () => {
        const target = aliceNotes[2];
        const u = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tAlice,
            body: { owner: bob.id, title: "given away" },
          },
        );
        status(u, 403, "alice gives her note to bob");
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        const ok = await s.request(
          "PATCH",
          `/api/v1/entities/notes/${target.id}`,
          {
            token: tAlice,
            body: { title: "renamed" },
          },
        );
        status(ok, 200, "alice renames her note");
        eq([ok.data.id, ok.data.owner, ok.data.title], [
          target.id,
          alice.id,
          "renamed",
        ], "updated");
        const now = await stored(s, admin, "notes", target.id);
        eq(now?.title, "renamed", "stored");
        if (now!.updated < target.updated) fail("updated went backwards");
      },
    );

    await t.step("ownership rule on a view entity", async () => {
      const rule = { mode: "custom", expr: "record.owner == auth.id" };
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "note_view",
          type: "view",
          view_query: "SELECT id, owner, title, n FROM notes",
          rules: { list: rule, get: rule },
        },
      });
      status(r, 201, "view schema");
      const all = await allPages(s, admin, "notes", "", 500);
      const mine = all.filter((x) => x.owner === alice.id);
      const got = await allPages(s, tAlice, "note_view", "count=true", 4);
      eq(ids(got), ids(mine), "alice sees her rows through the view");
      const c = await s.request(
        "GET",
        "/api/v1/entities/note_view?count=true",
        {
          token: tAlice,
        },
      );
      eq(c.data.total, mine.length, "view total");
      const other = all.find((x) => x.owner === bob.id)!;
      status(
        await s.request("GET", `/api/v1/entities/note_view/${other.id}`, {
          token: tAlice,
        }),
        404,
        "bob's row through the view",
      );
      const own = await s.request(
        "GET",
        `/api/v1/entities/note_view/${mine[0].id}`,
        {
          token: tAlice,
        },
      );
      status(own, 200, "own row through the view");
      eq(own.data.title, mine[0].title, "view row");
      status(
        await s.request("DELETE", `/api/v1/entities/note_view/${mine[0].id}`, {
          token: tAlice,
        }),
        405,
        "views are read-only",
      );
    });

    // ---- rules the SQL compiler does not take ----------------------------
    const RULES_JS: readonly [string, string, (r: Rec) => boolean][] = [
      [
        "wordy",
        "record.title.length > 3",
        (r) => typeof r.title === "string" && r.title.length > 3,
      ],
      ["doubled", "record.n * 2 > 10", (r) => (r.n as number) * 2 > 10],
    ];
    for (const [name, expr, visible] of RULES_JS) {
      await t.step(`non-SQL rule ${expr}: list/get/update/delete`, async () => {
        const rule = { mode: "custom", expr };
        await schema(s, admin, {
          name,
          type: "base",
          fields: [{ name: "title", type: "string" }, {
            name: "n",
            type: "int",
          }],
          rules: {
            list: rule,
            get: rule,
            add: { mode: "auth", expr: "" },
            update: rule,
            delete: rule,
          },
        });
        // 45 rows; visible ones are rare and in clumps, so pages must scan
        // past many invisible rows.
        const rows: Rec[] = [];
        for (let i = 0; i < 45; i++) {
          const on = i % 9 === 0 || i % 9 === 1 || i === 44;
          rows.push(
            await create(s, admin, name, {
              title: on ? `visible ${i}` : "abc",
              n: on ? 6 + (i % 4) : i % 6,
            }),
          );
        }
        const vis = rows.filter(visible);
        eq(vis.length, 11, "fixture");
        const r = await s.request(
          "GET",
          `/api/v1/entities/${name}?count=true`,
          {
            token: tBob,
          },
        );
        status(r, 200, "list");
        eq(ids((r.data as Page).items), ids(vis), "list items");
        eq((r.data as Page).total, vis.length, "total");
        for (const limit of [1, 2, 4]) {
          const got = await allPages(s, tBob, name, "count=true", limit);
          noDuplicates(got, `limit ${limit}`);
          eq(ids(got), ids(vis), `pages of ${limit}`);
        }
        const desc = await allPages(s, tBob, name, "sort=-n", 3);
        const adminDesc = (await allPages(s, admin, name, "sort=-n", 500))
          .filter(visible);
        eq(ids(desc), ids(adminDesc), "pages sorted by -n");

        const hidden = rows.find((x) => !visible(x))!;
        const shown = vis[0];
        status(
          await s.request("GET", `/api/v1/entities/${name}/${hidden.id}`, {
            token: tBob,
          }),
          404,
          "get hidden",
        );
        const g = await s.request(
          "GET",
          `/api/v1/entities/${name}/${shown.id}`,
          {
            token: tBob,
          },
        );
        status(g, 200, "get visible");
        eq(g.data, shown, "get visible data");
        status(
          await s.request("PATCH", `/api/v1/entities/${name}/${hidden.id}`, {
            token: tBob,
            body: { title: "changed title", n: 99 },
          }),
          404,
          "update hidden",
        );
        eq(await stored(s, admin, name, hidden.id), hidden, "hidden unchanged");
        status(
          await s.request("DELETE", `/api/v1/entities/${name}/${hidden.id}`, {
            token: tBob,
          }),
          404,
          "delete hidden",
        );
        eq(await stored(s, admin, name, hidden.id), hidden, "hidden kept");
        // Moving a visible record out of the rule is refused.
        status(
          await s.request("PATCH", `/api/v1/entities/${name}/${shown.id}`, {
            token: tBob,
            body: { title: "ab", n: 1 },
          }),
          403,
          "update out of the rule",
        );
        eq(await stored(s, admin, name, shown.id), shown, "visible unchanged");
        const ok = await s.request(
          "PATCH",
          `/api/v1/entities/${name}/${shown.id}`,
          {
            token: tBob,
            body: { title: "still long", n: 50 },
          },
        );
        status(ok, 200, "update within the rule");
        eq([ok.data.title, ok.data.n], ["still long", 50], "updated data");
        const d = await s.request(
          "DELETE",
          `/api/v1/entities/${name}/${vis[1].id}`,
          {
            token: tBob,
          },
        );
        status(d, 204, "delete visible");
        eq(await stored(s, admin, name, vis[1].id), undefined, "deleted");
        const c = await s.request(
          "GET",
          `/api/v1/entities/${name}?count=true&limit=1`,
          {
            token: tBob,
          },
        );
        eq(c.data.total, vis.length - 1, "total after delete");
      });
    }

    await t.step(
      "non-SQL rule: visible rows behind 10 100 hidden ones are still reached",
      async () => {
        const rule = { mode: "custom", expr: "record.title.length > 3" };
        await schema(s, admin, {
          name: "sparse",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: rule, get: rule },
        });
        // 10 100 hidden rows, inserted set-based (ids sort before any UUIDv7
        // made now), then two visible rows through the API.
        const now = new Date().toISOString();
        const table = tableOf("sparse");
        const cols = ["id", "created", "updated", "title"].map((c) =>
          columnOf(c)
        )
          .join(", ");
        await s.app.storage.run(
          s.db === "postgres"
            ? `INSERT INTO ${table} (${cols}) SELECT '00000000-0000-7000-8000-' || lpad(i::text, 12, '0'), ?, ?, 'ab' FROM generate_series(1, 10100) AS g(i)`
            : `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10100) INSERT INTO ${table} (${cols}) SELECT printf('00000000-0000-7000-8000-%012d', i), ?, ?, 'ab' FROM c`,
          [now, now],
        );
        const a = await s.request(
          "GET",
          "/api/v1/entities/sparse?count=true&limit=1",
          {
            token: admin,
          },
        );
        eq(a.data.total, 10100, "hidden rows inserted");
        const v1 = await create(s, admin, "sparse", { title: "visible one" });
        const v2 = await create(s, admin, "sparse", { title: "visible two" });
        const first = await s.request(
          "GET",
          "/api/v1/entities/sparse?count=true",
          {
            token: tBob,
          },
        );
        status(first, 200, "first page");
        const p1 = first.data as Page;
        const problems: string[] = [];
        if (p1.total !== 2) problems.push(`total ${p1.total} (expected 2)`);
        if (p1.items.length === 0 && !p1.has_more) {
          problems.push(
            `first page: no items, has_more false, cursor ${p1.cursor}: the visible rows are unreachable`,
          );
        }
        let got: Rec[] = [];
        try {
          got = await allPages(s, tBob, "sparse", "", 50, true);
        } catch (err) {
          problems.push(String(err));
        }
        if (JSON.stringify(ids(got)) !== JSON.stringify([v1.id, v2.id])) {
          problems.push(
            `all pages returned ${got.length} of the 2 visible rows`,
          );
        }
        const g = await s.request("GET", `/api/v1/entities/sparse/${v2.id}`, {
          token: tBob,
        });
        if (g.status !== 200) problems.push(`get visible row: ${g.status}`);
        if (problems.length) fail(problems.join("; "));
      },
    );

    await t.step(
      "cursors: sealed, never from a hidden row, hand-made ones refused",
      async () => {
        const rule = { mode: "custom", expr: "record.title.length > 3" };
        await schema(s, admin, {
          name: "paged",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: rule, get: rule },
        });
        const first = await create(s, admin, "paged", { title: "visible A" });
        const hidden = [];
        for (let i = 0; i < 3; i++) {
          hidden.push(await create(s, admin, "paged", { title: "ab" }));
        }
        const lastVisible = await create(s, admin, "paged", {
          title: "visible B",
        });
        // Page 1 shows "visible A", then scans the hidden rows up to "visible B".
        const p1 = await s.request("GET", "/api/v1/entities/paged?limit=1", {
          token: tBob,
        });
        status(p1, 200, "page 1");
        const c1 = String(p1.data.cursor);
        eq(ids(p1.data.items as Rec[]), [first.id], "page 1 items");
        for (const h of hidden) {
          if (c1.includes(String(h.id))) {
            fail("cursor shows a hidden row's id");
          }
        }
        const p2 = await s.request(
          "GET",
          `/api/v1/entities/paged?limit=1&after=${encodeURIComponent(c1)}`,
          { token: tBob },
        );
        status(p2, 200, "page 2");
        eq(ids(p2.data.items as Rec[]), [lastVisible.id], "page 2 items");
        // A hand-made cursor is refused: cursors are sealed and bound to the query.
        const made = btoa(JSON.stringify([first.id])).replaceAll("=", "");
        const p3 = await s.request(
          "GET",
          `/api/v1/entities/paged?after=${made}`,
          { token: tBob },
        );
        status(p3, 400, "hand-made cursor");
        for (const bad of ["s.AAAA", "bm9wZQ", "%E2%82%AC", "W10"]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/paged?after=${bad}`,
            { token: tBob },
          );
          status(r, 400, `bad cursor ${bad}`);
        }
      },
    );

    // ---- req.body (pitfall 10) --------------------------------------------
    await t.step("req.body rules see the JSON body", async () => {
      await schema(s, admin, {
        name: "articles",
        type: "base",
        fields: [
          { name: "title", type: "string" },
          { name: "status", type: "string" },
          { name: "n", type: "int" },
        ],
        rules: {
          list: { mode: "public", expr: "" },
          get: { mode: "public", expr: "" },
          // Passes only when the body really carries the value.
          add: {
            mode: "custom",
            expr:
              'auth.id != "" && req.body.title == "magic" && req.body.n >= 2',
          },
          update: { mode: "custom", expr: 'req.body.status != "published"' },
          delete: { mode: "custom", expr: "req.body.anything == undefined" },
        },
      });
      const c = await s.request("POST", "/api/v1/entities/articles", {
        token: tAlice,
        body: { title: "magic", status: "draft", n: 2 },
      });
      status(c, 201, "create with the body the rule asks for");
      eq(
        [c.data.title, c.data.status, c.data.n],
        ["magic", "draft", 2],
        "created",
      );
      const id: string = c.data.id;
      for (
        const body of [{ title: "other", n: 5 }, { title: "magic", n: 1 }, {
          title: "magic",
        }]
      ) {
        const d = await s.request("POST", "/api/v1/entities/articles", {
          token: tAlice,
          body,
        });
        status(d, 403, `create with ${JSON.stringify(body)}`);
      }
      const cnt = await s.request(
        "GET",
        "/api/v1/entities/articles?count=true",
      );
      eq(cnt.data.total, 1, "refused creates stored nothing");

      const p = await s.request("PATCH", `/api/v1/entities/articles/${id}`, {
        token: tAlice,
        body: { status: "published" },
      });
      status(p, 403, "publish through the API");
      let now = await stored(s, admin, "articles", id);
      eq(now?.status, "draft", "not published");
      const p2 = await s.request("PATCH", `/api/v1/entities/articles/${id}`, {
        token: tAlice,
        body: { status: "review", title: "magic 2" },
      });
      status(p2, 200, "other status");
      eq([p2.data.status, p2.data.title], ["review", "magic 2"], "patched");
      now = await stored(s, admin, "articles", id);
      eq(now?.status, "review", "stored");
      // Guest: the rule does not read the record → 401 when it refuses.
      const pg = await s.request("PATCH", `/api/v1/entities/articles/${id}`, {
        body: { status: "published" },
      });
      status(pg, 401, "guest publishes");
      eq(
        (await stored(s, admin, "articles", id))?.status,
        "review",
        "unchanged",
      );
    });

    await t.step("req.body rules see multipart/form-data bodies", async () => {
      const form = (entries: Record<string, string>) => {
        const f = new FormData();
        for (const [k, v] of Object.entries(entries)) f.append(k, v);
        return f;
      };
      const c = await s.request("POST", "/api/v1/entities/articles", {
        token: tBob,
        raw: form({ title: "magic", status: "draft", n: "3" }),
      });
      status(c, 201, "multipart create with the body the rule asks for");
      eq(
        [c.data.title, c.data.status, c.data.n],
        ["magic", "draft", 3],
        "created",
      );
      const id: string = c.data.id;
      const bad = await s.request("POST", "/api/v1/entities/articles", {
        token: tBob,
        raw: form({ title: "nope", n: "3" }),
      });
      status(bad, 403, "multipart create without the value");
      const low = await s.request("POST", "/api/v1/entities/articles", {
        token: tBob,
        raw: form({ title: "magic", n: "1" }),
      });
      status(low, 403, "multipart n converted then compared (1 < 2)");
      // @jsonPayload values are part of req.body too.
      const jp = await s.request("POST", "/api/v1/entities/articles", {
        token: tBob,
        raw: form({ "@jsonPayload": JSON.stringify({ title: "magic", n: 4 }) }),
      });
      status(jp, 201, "@jsonPayload create");
      eq([jp.data.title, jp.data.n], ["magic", 4], "@jsonPayload data");
      const cnt = await s.request(
        "GET",
        "/api/v1/entities/articles?count=true",
      );
      eq(cnt.data.total, 3, "exactly the allowed creates stored");

      const p = await s.request("PATCH", `/api/v1/entities/articles/${id}`, {
        token: tBob,
        raw: form({ status: "published" }),
      });
      status(p, 403, "multipart publish");
      eq(
        (await stored(s, admin, "articles", id))?.status,
        "draft",
        "unchanged",
      );
      const p2 = await s.request("PATCH", `/api/v1/entities/articles/${id}`, {
        token: tBob,
        raw: form({ status: "archived" }),
      });
      status(p2, 200, "multipart other status");
      eq(
        (await stored(s, admin, "articles", id))?.status,
        "archived",
        "stored",
      );
      // The delete rule has no body to read: passes.
      const d = await s.request("DELETE", `/api/v1/entities/articles/${id}`, {
        token: tBob,
      });
      status(d, 204, "delete (empty body)");
      eq(await stored(s, admin, "articles", id), undefined, "deleted");
    });

    // ---- auth.user.* ------------------------------------------------------
    await t.step('auth.user.role == "editor"', async () => {
      const rule = { mode: "custom", expr: 'auth.user.role == "editor"' };
      await schema(s, admin, {
        name: "drafts",
        type: "base",
        fields: [{ name: "title", type: "string" }],
        rules: { list: rule, get: rule, add: rule, update: rule, delete: rule },
      });
      const d = await create(s, admin, "drafts", { title: "seed" });
      const c = await s.request("POST", "/api/v1/entities/drafts", {
        token: tCarol,
        body: { title: "by carol" },
      });
      status(c, 201, "editor creates");
      const l = await s.request("GET", "/api/v1/entities/drafts?count=true", {
        token: tCarol,
      });
      status(l, 200, "editor lists");
      eq(ids((l.data as Page).items), [d.id, c.data.id], "editor sees all");
      status(
        await s.request("GET", `/api/v1/entities/drafts/${d.id}`, {
          token: tCarol,
        }),
        200,
        "editor gets",
      );
      const u = await s.request("PATCH", `/api/v1/entities/drafts/${d.id}`, {
        token: tCarol,
        body: { title: "edited" },
      });
      status(u, 200, "editor updates");
      eq(u.data.title, "edited", "updated");
      // A writer: a decision that does not depend on the record → 403.
      for (
        const [method, path, body] of [
          ["GET", "/api/v1/entities/drafts", undefined],
          ["GET", `/api/v1/entities/drafts/${d.id}`, undefined],
          ["POST", "/api/v1/entities/drafts", { title: "by alice" }],
          ["PATCH", `/api/v1/entities/drafts/${d.id}`, {
            title: "alice was here",
          }],
          ["DELETE", `/api/v1/entities/drafts/${d.id}`, undefined],
        ] as const
      ) {
        const r = await s.request(method, path, { token: tAlice, body });
        status(r, 403, `writer ${method} ${path}`);
        const g = await s.request(method, path, { body });
        status(g, 401, `guest ${method} ${path}`);
      }
      // Claiming the role in the body does not help: auth.user is the stored user.
      const claim = await s.request("POST", "/api/v1/entities/drafts", {
        token: tAlice,
        body: { title: "role in body", role: "editor" },
      });
      if (claim.status !== 403 && claim.status !== 400) {
        fail(`role in body: ${claim.status} ${claim.text}`);
      }
      const all = await s.request("GET", "/api/v1/entities/drafts?count=true", {
        token: admin,
      });
      eq(
        all.data.items.map((x: Rec) => x.title),
        ["edited", "by carol"],
        "data",
      );
      const del = await s.request("DELETE", `/api/v1/entities/drafts/${d.id}`, {
        token: tCarol,
      });
      status(del, 204, "editor deletes");
    });

    // ---- req.query and req.method -----------------------------------------
    await t.step("req.query.x and req.method", async () => {
      await schema(s, admin, {
        name: "gated",
        type: "base",
        fields: [{ name: "title", type: "string" }],
        rules: {
          list: {
            mode: "custom",
            expr: 'req.method == "GET" && req.query.limit == "2"',
          },
          get: { mode: "custom", expr: 'req.query.key == "open-sesame"' },
          add: { mode: "custom", expr: 'req.method == "POST"' },
          update: { mode: "custom", expr: 'req.method == "PUT"' },
          delete: {
            mode: "custom",
            expr: 'req.method == "DELETE" && req.query.confirm == "yes"',
          },
        },
      });
      const a = await s.request("POST", "/api/v1/entities/gated", {
        token: tAlice,
        body: { title: "one" },
      });
      status(a, 201, "add with req.method POST");
      const b = await create(s, admin, "gated", { title: "two" });
      await create(s, admin, "gated", { title: "three" });
      const l = await s.request("GET", "/api/v1/entities/gated?limit=2", {
        token: tAlice,
      });
      status(l, 200, "list with limit=2");
      eq(
        (l.data as Page).items.map((x) => x.title),
        ["one", "two"],
        "list items",
      );
      status(
        await s.request("GET", "/api/v1/entities/gated?limit=3", {
          token: tAlice,
        }),
        403,
        "list with limit=3",
      );
      status(
        await s.request("GET", "/api/v1/entities/gated?limit=3"),
        401,
        "guest list with limit=3",
      );
      const g = await s.request(
        "GET",
        `/api/v1/entities/gated/${b.id}?key=open-sesame`,
      );
      status(g, 200, "guest get with the key");
      eq(g.data.title, "two", "get data");
      status(
        await s.request("GET", `/api/v1/entities/gated/${b.id}?key=wrong`, {
          token: tAlice,
        }),
        403,
        "get with a wrong key",
      );
      status(
        await s.request("GET", `/api/v1/entities/gated/${b.id}`, {
          token: tAlice,
        }),
        403,
        "get without key",
      );
      status(
        await s.request("GET", `/api/v1/entities/gated/${b.id}`),
        401,
        "guest get without key",
      );
      const u = await s.request("PATCH", `/api/v1/entities/gated/${b.id}`, {
        token: tAlice,
        body: { title: "patched" },
      });
      status(u, 403, "PATCH is not PUT");
      eq((await stored(s, admin, "gated", b.id))?.title, "two", "unchanged");
      status(
        await s.request("DELETE", `/api/v1/entities/gated/${b.id}`, {
          token: tAlice,
        }),
        403,
        "delete without confirm",
      );
      eq((await stored(s, admin, "gated", b.id))?.title, "two", "kept");
      status(
        await s.request(
          "DELETE",
          `/api/v1/entities/gated/${b.id}?confirm=yes`,
          {
            token: tAlice,
          },
        ),
        204,
        "delete with confirm",
      );
      eq(await stored(s, admin, "gated", b.id), undefined, "deleted");
    });

    // ---- rules mixing the record with the request --------------------------
    await t.step("published for everyone, drafts for the author", async () => {
      const rule = {
        mode: "custom",
        expr: 'record.status == "published" || record.author == auth.id',
      };
      await schema(s, admin, {
        name: "posts",
        type: "base",
        fields: [
          { name: "author", type: "string" },
          { name: "status", type: "string" },
        ],
        rules: { list: rule, get: rule },
      });
      const rows: Rec[] = [];
      for (let i = 0; i < 12; i++) {
        rows.push(
          await create(s, admin, "posts", {
            author: [alice.id, bob.id, carol.id][i % 3],
            status: i % 4 === 0 ? "published" : "draft",
          }),
        );
      }
      const expectFor = (uid: string) =>
        ids(rows.filter((r) => r.status === "published" || r.author === uid));
      const guest = await allPages(s, undefined, "posts", "count=true", 2);
      eq(ids(guest), expectFor(""), "guest sees published");
      const al = await allPages(s, tAlice, "posts", "count=true", 2);
      eq(ids(al), expectFor(alice.id), "alice sees published + hers");
      const draftOfBob = rows.find((r) =>
        r.author === bob.id && r.status === "draft"
      )!;
      status(
        await s.request("GET", `/api/v1/entities/posts/${draftOfBob.id}`, {
          token: tAlice,
        }),
        404,
        "alice gets bob's draft",
      );
      status(
        await s.request("GET", `/api/v1/entities/posts/${draftOfBob.id}`, {
          token: tBob,
        }),
        200,
        "bob gets his draft",
      );
    });

    // ---- cookbook rules over the caller's record -----------------------------
    await t.step(
      "auth.user changes apply at once (verified, role)",
      async () => {
        const rule = {
          mode: "custom",
          expr: 'auth.user.verified == true && auth.user.role == "editor"',
        };
        await schema(s, admin, {
          name: "vip",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: { list: rule, get: rule },
        });
        const v = await create(s, admin, "vip", {
          title: "for verified editors",
        });
        status(
          await s.request("GET", "/api/v1/entities/vip", { token: tCarol }),
          403,
          "unverified editor",
        );
        const p = await s.request(
          "PATCH",
          `/api/v1/entities/users/${carol.id}`,
          {
            token: admin,
            body: { verified: true },
          },
        );
        status(p, 200, "admin verifies carol");
        eq(p.data.verified, true, "verified stored");
        const l = await s.request("GET", "/api/v1/entities/vip", {
          token: tCarol,
        });
        status(l, 200, "verified editor, same token");
        eq(ids((l.data as Page).items), [v.id], "vip items");
        status(
          await s.request("GET", `/api/v1/entities/vip/${v.id}`, {
            token: tBob,
          }),
          403,
          "unverified writer",
        );
        const demote = await s.request(
          "PATCH",
          `/api/v1/entities/users/${carol.id}`,
          {
            token: admin,
            body: { role: "writer" },
          },
        );
        status(demote, 200, "admin demotes carol");
        status(
          await s.request("GET", "/api/v1/entities/vip", { token: tCarol }),
          403,
          "demoted, same token",
        );
      },
    );

    await t.step(
      "team and project membership (record vs auth.user)",
      async () => {
        const setUser = async (u: Rec, body: Record<string, unknown>) => {
          const r = await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
            token: admin,
            body,
          });
          status(r, 200, `set ${JSON.stringify(body)}`);
        };
        await setUser(alice, { team: "red", projects: ["p1", "p3"] });
        await setUser(bob, { team: "blue", projects: ["p2"] });
        await setUser(carol, { team: null, projects: null });
        const users: [string, string, string | null, string[] | null][] = [
          ["alice", tAlice, "red", ["p1", "p3"]],
          ["bob", tBob, "blue", ["p2"]],
          ["carol", tCarol, null, null],
        ];
        for (
          const [name, expr] of [
            ["tasks", "record.team == auth.user.team"],
            [
              "tasks_js",
              "record.team == auth.user.team && record.title.length > 0",
            ],
            ["pdocs", "auth.user.projects.includes(record.project)"],
            [
              "pdocs_js",
              "auth.user.projects.includes(record.project) && record.title.length > 0",
            ],
          ]
        ) {
          const rule = { mode: "custom", expr };
          await schema(s, admin, {
            name,
            type: "base",
            fields: [
              { name: "title", type: "string" },
              { name: "team", type: "string" },
              { name: "project", type: "string" },
            ],
            rules: { list: rule, get: rule },
          });
          const rows: Rec[] = [];
          for (let i = 0; i < 12; i++) {
            rows.push(
              await create(s, admin, name, {
                title: `t${i}`,
                team: ["red", "blue", null][i % 3],
                project: ["p1", "p2", "p3", "p4"][i % 4],
              }),
            );
          }
          for (const [who, token, team, projects] of users) {
            // JavaScript semantics: null == null, and null.includes(…) is no match.
            const expected = rows.filter((r) =>
              name.startsWith("tasks")
                ? r.team === team ||
                  (r.team === null && team === null)
                : projects !== null && projects.includes(r.project as string)
            );
            const got = await allPages(s, token, name, "count=true", 2);
            eq(ids(got), ids(expected), `${name} as ${who}`);
            const hidden = rows.find((r) => !expected.includes(r))!;
            status(
              await s.request("GET", `/api/v1/entities/${name}/${hidden.id}`, {
                token,
              }),
              404,
              `${name}: ${who} gets a hidden row`,
            );
          }
        }
      },
    );

    await t.step("server still healthy", async () => {
      const h = await s.request("GET", "/api/v1/health");
      status(h, 200, "health");
      eq(h.data.status, "ok", "health status");
    });
  } finally {
    await s.close();
  }
});
