/**
 * Rules, filters and sorts that read through relations (issue 31, item 2),
 * on both databases: `record.project.owner == auth.id` on every operation,
 * `auth.user.team.name`, back-relations (`.length`, `.some`, `.every`),
 * filters with bare relation paths, sorts by a related field with cursors,
 * six relations deep, the 400s of names that do not exist and the 409s of
 * schema changes that would break a relation rule, the relation indexes in
 * the plans; and the attacks: a filter or sort through a relation never
 * reveals a field or a record the caller's own rules hide.
 *
 * One server per database; the steps share its records (each step says
 * what it reads).
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";
import { tableOf } from "../lib/schema/ddl.ts";
import { ExpressionRules } from "../lib/records/rule_engine.ts";

const PUBLIC = { mode: "public", expr: "" };
const ADMIN_ONLY = { mode: "", expr: "" };
const custom = (expr: string) => ({ mode: "custom", expr });
const relation = (name: string, entity: string, on_delete = "set null") => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete },
});
const OWNER = "record.project.owner == auth.id";

interface World {
  s: TestServer;
  admin: string;
  alice: { id: string; token: string };
  bob: { id: string; token: string };
  carol: { id: string; token: string };
  /** Project ids by name. */
  projects: Record<string, string>;
  /** Task ids by title. */
  tasks: Record<string, string>;
  /** Post ids by title. */
  posts: Record<string, string>;
}

async function call(
  w: World,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Reply> {
  return await w.s.request(method, `/api/v1/${path}`, { token, body });
}

async function make(
  w: World,
  entity: string,
  body: Record<string, unknown>,
): Promise<string> {
  const r = await call(w, "POST", `entities/${entity}`, w.admin, body);
  assertStatus(r, 201, `create ${entity}`);
  return String(r.data.id);
}

/** The ids a list answers (every page). */
async function ids(
  w: World,
  entity: string,
  token: string,
  query = "",
): Promise<string[]> {
  const r = await call(
    w,
    "GET",
    `entities/${entity}?limit=500&${query}`,
    token,
  );
  assertStatus(r, 200, `list ${entity}?${query}`);
  return (r.data.items as { id: string }[]).map((x) => x.id).sort();
}

const sorted = (list: string[]) => [...list].sort();

async function setup(s: TestServer): Promise<World> {
  const admin = await s.adminToken();
  await createSchema(s, admin, {
    name: "teams",
    type: "base",
    fields: [{ name: "name", type: "string" }],
    rules: { list: PUBLIC, get: PUBLIC },
  });
  // Users see the public users and themselves.
  const seen = "record.public == true || record.id == auth.id";
  await createSchema(s, admin, {
    name: "people",
    type: "auth",
    fields: [
      { name: "name", type: "string" },
      { name: "public", type: "bool" },
      relation("team", "teams"),
    ],
    rules: { list: custom(seen), get: custom(seen) },
  });
  await createSchema(s, admin, {
    name: "projects",
    type: "base",
    fields: [{ name: "name", type: "string" }, relation("owner", "people")],
    rules: { list: PUBLIC, get: PUBLIC },
  });
  await createSchema(s, admin, {
    name: "tasks",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      relation("project", "projects"),
    ],
    rules: {
      list: custom(OWNER),
      get: custom(OWNER),
      add: custom(OWNER),
      update: custom(OWNER),
      delete: custom(OWNER),
    },
  });
  await createSchema(s, admin, {
    name: "posts",
    type: "base",
    fields: [{ name: "title", type: "string" }, relation("author", "people")],
    rules: { list: PUBLIC, get: PUBLIC },
  });
  // Flagged comments are hidden from everyone but admins.
  await createSchema(s, admin, {
    name: "comments",
    type: "base",
    fields: [
      { name: "body", type: "string" },
      { name: "flagged", type: "bool" },
      relation("post", "posts", "cascade"),
    ],
    rules: {
      list: custom("record.flagged == false"),
      get: custom("record.flagged == false"),
    },
  });
  await createSchema(s, admin, {
    name: "vault",
    type: "base",
    fields: [{ name: "code", type: "string" }, relation("keeper", "people")],
    rules: { list: ADMIN_ONLY, get: ADMIN_ONLY },
  });
  const w: World = {
    s,
    admin,
    alice: { id: "", token: "" },
    bob: { id: "", token: "" },
    carol: { id: "", token: "" },
    projects: {},
    tasks: {},
    posts: {},
  };
  const core = await make(w, "teams", { name: "core" });
  const other = await make(w, "teams", { name: "other" });
  for (
    const [who, name, team, pub] of [
      ["alice", "Alice", core, true],
      ["bob", "Bob", other, true],
      ["carol", "Carol", core, false],
    ] as const
  ) {
    const u = await fastUser(s, "people", { email: `${who}@x.io`, name });
    const r = await call(w, "PATCH", `entities/people/${u.id}`, admin, {
      team,
      public: pub,
    });
    assertStatus(r, 200, `people ${who}`);
    w[who] = { id: u.id, token: await issue(s, "people", u.id) };
  }
  w.projects.a = await make(w, "projects", { name: "A", owner: w.alice.id });
  w.projects.b = await make(w, "projects", { name: "B", owner: w.bob.id });
  w.projects.none = await make(w, "projects", { name: "N" });
  for (
    const [title, p] of [["a1", "a"], ["a2", "a"], ["b1", "b"], ["n1", "none"]]
  ) {
    w.tasks[title] = await make(w, "tasks", { title, project: w.projects[p] });
  }
  w.tasks.loose = await make(w, "tasks", { title: "loose" });
  // Posts: by Alice (3 comments, one flagged), Bob (1), Carol (none), nobody.
  for (
    const [title, author] of [
      ["pa", w.alice.id],
      ["pb", w.bob.id],
      ["pc", w.carol.id],
      ["px", null],
    ] as const
  ) {
    w.posts[title] = await make(w, "posts", { title, author });
  }
  for (
    const [body, flagged, post] of [
      ["hi", false, "pa"],
      ["ok", false, "pa"],
      ["secret", true, "pa"],
      ["hi", false, "pb"],
    ] as const
  ) {
    await make(w, "comments", { body, flagged, post: w.posts[post] });
  }
  return w;
}

async function setRule(
  w: World,
  entity: string,
  rules: Record<string, unknown>,
): Promise<Reply> {
  return await call(w, "PATCH", `schemas/${entity}`, w.admin, { rules });
}

forEachDb("rules and filters read through relations", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await setup(s);
    const { alice, bob } = w;

    await t.step("record.project.owner == auth.id: list, get", async () => {
      assertEquals(
        await ids(w, "tasks", alice.token),
        sorted([w.tasks.a1, w.tasks.a2]),
      );
      assertEquals(await ids(w, "tasks", bob.token), [w.tasks.b1]);
      assertStatus(
        await call(w, "GET", `entities/tasks/${w.tasks.b1}`, alice.token),
        404,
      );
      assertStatus(
        await call(w, "GET", `entities/tasks/${w.tasks.a1}`, alice.token),
        200,
      );
      // A task with no project, or a project with no owner: nobody's.
      assertStatus(
        await call(w, "GET", `entities/tasks/${w.tasks.n1}`, alice.token),
        404,
      );
    });

    await t.step(
      "record.project.owner == auth.id: create, update, delete",
      async () => {
        const mine = await call(w, "POST", "entities/tasks", alice.token, {
          title: "new",
          project: w.projects.a,
        });
        assertStatus(mine, 201, "create in own project");
        const theirs = await call(w, "POST", "entities/tasks", alice.token, {
          title: "sneak",
          project: w.projects.b,
        });
        assertStatus(theirs, 403, "create in another's project");
        assertStatus(
          await call(w, "PATCH", `entities/tasks/${w.tasks.b1}`, alice.token, {
            title: "x",
          }),
          404,
          "update another's task",
        );
        assertStatus(
          await call(
            w,
            "PATCH",
            `entities/tasks/${mine.data.id}`,
            alice.token,
            {
              title: "renamed",
            },
          ),
          200,
          "update own task",
        );
        // The rule holds for the record as it would be stored: moving it away is refused.
        const moved = await call(
          w,
          "PATCH",
          `entities/tasks/${mine.data.id}`,
          alice.token,
          { project: w.projects.b },
        );
        assert(moved.status === 403 || moved.status === 404, moved.text);
        assertStatus(
          await call(w, "DELETE", `entities/tasks/${w.tasks.b1}`, alice.token),
          404,
          "delete another's task",
        );
        assertStatus(
          await call(
            w,
            "DELETE",
            `entities/tasks/${mine.data.id}`,
            alice.token,
          ),
          204,
          "delete own task",
        );
      },
    );

    await t.step(
      "a relation rule checked row by row (not compiled to SQL)",
      async () => {
        // `+ ""` on a related column has no SQL: the related records are read per row.
        const perRow = '(record.project.owner + "") == auth.id';
        assertStatus(
          await setRule(w, "tasks", {
            list: custom(perRow),
            get: custom(perRow),
            update: custom(perRow),
          }),
          200,
        );
        const r = await call(w, "GET", "entities/tasks?limit=500", alice.token);
        assertStatus(r, 200);
        assert(r.headers.get("x-moonbase-checked") !== null, "checked per row");
        assertEquals(
          sorted(r.data.items.map((x: { id: string }) => x.id)),
          sorted([w.tasks.a1, w.tasks.a2]),
        );
        assertStatus(
          await call(w, "GET", `entities/tasks/${w.tasks.b1}`, alice.token),
          404,
        );
        assertStatus(
          await call(w, "PATCH", `entities/tasks/${w.tasks.a1}`, alice.token, {
            title: "a1",
          }),
          200,
        );
        const away = await call(
          w,
          "PATCH",
          `entities/tasks/${w.tasks.a1}`,
          alice.token,
          { project: w.projects.b },
        );
        assert(away.status === 403 || away.status === 404, away.text);
        assertStatus(
          await setRule(w, "tasks", {
            list: custom(OWNER),
            get: custom(OWNER),
            update: custom(OWNER),
          }),
          200,
        );
      },
    );

    await t.step(
      "a batch: the rule reads the project the same batch created",
      async () => {
        // The add rule's check reads the new project inside the batch's transaction.
        const r = await w.s.request("POST", "/api/v1/batch", {
          token: w.admin,
          body: {
            requests: [{
              method: "POST",
              url: "/api/v1/entities/projects",
              body: { name: "fresh", owner: alice.id },
            }],
          },
        });
        assertStatus(r, 200);
        const fresh = r.data[0].data.id;
        const id = "0190f0f0-0000-7000-8000-00000000b001";
        const made = [
          {
            method: "PUT",
            url: "/api/v1/entities/projects",
            body: { id, name: "in batch", owner: alice.id },
          },
          {
            method: "POST",
            url: "/api/v1/entities/tasks",
            body: { title: "batched", project: id },
          },
          {
            method: "POST",
            url: "/api/v1/entities/tasks",
            body: { title: "batched 2", project: fresh },
          },
        ];
        assertStatus(
          await setRule(w, "projects", {
            add: custom("record.owner == auth.id"),
            update: custom("record.owner == auth.id"),
          }),
          200,
        );
        const ok = await w.s.request("POST", "/api/v1/batch", {
          token: alice.token,
          body: { requests: made },
        });
        assertStatus(ok, 200, "a task in the project made in the same batch");
        // Bob may not put a task in Alice's new project: the batch fails whole.
        const theirs = await w.s.request("POST", "/api/v1/batch", {
          token: bob.token,
          body: { requests: [made[2]] },
        });
        assertStatus(theirs, 403);
        for (const i of [1, 2]) {
          assertStatus(
            await call(
              w,
              "DELETE",
              `entities/tasks/${ok.data[i].data.id}`,
              alice.token,
            ),
            204,
          );
        }
        for (const p of [id, fresh]) {
          assertStatus(
            await call(w, "DELETE", `entities/projects/${p}`, w.admin),
            204,
          );
        }
        assertStatus(
          await setRule(w, "projects", { add: ADMIN_ONLY, update: ADMIN_ONLY }),
          200,
        );
      },
    );

    await t.step(
      "auth.user.team.name and record.author.team == auth.user.team",
      async () => {
        assertStatus(
          await setRule(w, "posts", {
            list: custom('auth.user.team.name == "core"'),
            get: custom("record.author.team == auth.user.team"),
          }),
          200,
        );
        assertStatus(await call(w, "GET", "entities/posts", alice.token), 200);
        assertStatus(await call(w, "GET", "entities/posts", bob.token), 403);
        // Alice (core) reads posts of core members (her own, Carol's).
        for (
          const [p, want] of [["pa", 200], ["pc", 200], ["pb", 404], [
            "px",
            404,
          ]] as const
        ) {
          assertStatus(
            await call(w, "GET", `entities/posts/${w.posts[p]}`, alice.token),
            want,
            p,
          );
        }
        assertStatus(
          await call(w, "GET", `entities/posts/${w.posts.pb}`, bob.token),
          200,
        );
      },
    );

    await t.step("back-relations: .length, .some, .every", async () => {
      const cases: [string, string[]][] = [
        ["record.comments_via_post.length >= 2", ["pa"]],
        ["record.comments_via_post.length == 0", ["pc", "px"]],
        ['record.comments_via_post.some(c => c.body == "hi")', ["pa", "pb"]],
        ["record.comments_via_post.every(c => c.flagged == false)", [
          "pb",
          "pc",
          "px",
        ]],
        [
          'record.comments_via_post.some((c) => c.body == "hi" && c.post == record.id) && record.author.name == "Alice"',
          [
            "pa",
          ],
        ],
        ['record.author.posts_via_author.some(p => p.title == "pb")', ["pb"]],
      ];
      for (const [rule, want] of cases) {
        assertStatus(
          await setRule(w, "posts", { list: custom(rule) }),
          200,
          rule,
        );
        assertEquals(
          await ids(w, "posts", bob.token),
          sorted(want.map((p) => w.posts[p])),
          rule,
        );
      }
      assertStatus(
        await setRule(w, "posts", { list: PUBLIC, get: PUBLIC }),
        200,
      );
    });

    await t.step("back-relations through a multiple relation", async () => {
      await createSchema(s, w.admin, {
        name: "notes",
        type: "base",
        fields: [{ name: "title", type: "string" }, {
          ...relation("readers", "people"),
          multiple: true,
        }],
        rules: { list: PUBLIC, get: PUBLIC },
      });
      await make(w, "notes", { title: "n1", readers: [alice.id, bob.id] });
      await make(w, "notes", { title: "n2", readers: [bob.id] });
      await make(w, "notes", { title: "n3", readers: [] });
      const q = (f: string) => `filter=${encodeURIComponent(f)}`;
      assertEquals(
        await ids(w, "people", w.admin, q("notes_via_readers.length == 2")),
        [bob.id],
      );
      assertEquals(
        await ids(
          w,
          "people",
          w.admin,
          q('notes_via_readers.some(n => n.title == "n1")'),
        ),
        sorted([alice.id, bob.id]),
      );
      const seen = "record.public == true || record.id == auth.id";
      assertStatus(
        await setRule(w, "people", {
          list: custom(
            `(${seen}) && record.notes_via_readers.every(n => n.title != "n2")`,
          ),
        }),
        200,
      );
      assertEquals(await ids(w, "people", alice.token), [alice.id]);
      assertStatus(await setRule(w, "people", { list: custom(seen) }), 200);
    });

    await t.step(
      "forward through a multiple relation: .some, .every in rules and filters",
      async () => {
        // notes: n1 [alice, bob], n2 [bob], n3 [] (the step above); Carol is
        // hidden from the others (people: public ones and oneself).
        const { carol } = w;
        const notes: Record<string, string> = {};
        for (
          const x of (await call(w, "GET", "entities/notes", w.admin)).data
            .items as { id: string; title: string }[]
        ) notes[x.title] = x.id;
        notes.n4 = await make(w, "notes", { title: "n4", readers: [carol.id] });
        notes.n5 = await make(w, "notes", {
          title: "n5",
          readers: [alice.id, carol.id],
        });
        const q = (f: string) => `filter=${encodeURIComponent(f)}`;
        const of = (...names: string[]) => sorted(names.map((n) => notes[n]));
        for (
          const [token, filter, want] of [
            [w.admin, 'readers.some(r => r.name == "Alice")', of("n1", "n5")],
            [
              w.admin,
              "readers.every(r => r.public == true)",
              of("n1", "n2", "n3"),
            ],
            [w.admin, "readers.length == 1", of("n2", "n4")],
            [
              w.admin,
              'readers.some(r => r.team.name == "other")',
              of("n1", "n2"),
            ],
            // A filter reads a reader only as the caller could read it.
            [bob.token, 'readers.some(r => r.name == "Carol")', []],
            [
              bob.token,
              "readers.every(r => r.public == true)",
              of("n1", "n2", "n3", "n4", "n5"),
            ],
            [
              carol.token,
              'readers.some(r => r.name == "Carol")',
              of("n4", "n5"),
            ],
            [w.admin, 'readers.some(r => r.name == "Carol")', of("n4", "n5")],
          ] as const
        ) {
          assertEquals(
            await ids(w, "notes", token, q(filter)),
            [...want],
            `${filter} (${token === w.admin ? "admin" : "user"})`,
          );
        }
        // A back-relation of the records it points at is a filter's 400 (its cost).
        const fan = await call(
          w,
          "GET",
          `entities/notes?${
            q("readers.some(r => r.notes_via_readers.length > 1)")
          }`,
          w.admin,
        );
        assertStatus(fan, 400);
        assert(/of a related record/.test(fan.error), fan.error);
        // The same when the people rule has no SQL (the readers read per row).
        const seen = "record.public == true || record.id == auth.id";
        const perRow = '(record.public + "") == "true" || record.id == auth.id';
        assertStatus(
          await setRule(w, "people", {
            list: custom(perRow),
            get: custom(perRow),
          }),
          200,
        );
        assertEquals(
          await ids(
            w,
            "notes",
            bob.token,
            q('readers.some(r => r.name == "Carol")'),
          ),
          [],
        );
        assertEquals(
          await ids(
            w,
            "notes",
            bob.token,
            q('readers.some(r => r.name == "Alice")'),
          ),
          of("n1", "n5"),
        );
        assertStatus(
          await setRule(w, "people", { list: custom(seen), get: custom(seen) }),
          200,
        );

        // Rules read the readers whatever their own rules say.
        const team = "record.readers.some(r => r.team == auth.user.team)";
        const pub =
          "record.readers.length > 0 && record.readers.every(r => r.public == true)";
        assertStatus(
          await setRule(w, "notes", {
            list: custom(team),
            get: custom(team),
            add: custom(pub),
          }),
          200,
        );
        assertEquals(await ids(w, "notes", alice.token), of("n1", "n4", "n5"));
        assertEquals(await ids(w, "notes", bob.token), of("n1", "n2"));
        assertStatus(
          await call(w, "GET", `entities/notes/${notes.n2}`, alice.token),
          404,
        );
        assertStatus(
          await call(w, "GET", `entities/notes/${notes.n4}`, alice.token),
          200,
        );
        assertStatus(
          await call(w, "POST", "entities/notes", alice.token, {
            readers: [carol.id],
          }),
          403,
        );
        assertStatus(
          await call(w, "POST", "entities/notes", alice.token, {
            readers: [bob.id, alice.id],
          }),
          201,
        );
        // Names are checked through it; its ids are still a list of ids.
        const bad = await setRule(w, "notes", {
          list: custom('record.readers.some(r => r.nam == "x")'),
        });
        assertStatus(bad, 400);
        assert(/did you mean "r\.name"/.test(bad.error), bad.error);
        assertStatus(
          await setRule(w, "notes", {
            list: custom("record.readers.name == 1"),
          }),
          400,
        );
        assertStatus(
          await setRule(w, "notes", {
            list: PUBLIC,
            get: PUBLIC,
            add: ADMIN_ONLY,
          }),
          200,
        );
      },
    );

    await t.step("filters with bare relation paths", async () => {
      const q = (f: string) => `filter=${encodeURIComponent(f)}`;
      assertEquals(
        await ids(w, "tasks", w.admin, q(`project.owner == "${alice.id}"`)),
        sorted([w.tasks.a1, w.tasks.a2]),
      );
      assertEquals(
        await ids(w, "tasks", w.admin, q("project.owner == null")),
        sorted([w.tasks.n1, w.tasks.loose]),
      );
      assertEquals(
        await ids(w, "posts", w.admin, q('author.team.name == "core"')),
        sorted([w.posts.pa, w.posts.pc]),
      );
      assertEquals(
        await ids(w, "posts", w.admin, q("comments_via_post.length > 1")),
        [w.posts.pa],
      );
      assertEquals(
        await ids(
          w,
          "posts",
          alice.token,
          q('comments_via_post.some(c => c.body == "hi") && author.name != "Bob"'),
        ),
        [w.posts.pa],
      );
    });

    await t.step("sort by a related field, with cursors", async () => {
      // Admin: every author readable. Names: Alice, Bob, Carol; px has none (NULL first).
      for (
        const [sort, want] of [
          ["author.name", ["px", "pa", "pb", "pc"]],
          ["-author.name", ["pc", "pb", "pa", "px"]],
          ["author.team.name,-title", ["px", "pc", "pa", "pb"]],
        ] as const
      ) {
        const seen: string[] = [];
        let after = "";
        for (let page = 0; page < 5; page++) {
          const r = await call(
            w,
            "GET",
            `entities/posts?limit=1&sort=${sort}${
              after ? `&after=${after}` : ""
            }`,
            w.admin,
          );
          assertStatus(r, 200, sort);
          seen.push(...r.data.items.map((x: { id: string }) => x.id));
          if (!r.data.cursor) break;
          after = r.data.cursor;
        }
        assertEquals(seen, want.map((p) => w.posts[p]), sort);
      }
      const bad = await call(
        w,
        "GET",
        "entities/posts?sort=author.nmae",
        w.admin,
      );
      assertStatus(bad, 400);
      assert(bad.error.includes('did you mean "name"'), bad.error);
      assertStatus(
        await call(w, "GET", "entities/posts?sort=title.name", w.admin),
        400,
      );
    });

    await t.step(
      "six relations deep; seven is refused with its position",
      async () => {
        await createSchema(s, w.admin, {
          name: "chain",
          type: "base",
          fields: [{ name: "name", type: "string" }, relation("next", "chain")],
          rules: { list: PUBLIC },
        });
        let next: string | null = null;
        const made: string[] = [];
        for (let i = 0; i < 8; i++) {
          next = await make(w, "chain", { name: `n${i}`, next });
          made.push(next);
        }
        // made[7] → made[6] → … → made[0]: made[k] reaches n0 after k hops.
        const six = "record.next.next.next.next.next.next.name == 'n0'";
        assertStatus(await setRule(w, "chain", { list: custom(six) }), 200);
        assertEquals(await ids(w, "chain", bob.token), [made[6]]);
        const seven = "record.next.next.next.next.next.next.next.name == 'n0'";
        const r = await setRule(w, "chain", { list: custom(seven) });
        assertStatus(r, 400);
        assert(
          r.error.endsWith(
            `reads through more than 6 relations at ${
              seven.indexOf(".name") + 1
            }`,
          ),
          r.error,
        );
        const f = await call(
          w,
          "GET",
          `entities/chain?filter=${
            encodeURIComponent("next.next.next.next.next.next.name == 'n0'")
          }`,
          w.admin,
        );
        assertStatus(f, 200);
        assertEquals(f.data.items.map((x: { id: string }) => x.id), [made[6]]);
      },
    );

    await t.step(
      "names that do not exist: 400 with position and closest name",
      async () => {
        for (
          const [rule, message] of [
            [
              "record.project.ownr == auth.id",
              /unknown name "record\.project\.ownr" \(did you mean "record\.project\.owner"\?\) at 15/,
            ],
            [
              "record.project.owner.nme == 'x'",
              /unknown name "record\.project\.owner\.nme" \(did you mean "record\.project\.owner\.name"\?\) at 21/,
            ],
            [
              "record.project.owner.password != ''",
              /unknown name "record\.project\.owner\.password"/,
            ],
            [
              "record.project.tasks_via_project.some(t => t.titel == 'x')",
              /unknown name "t\.titel" \(did you mean "t\.title"\?\) at 45$/,
            ],
            [
              "record.project.tasks_via_project == 1",
              /is a list of records: read it with \.length/,
            ],
          ] as const
        ) {
          const r = await setRule(w, "tasks", { get: custom(rule) });
          assertStatus(r, 400, rule);
          assert(message.test(r.error), `${rule}: ${r.error}`);
        }
        const f = await call(
          w,
          "GET",
          `entities/tasks?filter=${encodeURIComponent("project.ownr == 1")}`,
          w.admin,
        );
        assertStatus(f, 400);
        assert(/did you mean "project\.owner"\?\) at 8/.test(f.error), f.error);
      },
    );

    await t.step(
      "a schema change that breaks a relation rule: 409",
      async () => {
        const schema = await call(w, "GET", "schemas/projects", w.admin);
        const owner = schema.data.fields.find((f: { name: string }) =>
          f.name === "owner"
        );
        const rename = await call(w, "PATCH", "schemas/projects", w.admin, {
          fields: [{ ...owner, name: "lead" }],
        });
        assertStatus(rename, 409, "rename projects.owner");
        assert(/record\.project\.owner/.test(rename.error), rename.error);
        const drop = await call(w, "PATCH", "schemas/projects", w.admin, {
          fields: [{ id: owner.id, op: "delete" }],
        });
        assertStatus(drop, 409, "drop projects.owner");
        const people = await call(w, "GET", "schemas/people", w.admin);
        const name = people.data.fields.find((f: { name: string }) =>
          f.name === "name"
        );
        assertStatus(
          await setRule(w, "posts", {
            list: custom("record.author.name != ''"),
          }),
          200,
        );
        const renamed = await call(w, "PATCH", "schemas/people", w.admin, {
          fields: [{ ...name, name: "fullname" }],
        });
        assertStatus(renamed, 409, "rename people.name used by posts");
        assertStatus(await setRule(w, "posts", { list: PUBLIC }), 200);
      },
    );

    await t.step(
      "EXPLAIN: the relation indexes serve relation rules",
      async () => {
        const entity = s.app.schemas.get("tasks")!;
        const fieldId = (e: string, f: string) =>
          s.app.schemas.get(e)!.field(f)!.id.replaceAll("-", "").toLowerCase();
        const check = async (
          target: string,
          where: { sql: string; params: unknown[] },
          index: string,
        ) => {
          const explain = db === "sqlite" ? "EXPLAIN QUERY PLAN" : "EXPLAIN";
          const plan = await s.app.storage.transaction(async (tx) => {
            if (db === "postgres") {
              await tx.exec("SET LOCAL enable_seqscan = off");
            }
            return await tx.query(
              `${explain} SELECT "id" FROM ${
                tableOf(target)
              } WHERE ${where.sql}`,
              where.params as string[],
            );
          });
          const text = plan.map((r) => String(r.detail ?? r["QUERY PLAN"]))
            .join("\n");
          assert(text.includes(index), `${index} not in:\n${text}`);
        };
        const rules = new ExpressionRules();
        const auth = {
          id: alice.id,
          entity: "people",
          type: "user" as const,
          user: null,
        };
        const req = { body: {}, query: {}, method: "GET" };
        const forward = await rules.access(entity, "list", OWNER, auth, req);
        assert(forward.where && !forward.keep, "compiled to SQL");
        await check(
          "tasks",
          forward.where,
          `mbr_${fieldId("tasks", "project")}`,
        );
        const posts = s.app.schemas.get("posts")!;
        const back = await rules.access(
          posts,
          "list",
          'record.comments_via_post.some(c => c.body == "hi")',
          auth,
          req,
        );
        assert(back.where && !back.keep, "compiled to SQL");
        await check("posts", back.where, `mbr_${fieldId("comments", "post")}`);
      },
    );

    await t.step(
      "attack: a filter cannot read a hidden field or a hidden record",
      async () => {
        const q = (f: string) => `filter=${encodeURIComponent(f)}`;
        const pw = await call(
          w,
          "GET",
          `entities/posts?${q('author.password != ""')}`,
          bob.token,
        );
        assertStatus(pw, 400, "password through a relation");
        // Carol is hidden from Bob: her name cannot be probed through her post.
        assertEquals(
          await ids(w, "posts", bob.token, q('author.name == "Carol"')),
          [],
        );
        assertEquals(
          await ids(w, "posts", bob.token, q('author.name.startsWith("C")')),
          [],
        );
        assertEquals(
          await ids(w, "posts", w.admin, q('author.name == "Carol"')),
          [w.posts.pc],
        );
        // The flagged comment is hidden from Bob: it neither counts nor matches.
        assertEquals(
          await ids(
            w,
            "posts",
            bob.token,
            q('comments_via_post.some(c => c.body == "secret")'),
          ),
          [],
        );
        assertEquals(
          await ids(w, "posts", bob.token, q("comments_via_post.length == 3")),
          [],
        );
        assertEquals(
          await ids(w, "posts", w.admin, q("comments_via_post.length == 3")),
          [w.posts.pa],
        );
        // Into an entity whose rule mode refuses the caller: refused outright.
        const vault = await call(
          w,
          "GET",
          `entities/people?${q("vault_via_keeper.length > 0")}`,
          bob.token,
        );
        assertStatus(vault, 400, "back-relation into an admin-only entity");
      },
    );

    await t.step(
      "attack: a sort cannot order by a hidden field or record",
      async () => {
        assertStatus(
          await call(
            w,
            "GET",
            "entities/posts?sort=author.password",
            bob.token,
          ),
          400,
        );
        // Carol is hidden from Bob: her post sorts as if it had no author,
        // whatever her name (NULL first), never by her name.
        const r = await call(
          w,
          "GET",
          "entities/posts?sort=author.name&limit=10",
          bob.token,
        );
        assertStatus(r, 200);
        const order = r.data.items.map((x: { id: string }) => x.id);
        assertEquals(order.slice(2), [w.posts.pa, w.posts.pb]);
        assertEquals(
          sorted(order.slice(0, 2)),
          sorted([w.posts.pc, w.posts.px]),
        );
      },
    );

    await t.step(
      "a filter under a related rule checked row by row still hides",
      async () => {
        // comments' list rule now needs the evaluator: the filter runs per row.
        assertStatus(
          await setRule(w, "comments", {
            list: custom('(record.flagged + "") == "false"'),
          }),
          200,
        );
        const q = (f: string) => `filter=${encodeURIComponent(f)}`;
        assertEquals(
          await ids(
            w,
            "posts",
            bob.token,
            q('comments_via_post.some(c => c.body == "secret")'),
          ),
          [],
        );
        assertEquals(
          await ids(
            w,
            "posts",
            bob.token,
            q('comments_via_post.some(c => c.body == "ok")'),
          ),
          [w.posts.pa],
        );
      },
    );
  } finally {
    await s.close();
  }
});
