/**
 * Rules that read the request and the caller, on both databases:
 * `req.body` sees the JSON body and multipart/form-data bodies (fields
 * converted to the field's type, `@jsonPayload` included) — a peer
 * implementation always saw it empty; `req.query.x` and `req.method` decide
 * each operation; `auth.user.*` is the stored user (a role claimed in the
 * body does not count, changes apply at once to the same token); rules
 * mixing the record with the caller (published-or-mine, team and project
 * membership) list and get exactly what JavaScript would select.
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { eq, status } from "./_checks.ts";
import {
  allPages,
  create,
  ids,
  type Page,
  type Rec,
  schema,
  setupUsers,
  stored,
} from "./_rules_fixtures.ts";

/**
 * Creates `name` (title, status, n; public reads) whose add rule needs
 * `title == "magic"` and `n >= 2` in the body, whose update rule refuses
 * `status: "published"` and whose delete rule reads a body it never has.
 */
async function articles(s: TestServer, admin: string, name: string) {
  await schema(s, admin, {
    name,
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
        expr: 'auth.id != "" && req.body.title == "magic" && req.body.n >= 2',
      },
      update: { mode: "custom", expr: 'req.body.status != "published"' },
      delete: { mode: "custom", expr: "req.body.title == undefined" },
    },
  });
}

function form(entries: Record<string, string>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(entries)) f.append(k, v);
  return f;
}

// Each step creates and uses an entity of its own; the users are only read.
forEachDb("rules reading the request and the caller", async (t, db) => {
  const s = await startServer(db);
  try {
    const { admin, alice, bob, carol, tAlice, tBob, tCarol } = await setupUsers(
      s,
    );

    await t.step("req.body rules see the JSON body", async () => {
      await articles(s, admin, "articles_json");
      const path = "/api/v1/entities/articles_json";
      const c = await s.request("POST", path, {
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
        const body of [
          { title: "other", n: 5 },
          { title: "magic", n: 1 },
          { title: "magic" },
        ]
      ) {
        const d = await s.request("POST", path, { token: tAlice, body });
        status(d, 403, `create with ${JSON.stringify(body)}`);
      }
      const cnt = await s.request("GET", `${path}?count=true`);
      eq(cnt.data.total, 1, "refused creates stored nothing");

      const p = await s.request("PATCH", `${path}/${id}`, {
        token: tAlice,
        body: { status: "published" },
      });
      status(p, 403, "publish through the API");
      let now = await stored(s, admin, "articles_json", id);
      eq(now?.status, "draft", "not published");
      const p2 = await s.request("PATCH", `${path}/${id}`, {
        token: tAlice,
        body: { status: "review", title: "magic 2" },
      });
      status(p2, 200, "other status");
      eq([p2.data.status, p2.data.title], ["review", "magic 2"], "patched");
      now = await stored(s, admin, "articles_json", id);
      eq(now?.status, "review", "stored");
      // Guest: the rule does not read the record → 401 when it refuses.
      const pg = await s.request("PATCH", `${path}/${id}`, {
        body: { status: "published" },
      });
      status(pg, 401, "guest publishes");
      eq(
        (await stored(s, admin, "articles_json", id))?.status,
        "review",
        "unchanged",
      );
    });

    await t.step("req.body rules see multipart/form-data bodies", async () => {
      await articles(s, admin, "articles_form");
      const path = "/api/v1/entities/articles_form";
      const c = await s.request("POST", path, {
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
      const bad = await s.request("POST", path, {
        token: tBob,
        raw: form({ title: "nope", n: "3" }),
      });
      status(bad, 403, "multipart create without the value");
      const low = await s.request("POST", path, {
        token: tBob,
        raw: form({ title: "magic", n: "1" }),
      });
      status(low, 403, "multipart n converted then compared (1 < 2)");
      // @jsonPayload values are part of req.body too.
      const jp = await s.request("POST", path, {
        token: tBob,
        raw: form({ "@jsonPayload": JSON.stringify({ title: "magic", n: 4 }) }),
      });
      status(jp, 201, "@jsonPayload create");
      eq([jp.data.title, jp.data.n], ["magic", 4], "@jsonPayload data");
      const cnt = await s.request("GET", `${path}?count=true`);
      eq(cnt.data.total, 2, "exactly the allowed creates stored");

      const p = await s.request("PATCH", `${path}/${id}`, {
        token: tBob,
        raw: form({ status: "published" }),
      });
      status(p, 403, "multipart publish");
      eq(
        (await stored(s, admin, "articles_form", id))?.status,
        "draft",
        "unchanged",
      );
      const p2 = await s.request("PATCH", `${path}/${id}`, {
        token: tBob,
        raw: form({ status: "archived" }),
      });
      status(p2, 200, "multipart other status");
      eq(
        (await stored(s, admin, "articles_form", id))?.status,
        "archived",
        "stored",
      );
      // The delete rule has no body to read: passes.
      const d = await s.request("DELETE", `${path}/${id}`, { token: tBob });
      status(d, 204, "delete (empty body)");
      eq(await stored(s, admin, "articles_form", id), undefined, "deleted");
    });

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
      const path = "/api/v1/entities/gated";
      const a = await s.request("POST", path, {
        token: tAlice,
        body: { title: "one" },
      });
      status(a, 201, "add with req.method POST");
      const b = await create(s, admin, "gated", { title: "two" });
      await create(s, admin, "gated", { title: "three" });
      const l = await s.request("GET", `${path}?limit=2`, { token: tAlice });
      status(l, 200, "list with limit=2");
      eq(
        (l.data as Page).items.map((x) => x.title),
        ["one", "two"],
        "list items",
      );
      const g = await s.request("GET", `${path}/${b.id}?key=open-sesame`);
      status(g, 200, "guest get with the key");
      eq(g.data.title, "two", "get data");
      // Refusals that do not depend on the record: 403 with a token, 401
      // for a guest; nothing changes.
      const refused: [string, string, string | undefined, number][] = [
        ["list with limit=3", `${path}?limit=3`, tAlice, 403],
        ["guest list with limit=3", `${path}?limit=3`, undefined, 401],
        ["get with a wrong key", `${path}/${b.id}?key=wrong`, tAlice, 403],
        ["get without key", `${path}/${b.id}`, tAlice, 403],
        ["guest get without key", `${path}/${b.id}`, undefined, 401],
      ];
      for (const [name, url, token, code] of refused) {
        status(await s.request("GET", url, { token }), code, name);
      }
      const u = await s.request("PATCH", `${path}/${b.id}`, {
        token: tAlice,
        body: { title: "patched" },
      });
      status(u, 403, "PATCH is not PUT");
      eq((await stored(s, admin, "gated", b.id))?.title, "two", "unchanged");
      status(
        await s.request("DELETE", `${path}/${b.id}`, { token: tAlice }),
        403,
        "delete without confirm",
      );
      eq((await stored(s, admin, "gated", b.id))?.title, "two", "kept");
      status(
        await s.request("DELETE", `${path}/${b.id}?confirm=yes`, {
          token: tAlice,
        }),
        204,
        "delete with confirm",
      );
      eq(await stored(s, admin, "gated", b.id), undefined, "deleted");
    });

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
      const denied: [string, string, Record<string, string> | undefined][] = [
        ["GET", "/api/v1/entities/drafts", undefined],
        ["GET", `/api/v1/entities/drafts/${d.id}`, undefined],
        ["POST", "/api/v1/entities/drafts", { title: "by alice" }],
        ["PATCH", `/api/v1/entities/drafts/${d.id}`, {
          title: "alice was here",
        }],
        ["DELETE", `/api/v1/entities/drafts/${d.id}`, undefined],
      ];
      for (const [method, path, body] of denied) {
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
      status(claim, [403, 400], "role in body");
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
  } finally {
    await s.close();
  }
});

// The first step changes carol's `verified` and `role`; the membership steps
// read only `team` and `projects` (set by the fixture): no step reads what
// another writes.
forEachDb("rules reading auth.user: the stored user", async (t, db) => {
  const s = await startServer(db);
  try {
    const { admin, alice, bob, carol, tAlice, tBob, tCarol } = await setupUsers(
      s,
    );
    const setUser = async (u: Rec, body: Record<string, unknown>) => {
      const r = await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
        token: admin,
        body,
      });
      status(r, 200, `set ${JSON.stringify(body)}`);
      return r;
    };
    await setUser(alice, { team: "red", projects: ["p1", "p3"] });
    await setUser(bob, { team: "blue", projects: ["p2"] });
    await setUser(carol, { team: null, projects: null });

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
        const p = await setUser(carol, { verified: true });
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
        await setUser(carol, { role: "writer" });
        status(
          await s.request("GET", "/api/v1/entities/vip", { token: tCarol }),
          403,
          "demoted, same token",
        );
      },
    );

    const users: [string, string, string | null, string[] | null][] = [
      ["alice", tAlice, "red", ["p1", "p3"]],
      ["bob", tBob, "blue", ["p2"]],
      ["carol", tCarol, null, null],
    ];
    // Compiled to SQL and checked row by row (`.length`), same selection.
    const MEMBERSHIP: [string, string][] = [
      ["tasks", "record.team == auth.user.team"],
      ["tasks_js", "record.team == auth.user.team && record.title.length > 0"],
      ["pdocs", "auth.user.projects.includes(record.project)"],
      [
        "pdocs_js",
        "auth.user.projects.includes(record.project) && record.title.length > 0",
      ],
    ];
    for (const [name, expr] of MEMBERSHIP) {
      await t.step(`membership: ${expr}`, async () => {
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
              ? r.team === team || (r.team === null && team === null)
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
      });
    }
  } finally {
    await s.close();
  }
});
