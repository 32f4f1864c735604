/**
 * The schema routes (`/api/v1/schemas`): create every field type, get by id
 * or name, list; names (64 characters, SQL keywords); PATCH of fields, rules
 * and `has_api`; view entities and their typed columns; DELETE, references
 * and the system entity; `fields` required for base and auth entities, a new
 * field's default filling existing rows, reserved names refused cleanly, and
 * no database message reaching the client.
 *
 * @module
 */

import nodeAssert from "node:assert/strict";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  allRules,
  asAdmin,
  createEntity,
  createRecord,
  fieldId,
  fieldNames,
  once,
  onlySystem,
  runScenarios,
  sc,
  type Scenario,
  signToken,
  snapshot,
  type Vars,
} from "./_scenarios.ts";
import { fastUser } from "./_auth_fixtures.ts";

type Fld = { name: string; system?: boolean; [k: string]: unknown };
// deno-fmt-ignore
const POSTS = { name: "posts", fields: [
  { name: "title", type: "string", required: true }, { name: "slug", type: "string" }, { name: "views", type: "int" },
] };
const withPosts = async (s: TestServer) => {
  await createEntity(s, POSTS);
  await createRecord(s, "posts", { title: "kept", views: 1 });
};
/** `posts` and its record, made once per server (refusals change nothing). */
const sharedPosts = once(withPosts);
const declared = (fields: Fld[]) => fields.filter((f) => !f.system);

// --- Admin only (one server: every case is refused and changes nothing) -----
const ops: [string, string, unknown][] = [
  ["GET", "/api/v1/schemas/posts", undefined],
  ["POST", "/api/v1/schemas", { name: "evil", type: "base" }],
  ["PATCH", "/api/v1/schemas/posts", { name: "hacked" }],
  ["DELETE", "/api/v1/schemas/posts", undefined],
];
const users = once(async (s) => {
  await createEntity(s, { name: "users", type: "auth" });
});
/** A user of its own per case, stored with a known hash (no scrypt). */
const user = async (s: TestServer, v: Vars) => {
  await sharedPosts(s);
  await users(s);
  const u = await fastUser(s, "users", {
    email: `u${crypto.randomUUID()}@example.com`,
  });
  v.user = await signToken({ sub: u.id, entity: "users" });
};
const keep = {
  notContains: ["slug", "views"],
  unchanged: ["posts", "evil", "hacked"],
};
// deno-fmt-ignore
runScenarios("schemas: admin only", [
  sc("guest list", "GET", "/api/v1/schemas", 401),
  sc("malformed token", "GET", "/api/v1/schemas", 401, { token: "not-a-jwt" }),
  ...ops.flatMap(([method, url, body]) => [
    sc(`guest ${method} -> 401`, method, url, 401, { body, setup: sharedPosts, ...keep }),
    sc(`user ${method} -> 403`, method, url, 403, { body, setup: user, token: (v) => v.user, ...keep }),
  ]),
], { fresh: "group" });

// --- Create: validation (one server per group; each checks nothing exists) --
const fld = (type: string, x: object = {}) => ({ name: "a", type, ...x });
const fk = (x: object) => ({
  foreign_key: { entity: "things", on_delete: "cascade", ...x },
});
// deno-fmt-ignore
const BAD_FIELDS: [string, unknown][] = [
  ["colour", fld("string", { colour: 1 })], ["varchar", fld("varchar")], ["min", fld("int", { min: 5, max: 1 })],
  ["min", fld("string", { min: "1" })], ["max", fld("double", { max: "Infinity" })],
  ["pattern", fld("string", { pattern: "(" })], ["pattern", fld("text", { pattern: 5 })],
  ["values", fld("select")], ["values", fld("select", { values: [] })], ["values", fld("select", { values: ["x", "x"] })],
  ["values", fld("select", { values: [1] })], ["values", fld("string", { values: ["x"] })],
  ["min", fld("bool", { min: 1 })], ["pattern", fld("int", { pattern: "x" })], ["foreign_key", fld("relation")],
  ["nope", fld("relation", fk({ entity: "nope" }))], ["on_delete", fld("relation", fk({ on_delete: "explode" }))],
  ["deferred", fld("relation", fk({ deferred: true }))], ["foreign_key", fld("string", fk({}))],
  ["required", fld("int", { required: "yes" })], ["default", fld("int", { default: "x" })],
  ["created", { name: "created", type: "string" }], ["name", { type: "string" }], ["field", "title"],
];
// deno-fmt-ignore
const BAD_NAMES: unknown[] = [
  "", "a".repeat(65), "mb_things", "MB_Things", "posts; DROP TABLE posts; --", "x'--", 'a"b', "a\\b",
  "my posts", " posts", "pöst", "🚀", "\u202eabc", "a\u0000b", "a-b", "a.b", 123, null,
];
const bad = (body: unknown, contains: string[] = []): Scenario => ({
  name: JSON.stringify(body).slice(0, 90),
  method: "POST",
  url: "/api/v1/schemas",
  token: "admin",
  body,
  status: 400,
  contains,
  after: onlySystem,
});
const things = (extra: Record<string, unknown>) => ({
  name: "things",
  type: "base",
  ...extra,
});
runScenarios("schemas: create validation -> 400, nothing created", [
  ...BAD_FIELDS.map(([key, f]) => bad(things({ fields: [f] }), [key])),
  bad(things({ fields: [fld("string"), { name: "A", type: "int" }] })),
  bad(things({ colour: "red" }), ["colour"]),
  bad({ name: "things", type: "table" }, ["type"]),
  bad({ name: "things" }, ["type"]),
  bad(things({ fields: {} }), ["fields"]),
  bad(things({ rules: { publish: { mode: "public" } } }), ["publish"]),
  bad(things({ rules: { list: { mode: "everyone" } } }), ["everyone"]),
  bad(things({ rules: { list: { mode: "public", expr: "1" } } }), ["expr"]),
  bad(things({ has_api: "yes" }), ["has_api"]),
  bad({ name: "v", type: "view" }, ["view_query"]),
  bad({ name: "v", type: "view", view_query: "SELEC nonsense" }),
  bad({ name: "v", type: "view", view_query: "SELECT id FROM nope" }),
  bad({ name: "v", type: "view", view_query: "SELECT 1 AS x" }, ["id"]),
  ...BAD_NAMES.map((n) => bad({ name: n, type: "base" })),
  ...BAD_NAMES.filter((n) => typeof n === "string" && !/^mb_/i.test(n))
    .map((n) => bad(things({ fields: [{ name: n, type: "string" }] }))),
], { fresh: "group" });

const evilId = encodeURIComponent("'; DROP TABLE posts; --");
const dup = (name: string) => ({ name, type: "base", fields: [fld("int")] });
// deno-fmt-ignore
runScenarios("schemas: duplicate names -> 409, unknown -> 404", [
  ...["posts", "POSTS", "Posts"].map((n) =>
    sc(`duplicate ${n}`, "POST", "/api/v1/schemas", 409, { token: "admin", body: dup(n), setup: sharedPosts, unchanged: ["posts"] })
  ),
  ...["GET", "PATCH", "DELETE"].map((m) =>
    sc(`${m} an unknown entity`, m, `/api/v1/schemas/${evilId}`, 404, {
      token: "admin", body: m === "PATCH" ? { has_api: false } : undefined, setup: sharedPosts, unchanged: ["posts"],
    })
  ),
], { fresh: "group" });

// --- Create and read ------------------------------------------------------
// deno-fmt-ignore
const EVERY_TYPE = [
  { name: "s", type: "string", min: 1, max: 10, pattern: "^[a-z]+$" }, { name: "t", type: "text" },
  { name: "e", type: "email", unique: true }, { name: "u", type: "url" },
  { name: "i", type: "int", min: -5, max: 5, default: 1 }, { name: "d", type: "double" }, { name: "b", type: "bool" },
  { name: "dt", type: "date" }, { name: "j", type: "json" }, { name: "sel", type: "select", values: ["a", "b"] },
  { name: "f", type: "file" }, { name: "fs", type: "files", max: 3 }, { name: "r", type: "relation", ...fk({ entity: "users" }) },
];
forEachDb("schemas: create every type, get by id/name, list", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    const auth = await createEntity(s, { name: "users", type: "auth" });
    const builtIns = ["id", "created", "updated", "email", "password"];
    assertEquals(auth.fields.map((f: Fld) => f.name).slice(0, 5), builtIns);
    assert(auth.fields.some((f: Fld) => f.name === "verified"), "verified");
    const base = await createEntity(s, { name: "kinds", fields: EVERY_TYPE });
    await t.step("created schema has every value", () => {
      assert(typeof base.id === "string" && base.id !== "", "id assigned");
      assertEquals(
        [base.name, base.type, base.has_api, base.is_system, base.view_query],
        ["kinds", "base", true, false, ""],
      );
      assertEquals(base.rules, allRules(""), "default rules: admin only");
      const names = base.fields.map((f: Fld) => f.name);
      assertEquals(names, ["id", "created", "updated", ...names.slice(3)]);
      const got = declared(base.fields);
      assertEquals(got.map((f) => f.name), EVERY_TYPE.map((f) => f.name));
      for (const [i, f] of EVERY_TYPE.entries()) {
        assert(typeof got[i].id === "string" && got[i].id !== "", "field id");
        for (const [k, v] of Object.entries(f)) assertEquals(got[i][k], v, k);
      }
    });
    await t.step("GET by id and by name", async () => {
      assertEquals((await a.get(`schemas/${base.id}`)).data, base);
      assertEquals((await a.get("schemas/kinds")).data, base);
    });
    await t.step("view schema", async () => {
      const view_query = "SELECT id, s, i FROM kinds";
      const view = await createEntity(s, {
        name: "kv",
        type: "view",
        view_query,
      });
      assertEquals([view.type, view.view_query], ["view", view_query]);
      assertEquals(view.fields.map((f: Fld) => f.name), ["id", "s", "i"]);
    });
    await t.step("list, with the system entity", async () => {
      const all = await a.get("schemas");
      const names = all.data.map((e: Fld) => e.name).sort();
      assertEquals(names, ["kinds", "kv", "mb_admins", "users"]);
      const sys = all.data.find((e: Fld) => e.name === "mb_admins");
      assertEquals([sys.is_system, sys.type], [true, "auth"]);
      assert(!all.text.includes("scrypt$"), "no password hash in schemas");
    });
  } finally {
    await s.close();
  }
});

forEachDb("schemas: 64-char names, SQL keywords as names", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    const e = (c: string) => "e".repeat(63) + c;
    const f = (c: string) => "f".repeat(63) + c;
    await t.step(
      "two 64-char entities differing in the last char",
      async () => {
        for (const c of ["a", "b"]) {
          const fields = [{ name: f("a"), type: "string" }, {
            name: f("b"),
            type: "int",
            unique: true,
          }];
          await createEntity(s, { name: e(c), fields });
        }
        const rec = await createRecord(s, e("a"), {
          [f("a")]: "x",
          [f("b")]: 1,
        });
        await createRecord(s, e("b"), { [f("a")]: "y", [f("b")]: 1 });
        let r = await a.get(`entities/${e("a")}?sort=-${f("b")}`);
        assertEquals(r.data.items.map((x: Fld) => x[f("a")]), ["x"]);
        r = await a.post(`entities/${e("a")}`, { [f("b")]: 1 });
        assertStatus(r, 409, "unique on a 64-char field");
        assert(r.data?.fields?.[f("b")], `409 names the field: ${r.text}`);
        const fa = await fieldId(s, e("a"), f("a"));
        const fb = await fieldId(s, e("a"), f("b"));
        r = await a.patch(`schemas/${e("a")}`, {
          fields: [{ id: fa, name: f("c") }, { id: fb, op: "delete" }],
        });
        assertStatus(r, 200);
        assertEquals((await fieldNames(s, e("a"))).slice(3), [f("c")]);
        r = await a.get(`entities/${e("a")}/${rec.id}`);
        assertEquals([r.data[f("c")], r.data[f("b")]], ["x", undefined]);
        r = await a.get(`entities/${e("b")}`);
        assertEquals(r.data.items[0][f("b")], 1, "sibling entity untouched");
        assertStatus(await a.del(`schemas/${e("a")}`), 204);
        assertStatus(await a.get(`entities/${e("b")}`), 200);
      },
    );
    for (const name of ["order", "select", "123", "_"]) {
      await t.step(`entity named ${name}`, async () => {
        const fields = [{ name: "from", type: "string" }, {
          name: "group",
          type: "int",
          unique: true,
        }];
        await createEntity(s, { name, fields });
        const rec = await createRecord(s, name, { from: "'; --", group: 7 });
        const r = await a.get(`entities/${name}/${rec.id}`);
        assertEquals([r.data.from, r.data.group], ["'; --", 7]);
      });
    }
  } finally {
    await s.close();
  }
});

// --- PATCH ----------------------------------------------------------------
forEachDb("schemas: PATCH fields, rules, has_api", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  const patch = (body: unknown) => a.patch("schemas/posts", body);
  const idOf = (name: string) => fieldId(s, "posts", name);
  try {
    await createEntity(s, POSTS);
    const p1 = await createRecord(s, "posts", {
      title: "one",
      slug: "same",
      views: 3,
    });
    await createRecord(s, "posts", { title: "two", slug: "same" });
    await t.step("add a field: existing records get null", async () => {
      assertStatus(
        await patch({ fields: [{ name: "body", type: "text" }] }),
        200,
      );
      const want = ["title", "slug", "views", "body"];
      assertEquals((await fieldNames(s, "posts")).slice(3), want);
      const r = await a.get(`entities/posts/${p1.id}`);
      assertEquals([r.data.title, r.data.body], ["one", null]);
    });
    await t.step("rename a field by id keeps data", async () => {
      assertStatus(
        await patch({
          fields: [{ id: await idOf("title"), name: "headline" }],
        }),
        200,
      );
      const r = await a.get(`entities/posts/${p1.id}`);
      assertEquals([r.data.headline, r.data.title], ["one", undefined]);
    });
    // deno-fmt-ignore
    const failing: [string, unknown, number][] = [
      ["unique over duplicates", { fields: [{ id: "@slug", unique: true }] }, 409],
      ["add + unique over duplicates", { fields: [{ name: "extra", type: "int" }, { id: "@slug", unique: true }] }, 409],
      ["type change", { fields: [{ id: "@views", type: "string" }] }, 400],
      ["add + unknown field id", { fields: [{ name: "extra", type: "int" }, { id: "nope", name: "x" }] }, 400],
      ["delete unknown field id", { fields: [{ id: "nope", op: "delete" }] }, 400],
      ["unknown op", { fields: [{ id: "@views", op: "drop" }] }, 400],
      ["duplicate field name", { fields: [{ name: "headline", type: "int" }] }, 400],
      ["delete built-in id", { fields: [{ id: "@id", op: "delete" }] }, 400],
      ["reserved entity name", { name: "mb_posts" }, 400],
      ["bad entity name", { name: "a b" }, 400],
      ["type of entity", { type: "auth" }, 400],
      ["unknown key", { colour: "red" }, 400],
      ["bad rule", { rules: { list: { mode: "everyone", expr: "" } } }, 400],
    ];
    for (const [what, body, status] of failing) {
      await t.step(`failing PATCH (${what}) changes nothing`, async () => {
        const text = JSON.stringify(body);
        const ids = [...text.matchAll(/"@(\w+)"/g)];
        let real = text;
        for (const [m, name] of ids) {
          real = real.replace(m, JSON.stringify(await idOf(name)));
        }
        const before = await snapshot(s, ["posts"]);
        assertStatus(await patch(JSON.parse(real)), status, what);
        assertEquals(await snapshot(s, ["posts"]), before, "unchanged");
      });
    }
    await t.step("make unique, then delete the unique field", async () => {
      assertStatus(
        await a.patch(`entities/posts/${p1.id}`, { slug: "other" }),
        200,
      );
      const slug = await idOf("slug");
      assertStatus(await patch({ fields: [{ id: slug, unique: true }] }), 200);
      let r = await a.post("entities/posts", { headline: "x", slug: "other" });
      assertStatus(r, 409, "unique enforced after PATCH");
      assertStatus(await patch({ fields: [{ id: slug, op: "delete" }] }), 200);
      const want = ["headline", "views", "body"];
      assertEquals((await fieldNames(s, "posts")).slice(3), want);
      r = await a.post("entities/posts", { headline: "x", slug: "y" });
      assertStatus(r, 400, "a deleted field is unknown");
      r = await a.get(`entities/posts/${p1.id}`);
      const got = [r.data.slug, r.data.headline, r.data.views];
      assertEquals(got, [undefined, "one", 3]);
      assertStatus(
        await patch({ fields: [{ name: "slug", type: "string" }] }),
        200,
      );
      r = await a.get(`entities/posts/${p1.id}`);
      assertEquals(r.data.slug, null, "a re-added field has no old data");
    });
    await t.step("a renamed unique field stays unique", async () => {
      const id = await idOf("slug");
      assertStatus(await patch({ fields: [{ id, unique: true }] }), 200);
      assertStatus(
        await a.patch(`entities/posts/${p1.id}`, { slug: "other" }),
        200,
      );
      assertStatus(await patch({ fields: [{ id, name: "permalink" }] }), 200);
      const r = await a.post("entities/posts", {
        headline: "y",
        permalink: "other",
      });
      assertStatus(r, 409);
      assert(r.data?.fields?.permalink, `409 names the new name: ${r.text}`);
      assertStatus(await patch({ fields: [{ id, name: "slug" }] }), 200);
    });
    await t.step("rename the entity: data and references follow", async () => {
      const fk = { entity: "posts", on_delete: "set null" };
      await createEntity(s, {
        name: "likes",
        fields: [{ name: "post", type: "relation", foreign_key: fk }],
      });
      const like = await createRecord(s, "likes", { post: p1.id });
      assertStatus(await patch({ name: "articles" }), 200);
      assertStatus(await a.get("entities/posts"), 404);
      let r = await a.get(`entities/articles/${p1.id}`);
      assertEquals(r.data?.headline, "one");
      r = await a.get("schemas/likes");
      assertEquals(
        r.data.fields.find((x: Fld) => x.name === "post").foreign_key.entity,
        "articles",
      );
      assertStatus(await a.del(`entities/articles/${p1.id}`), 204);
      assertEquals((await a.get(`entities/likes/${like.id}`)).data.post, null);
      await createRecord(s, "articles", { id: p1.id, headline: "one" }).then((
        x,
      ) => (p1.id = x.id));
      assertStatus(await a.patch("schemas/articles", { name: "posts" }), 200);
      assertStatus(await a.del("schemas/likes"), 204);
    });
    await t.step("rules and has_api", async () => {
      assertStatus(await s.request("GET", "/api/v1/entities/posts"), 401);
      let r = await patch({ rules: { list: { mode: "public", expr: "" } } });
      assertEquals([r.data.rules.list.mode, r.data.rules.get.mode], [
        "public",
        "",
      ]);
      r = await s.request("GET", "/api/v1/entities/posts?sort=headline");
      assertEquals(r.data.items.map((x: Fld) => x.headline), ["one", "two"]);
      assertEquals((await patch({ has_api: false })).data.has_api, false);
      const calls: [string, string][] = [["GET", ""], ["POST", ""], [
        "GET",
        `/${p1.id}`,
      ], ["DELETE", `/${p1.id}`]];
      for (const [m, path] of calls) {
        const body = m === "POST" ? { headline: "z" } : undefined;
        const token = await s.adminToken();
        r = await s.request(m, `/api/v1/entities/posts${path}`, {
          token,
          body,
        });
        assertStatus(r, 404, `${m} with has_api false`);
      }
      assertStatus(await a.get("schemas/posts"), 200);
      assertStatus(await patch({ has_api: true }), 200);
      r = await a.get("entities/posts?count=true");
      assertEquals(r.data.total, 2, "data survives has_api false/true");
    });
    await t.step("delete a relation field, then drop its target", async () => {
      const post = {
        name: "post",
        type: "relation",
        foreign_key: { entity: "posts", on_delete: "cascade" },
      };
      await createEntity(s, { name: "comments", fields: [post] });
      await createRecord(s, "comments", { post: p1.id });
      assertStatus(await a.del("schemas/posts"), 409);
      const id = await fieldId(s, "comments", "post");
      assertStatus(
        await a.patch("schemas/comments", { fields: [{ id, op: "delete" }] }),
        200,
      );
      assertStatus(await a.del("schemas/posts"), 204);
      const r = await a.get("entities/comments?count=true");
      assertEquals([r.data.total, r.data.items[0].post], [1, undefined]);
    });
  } finally {
    await s.close();
  }
});

// --- Views ----------------------------------------------------------------
forEachDb("schemas: view entities", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await createEntity(s, POSTS);
    const p = await createRecord(s, "posts", { title: "a", views: 5 });
    await createRecord(s, "posts", { title: "b", views: 0 });
    const pub = { mode: "public", expr: "" };
    await createEntity(s, {
      name: "popular",
      type: "view",
      view_query: "SELECT id, title, views FROM posts WHERE views > 1",
      rules: { list: pub, get: pub },
    });
    const before = await snapshot(s, ["posts", "popular"]);
    await t.step("list and get view records", async () => {
      let r = await s.request("GET", "/api/v1/entities/popular");
      assertEquals(r.data.items.map((x: Fld) => [x.id, x.title]), [[
        p.id,
        "a",
      ]]);
      r = await s.request("GET", `/api/v1/entities/popular/${p.id}`);
      assertEquals([r.status, r.data?.title], [200, "a"]);
      assertStatus(await s.request("GET", "/api/v1/entities/popular/x"), 404);
    });
    await t.step("view values keep their JSON types", async () => {
      const r = await s.request("GET", `/api/v1/entities/popular/${p.id}`);
      assertEquals(r.data?.views, 5);
    });
    await t.step("POST/PATCH/DELETE on a view -> 405", async () => {
      for (
        const [m, path] of [["POST", ""], ["PATCH", `/${p.id}`], [
          "DELETE",
          `/${p.id}`,
        ]]
      ) {
        const body = m === "DELETE" ? undefined : { title: "x" };
        const token = await s.adminToken();
        const r = await s.request(m, `/api/v1/entities/popular${path}`, {
          token,
          body,
        });
        assertStatus(r, 405, `${m} on a view`);
        assert(r.headers.get("allow")?.includes("GET"), "Allow header");
      }
      assertEquals(await snapshot(s, ["posts", "popular"]), before);
    });
    await t.step("a view never returns password hashes", async () => {
      await createEntity(s, { name: "users", type: "auth" });
      await createRecord(s, "users", {
        email: "u@example.com",
        password: "secret-pass-1",
      });
      const view_query = "SELECT id, email, password FROM users";
      let r = await a.post("schemas", {
        name: "leak",
        type: "view",
        view_query,
        rules: allRules("public"),
      });
      if (r.status === 201) {
        r = await s.request("GET", "/api/v1/entities/leak");
        assert(!r.text.includes("scrypt$"), `view leaks the hash: ${r.text}`);
      } else assertStatus(r, 400, "a view selecting password is refused");
    });
    // One message on both databases (PostgreSQL refuses the view; SQLite
    // made it with a second column `id:1`).
    const REPEATED: [string, string][] = [
      ["SELECT * FROM posts p JOIN posts q ON q.id = p.id", "id"],
      ["SELECT id, title, views, title FROM posts", "title"],
      ["SELECT p.id, q.id FROM posts p JOIN posts q ON q.id = p.id", "id"],
    ];
    for (const [i, [view_query, name]] of REPEATED.entries()) {
      await t.step(`repeated column ${name}: ${view_query}`, async () => {
        const want =
          `Cannot accept view_query: the view's columns must have distinct names: ${name} appears more than once; name them with AS (e.g. b.${name} AS b_${name})`;
        const r = await a.post("schemas", {
          name: `twice${i}`,
          type: "view",
          view_query,
        });
        assertEquals([r.status, r.error], [400, want], "create");
        assertStatus(await a.get(`schemas/twice${i}`), 404, "not created");
        const p = await a.patch("schemas/popular", { view_query });
        assertEquals([p.status, p.error], [400, want], "PATCH");
      });
    }
    await t.step("DELETE a view", async () => {
      assertStatus(await a.del("schemas/popular"), 204);
      assertStatus(await a.get("entities/popular"), 404);
      assertEquals((await a.get("entities/posts?count=true")).data.total, 2);
    });
    // Last: a view_query that runs a second statement would destroy data.
    const badViews = [
      "SELECT title FROM posts",
      "DELETE FROM posts RETURNING id",
      "SELECT id FROM posts; DROP TABLE posts",
      "SELECT id FROM posts; DELETE FROM posts",
    ];
    const intact = await snapshot(s, ["posts"]);
    for (const [i, view_query] of badViews.entries()) {
      await t.step(`refused: ${view_query}`, async () => {
        const body = { name: `v${i}`, type: "view", view_query };
        assertStatus(await a.post("schemas", body), 400);
        assertStatus(await a.get(`schemas/v${i}`), 404, "not created");
        assertEquals(await snapshot(s, ["posts"]), intact, "data intact");
      });
    }
  } finally {
    await s.close();
  }
});

// --- DELETE ---------------------------------------------------------------
forEachDb("schemas: DELETE, references, system entity", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    const posts = await createEntity(s, POSTS);
    await createRecord(s, "posts", { title: "t" });
    const fk = { entity: "posts", on_delete: "set null" };
    await createEntity(s, {
      name: "comments",
      fields: [{ name: "post", type: "relation", foreign_key: fk }],
    });
    await t.step("a referenced entity -> 409", async () => {
      const before = await snapshot(s, ["posts", "comments"]);
      const r = await a.del(`schemas/${posts.id}`);
      assertStatus(r, 409);
      assert(r.error.includes("comments"), `names the referrer: ${r.error}`);
      assertEquals(await snapshot(s, ["posts", "comments"]), before);
    });
    await t.step("DELETE by name and by id -> 204, table gone", async () => {
      const r = await a.del("schemas/comments");
      assertEquals([r.status, r.text], [204, ""]);
      assertStatus(await a.get("schemas/comments"), 404);
      assertStatus(await a.get("entities/comments"), 404);
      assertStatus(await a.del(`schemas/${posts.id}`), 204);
      assertStatus(await a.get("entities/posts"), 404);
      await createEntity(s, POSTS);
      const total = (await a.get("entities/posts?count=true")).data.total;
      assertEquals(total, 0, "a recreated entity starts empty");
    });
    await t.step("self-referencing entity", async () => {
      const fk = { entity: "tree", on_delete: "cascade" };
      await createEntity(s, {
        name: "tree",
        fields: [{ name: "up", type: "relation", foreign_key: fk }],
      });
      assertStatus(await a.del("schemas/tree"), 204);
      assertStatus(await a.del("schemas/tree"), 404);
    });
    await t.step("mb_admins cannot be changed or deleted", async () => {
      const sys = await a.get("schemas/mb_admins");
      for (const key of ["mb_admins", sys.data.id]) {
        assertStatus(await a.patch(`schemas/${key}`, { has_api: true }), 403);
        assertStatus(await a.del(`schemas/${key}`), 403);
      }
      assertEquals((await a.get("schemas/mb_admins")).data, sys.data);
      assertStatus(await a.get("schemas"), 200, "admin still works");
    });
  } finally {
    await s.close();
  }
});

/** Raw SQLite / PostgreSQL message shapes that must never be shown. */
const RAW = [
  /syntax error at/,
  /near "/,
  /no such (table|column|function)/,
  /([")]) does not exist/,
  /reserved for internal use/,
  /sqlite_master/,
  /at offset/,
  /depend on it/,
];

function noRawText(text: string): void {
  for (const raw of RAW) {
    nodeAssert.doesNotMatch(text, raw, `raw database text in ${text}`);
  }
}

forEachDb(
  "schemas: fields required, reserved names, no database text",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await t.step(
        "base or auth without fields -> 400 naming fields",
        async () => {
          for (const type of ["base", "auth"]) {
            const r = await a.post("schemas", { name: `nf_${type}`, type });
            nodeAssert.equal(r.status, 400, r.text);
            nodeAssert.ok(r.error.includes("fields"), r.error);
            nodeAssert.equal((await a.get(`schemas/nf_${type}`)).status, 404);
            const ok = await a.post("schemas", {
              name: `nf_${type}`,
              type,
              fields: [],
            });
            nodeAssert.equal(ok.status, 201, ok.text);
          }
        },
      );
      await t.step(
        "reserved name prefixes -> 400 without database text",
        async () => {
          for (
            const name of [
              "sqlite_x",
              "SQLITE_stat1",
              "pg_x",
              "Pg_class",
              "mb_x",
            ]
          ) {
            const r = await a.post("schemas", {
              name,
              type: "base",
              fields: [],
            });
            nodeAssert.equal(r.status, 400, `${name}: ${r.text}`);
            nodeAssert.match(r.error, /prefix is reserved/);
            noRawText(r.text);
          }
        },
      );
      await t.step(
        "a view that does not run -> 400 without database text",
        async () => {
          await createEntity(s, { name: "er_posts", fields: [] });
          for (
            const q of [
              "SELEC id FROM er_posts",
              "SELECT id FROM er_nope",
              "SELECT id, nope FROM er_posts",
              "SELECT id, nope_fn(id) AS x FROM er_posts",
              "SELECT id FROM er_posts WHERE (",
            ]
          ) {
            const r = await a.post("schemas", {
              name: "er_view",
              type: "view",
              view_query: q,
            });
            nodeAssert.equal(r.status, 400, `${q}: ${r.text}`);
            noRawText(r.text);
          }
        },
      );
      await t.step(
        "a refused change names the view, not the database",
        async () => {
          await createEntity(s, {
            name: "rv_posts",
            fields: [{ name: "title", type: "string" }],
          });
          await createEntity(s, {
            name: "rv_view",
            type: "view",
            view_query: "SELECT id, title FROM rv_posts",
          });
          const r = await a.del("schemas/rv_posts");
          nodeAssert.equal(r.status, 409, r.text);
          nodeAssert.match(r.error, /rv_view/);
          noRawText(r.text);
        },
      );
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "schemas: a new field's default fills existing rows",
  async (t, db) => {
    const s = await startServer(db);
    const a = await asAdmin(s);
    try {
      await t.step("every type with a default, required or not", async () => {
        await createEntity(s, {
          name: "df_items",
          fields: [{ name: "title", type: "string" }],
        });
        const old = await createRecord(s, "df_items", { title: "old" });
        const added = [
          { name: "label", type: "string", default: "none" },
          { name: "count", type: "int", default: 3, required: true },
          { name: "ratio", type: "double", default: 0.5 },
          { name: "on", type: "bool", default: true, required: true },
          { name: "meta", type: "json", default: { a: [1] } },
          { name: "kind", type: "select", values: ["x", "y"], default: "y" },
        ];
        const r = await a.patch("schemas/df_items", { fields: added });
        nodeAssert.equal(r.status, 200, r.text);
        const got = (await a.get(`entities/df_items/${old.id}`)).data;
        nodeAssert.deepEqual(
          [got.label, got.count, got.ratio, got.on, got.meta, got.kind],
          ["none", 3, 0.5, true, { a: [1] }, "y"],
        );
        const fresh = await createRecord(s, "df_items", { title: "new" });
        nodeAssert.equal(fresh.count, 3);
      });
      await t.step("a field without a default leaves rows empty", async () => {
        await createEntity(s, { name: "df_plain", fields: [] });
        const old = await createRecord(s, "df_plain", {});
        const r = await a.patch("schemas/df_plain", {
          fields: [{ name: "note", type: "string" }],
        });
        nodeAssert.equal(r.status, 200, r.text);
        nodeAssert.equal(
          (await a.get(`entities/df_plain/${old.id}`)).data.note,
          null,
        );
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb("schemas: view columns are typed", async (t, db) => {
  const s = await startServer(db);
  try {
    await t.step("types come from the fields a view copies", async () => {
      await createEntity(s, {
        name: "vt_posts",
        fields: [
          { name: "title", type: "string" },
          { name: "mail", type: "email" },
          { name: "n", type: "int" },
          { name: "x", type: "double" },
          { name: "on", type: "bool" },
          { name: "meta", type: "json" },
          { name: "day", type: "date" },
          { name: "kind", type: "select", values: ["a", "b"] },
        ],
      });
      await createRecord(s, "vt_posts", {
        title: "t",
        mail: "m@example.com",
        n: 2,
        x: 1.5,
        on: true,
        meta: { k: [1, 2] },
        day: "2024-01-02T00:00:00.000Z",
        kind: "b",
      });
      const view = await createEntity(s, {
        name: "vt_view",
        type: "view",
        view_query:
          `WITH p AS (SELECT * FROM vt_posts) SELECT id, title, mail, n, x, "on", meta, day, kind, created, upper(title) AS shout FROM p`,
        rules: allRules("public"),
      });
      const types = Object.fromEntries(
        view.fields.map((
          f: { name: string; type: string },
        ) => [f.name, f.type]),
      );
      nodeAssert.deepEqual(types, {
        id: "string",
        title: "string",
        mail: "email",
        n: "int",
        x: "double",
        on: "bool",
        meta: "json",
        day: "date",
        kind: "select",
        created: "date",
        // A computed column: the database's type where it reports one.
        shout: db === "postgres" ? "string" : "json",
      });
      const kind = view.fields.find((f: { name: string }) => f.name === "kind");
      nodeAssert.deepEqual(kind.values, ["a", "b"]);
      const row = (await s.request("GET", "/api/v1/entities/vt_view")).data
        .items[0];
      nodeAssert.deepEqual(
        [row.n, row.x, row.on, row.meta, row.kind, row.shout],
        [2, 1.5, true, { k: [1, 2] }, "b", "T"],
      );
    });
    await t.step("computed numbers and flags", async () => {
      await createEntity(s, {
        name: "vc_posts",
        fields: [{ name: "n", type: "int" }],
      });
      await createRecord(s, "vc_posts", { n: 4 });
      const view = await createEntity(s, {
        name: "vc_view",
        type: "view",
        view_query:
          "SELECT id, count(*) OVER () AS c, n > 1 AS big, n * 1.5 AS half FROM vc_posts",
      });
      const types = view.fields.map((f: { type: string }) => f.type);
      nodeAssert.deepEqual(
        types,
        db === "postgres"
          ? ["string", "int", "bool", "double"]
          : ["string", "json", "json", "json"],
      );
      const row = (await (await asAdmin(s)).get("entities/vc_view")).data
        .items[0];
      nodeAssert.equal(row.c, 1);
      nodeAssert.equal(row.half, 6);
    });
  } finally {
    await s.close();
  }
});
