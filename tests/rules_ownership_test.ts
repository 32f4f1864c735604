/**
 * The ownership rule `record.owner == auth.id` on every operation, on both
 * databases: lists show exactly the caller's rows with exact totals and
 * pages, another user's record answers 404 and stays unchanged, the owner's
 * id in a body does not satisfy the rule, an update cannot move a record out
 * of it, and a view entity applies it too.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import {
  allPages,
  enc,
  ids,
  noDuplicates,
  type Page,
  PASSWORD,
  type Rec,
  setupNotes,
  setupUsers,
  stored,
  type Users,
} from "./_rules_fixtures.ts";

interface World extends Users {
  notes: Rec[];
  aliceNotes: Rec[];
  bobNotes: Rec[];
}

/** Users, the 40 notes, and alice's and bob's share of them. */
async function world(s: TestServer): Promise<World> {
  const u = await setupUsers(s);
  const notes = await setupNotes(s, u);
  const of = (x: Rec) => notes.filter((n) => n.owner === x.id);
  const aliceNotes = of(u.alice), bobNotes = of(u.bob);
  if (aliceNotes.length < 10 || bobNotes.length < 5) {
    fail(`bad fixture: ${aliceNotes.length}/${bobNotes.length}`);
  }
  return { ...u, notes, aliceNotes, bobNotes };
}

// The steps of this test only read: they share one server and one fixture.
forEachDb("rules: ownership in lists, pages and views", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const w = await world(s);
    const { admin, alice, aliceNotes, bobNotes } = w;
    // One real login through the route (with a client address of its own):
    // the rules see the same caller as with a token from the session service.
    const login = await s.request("POST", "/api/v1/auth/users/login", {
      body: { identity: "alice@example.com", password: PASSWORD },
      headers: { "x-forwarded-for": "10.7.0.1" },
    });
    status(login, 200, "alice login");
    const tAlice: string = login.data.token;

    await t.step("list: others' rows absent, total exact", async () => {
      const r = await s.request("GET", "/api/v1/entities/notes?count=true", {
        token: tAlice,
      });
      status(r, 200, "alice list");
      const page = r.data as Page;
      eq(ids(page.items), ids(aliceNotes), "alice sees exactly her notes");
      eq(page.total, aliceNotes.length, "total counts only visible rows");
      eq(page.has_more, false, "has_more");
      const b = await s.request("GET", "/api/v1/entities/notes?count=true", {
        token: w.tBob,
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
    });

    await t.step("pages over mixed rows are exact", async () => {
      for (const limit of [1, 2, 3, 7]) {
        const got = await allPages(s, tAlice, "notes", "count=true", limit);
        noDuplicates(got, `limit ${limit}`);
        eq(ids(got), ids(aliceNotes), `alice pages, limit ${limit}`);
      }
      // With a sort key that has duplicates: -n then id.
      const sorted = await allPages(s, admin, "notes", "sort=-n", 500);
      const expected = sorted.filter((x) => x.owner === alice.id);
      const got = await allPages(s, tAlice, "notes", "sort=-n", 3);
      noDuplicates(got, "sort=-n");
      eq(ids(got), ids(expected), "alice pages sorted by -n");
      const bobs = await allPages(s, w.tBob, "notes", "sort=title", 2);
      eq(ids(bobs), ids(bobNotes), "bob pages sorted by title");
    });

    await t.step("the rule on a view entity", async () => {
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
      const mine = aliceNotes;
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
      status(
        await s.request("GET", `/api/v1/entities/note_view/${bobNotes[0].id}`, {
          token: tAlice,
        }),
        404,
        "bob's row through the view",
      );
      const own = await s.request(
        "GET",
        `/api/v1/entities/note_view/${mine[0].id}`,
        { token: tAlice },
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
  } finally {
    await s.close();
  }
});

// Each step works on rows of its own (its own target note, its own new
// record) and compares counts only with what it saw before its own writes.
forEachDb("rules: ownership on writes", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await world(s);
    const { admin, alice, bob, tAlice, tBob, aliceNotes } = w;
    const notePath = (id: string) => `/api/v1/entities/notes/${id}`;

    await t.step(
      "another user's record: get/update/delete → 404, unchanged",
      async () => {
        const target = aliceNotes[0];
        const g = await s.request("GET", notePath(target.id), { token: tBob });
        status(g, 404, "bob gets alice's note");
        if (g.text.includes(target.title as string)) {
          fail("404 leaks the title");
        }
        const own = await s.request("GET", notePath(target.id), {
          token: tAlice,
        });
        status(own, 200, "alice gets her note");
        eq(own.data, target, "alice reads her note as stored");
        const u = await s.request("PATCH", notePath(target.id), {
          token: tBob,
          body: { title: "hijacked" },
        });
        status(u, 404, "bob patches alice's note");
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        const d = await s.request("DELETE", notePath(target.id), {
          token: tBob,
        });
        status(d, 404, "bob deletes alice's note");
        eq(await stored(s, admin, "notes", target.id), target, "still there");
        // A guest is also refused by the record: 404, not 401.
        status(
          await s.request("GET", notePath(target.id)),
          404,
          "guest gets alice's note",
        );
        status(
          await s.request("DELETE", notePath(target.id)),
          404,
          "guest deletes alice's note",
        );
        eq(await stored(s, admin, "notes", target.id), target, "still there");
      },
    );

    await t.step(
      "the owner's id in the body does not satisfy the rule",
      async () => {
        const target = aliceNotes[1];
        for (
          const body of [
            { owner: alice.id },
            { owner: bob.id },
            { owner: bob.id, title: "mine now" },
          ]
        ) {
          const u = await s.request("PATCH", notePath(target.id), {
            token: tBob,
            body,
          });
          status(
            u,
            404,
            `bob patches alice's note with ${JSON.stringify(body)}`,
          );
        }
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        // Create for someone else.
        const count = "/api/v1/entities/notes?count=true&limit=1";
        const before = await s.request("GET", count, { token: admin });
        const c = await s.request("POST", "/api/v1/entities/notes", {
          token: tBob,
          body: { owner: alice.id, title: "forged" },
        });
        status(c, 403, "bob creates a note owned by alice");
        const guest = await s.request("POST", "/api/v1/entities/notes", {
          body: { owner: alice.id, title: "forged by a guest" },
        });
        status(guest, [401, 403], "guest create for alice");
        const after = await s.request("GET", count, { token: admin });
        eq(after.data.total, before.data.total, "nothing created");
        const f = await s.request(
          "GET",
          `/api/v1/entities/notes?count=true&filter=${
            enc('title.startsWith("forged")')
          }`,
          { token: admin },
        );
        eq(f.data.total, 0, "no forged note stored");
      },
    );

    await t.step("the owner creates and deletes a record", async () => {
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
      const del = await s.request("DELETE", notePath(ok.data.id), {
        token: tBob,
      });
      status(del, 204, "bob deletes his own note");
      eq(await stored(s, admin, "notes", ok.data.id), undefined, "deleted");
    });

    await t.step(
      "update that moves a record out of the rule → 403, unchanged",
      async () => {
        const target = aliceNotes[2];
        const u = await s.request("PATCH", notePath(target.id), {
          token: tAlice,
          body: { owner: bob.id, title: "given away" },
        });
        status(u, 403, "alice gives her note to bob");
        eq(await stored(s, admin, "notes", target.id), target, "unchanged");
        const ok = await s.request("PATCH", notePath(target.id), {
          token: tAlice,
          body: { title: "renamed" },
        });
        status(ok, 200, "alice renames her note");
        eq(
          [ok.data.id, ok.data.owner, ok.data.title],
          [target.id, alice.id, "renamed"],
          "updated",
        );
        const now = await stored(s, admin, "notes", target.id);
        eq(now?.title, "renamed", "stored");
        if (now!.updated < target.updated) fail("updated went backwards");
      },
    );
  } finally {
    await s.close();
  }
});
