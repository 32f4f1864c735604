/**
 * `expand` on the records API and realtime (issue 31, item 1), on both
 * databases: a differential test over small random graphs (every expanded
 * record is what a GET of it, or a back-relation's list, answers the same
 * caller; absent when that is refused), rules that hide records at every
 * level, back-relations at their 1000 cap, the bound on one answer, cycles,
 * unknown paths, `fields` into expansions, the answers of create and
 * update, and realtime topics with `?expand=`.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  insertSeries,
  padded,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  createSchema,
  fastUser,
  fixtureAdmin,
  issue,
} from "./_auth_fixtures.ts";
import { connectWs, openSse } from "./_realtime_client.ts";

const ADMIN_ONLY = { mode: "", expr: "" };
const AUTH = { mode: "auth", expr: "" };
const custom = (expr: string) => ({ mode: "custom", expr });
const relation = (name: string, entity: string, on_delete = "set null") => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete },
});

/** What each path segment of the test schemas means (the test's own oracle). */
const FORWARD: Record<string, Record<string, string>> = {
  posts: { author: "users", tag: "tags", internal: "internal" },
  comments: { post: "posts", author: "users" },
  users: {},
};
const BACK: Record<string, [string, string]> = {
  posts_via_author: ["posts", "author"],
  comments_via_post: ["comments", "post"],
  comments_via_author: ["comments", "author"],
};

async function schemas(s: TestServer, admin: string): Promise<void> {
  // Users see the users who are not hidden, and themselves.
  const seen = "record.hidden == false || record.id == auth.id";
  await createSchema(s, admin, {
    name: "users",
    type: "auth",
    fields: [{ name: "name", type: "string" }, {
      name: "hidden",
      type: "bool",
    }],
    rules: { list: custom(seen), get: custom(seen) },
  });
  await createSchema(s, admin, {
    name: "tags",
    type: "base",
    fields: [{ name: "name", type: "string" }],
    rules: { list: ADMIN_ONLY, get: ADMIN_ONLY },
  });
  await createSchema(s, admin, {
    name: "internal",
    type: "base",
    has_api: false,
    fields: [{ name: "name", type: "string" }],
  });
  const mine = "record.public == true || record.author == auth.id";
  await createSchema(s, admin, {
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "public", type: "bool" },
      relation("author", "users"),
      relation("tag", "tags"),
      relation("internal", "internal"),
    ],
    rules: {
      list: custom(mine),
      get: custom(mine),
      add: AUTH,
      update: custom("record.author == auth.id"),
    },
  });
  // get and list differ: a back-relation shows what the list rule shows; the
  // list rule is checked row by row (the string concatenation does not
  // compile to SQL), behind a prefilter.
  await createSchema(s, admin, {
    name: "comments",
    type: "base",
    fields: [
      { name: "body", type: "string" },
      { name: "flagged", type: "bool" },
      relation("post", "posts", "cascade"),
      relation("author", "users"),
    ],
    rules: {
      list: custom('record.flagged == false && (record.body + "").length > 0'),
      get: custom("record.flagged == false || record.author == auth.id"),
    },
  });
}

/** A small deterministic random source. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Graph {
  users: string[];
  posts: string[];
  comments: string[];
}

/** A random graph: users (one hidden), posts, comments, tags, an internal record. */
async function graph(
  s: TestServer,
  admin: string,
  seed: number,
): Promise<Graph> {
  const rnd = random(seed);
  const pick = <T>(list: T[]) => list[Math.floor(rnd() * list.length)];
  const post = async (entity: string, body: Record<string, unknown>) => {
    const r = await s.request("POST", `/api/v1/entities/${entity}`, {
      token: admin,
      body,
    });
    assertStatus(r, 201, `seed ${entity}`);
    return String(r.data.id);
  };
  const users: string[] = [];
  for (let i = 0; i < 4; i++) {
    const u = await fastUser(s, "users", {
      email: `g${seed}u${i}@example.com`,
    });
    await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
      token: admin,
      body: { name: `user ${seed}/${i}`, hidden: i === 1 },
    });
    users.push(u.id);
  }
  const tag = await post("tags", { name: `tag ${seed}` });
  const internal = (await s.app.schemas.get("internal")!.create({
    name: "inside",
  })).id as string;
  const posts: string[] = [];
  for (let i = 0; i < 7; i++) {
    posts.push(
      await post("posts", {
        title: `post ${seed}/${i}`,
        public: rnd() < 0.6,
        author: rnd() < 0.85 ? pick(users) : null,
        tag: rnd() < 0.5 ? tag : null,
        internal: rnd() < 0.5 ? internal : null,
      }),
    );
  }
  const comments: string[] = [];
  for (let i = 0; i < 14; i++) {
    comments.push(
      await post("comments", {
        body: `comment ${seed}/${i}`,
        flagged: rnd() < 0.3,
        post: pick(posts),
        author: pick(users),
      }),
    );
  }
  return { users, posts, comments };
}

type Tree = Map<string, Tree>;

function tree(expand: string): Tree {
  const t: Tree = new Map();
  for (const path of expand.split(",")) {
    let at = t;
    for (const seg of path.split(".")) {
      if (!at.has(seg)) at.set(seg, new Map());
      at = at.get(seg)!;
    }
  }
  return t;
}

function own(record: Record<string, unknown>): Record<string, unknown> {
  const { expand: _expand, ...rest } = record;
  return rest;
}

/**
 * Checks every expansion of `record` (of `entity`) against what the same
 * caller is answered when it asks for each record by itself.
 */
async function verify(
  s: TestServer,
  token: string | undefined,
  entity: string,
  record: Record<string, unknown>,
  want: Tree,
  path: string,
  ask: (path: string) => Promise<Reply>,
): Promise<number> {
  let checked = 0;
  const expand = record.expand as Record<string, unknown> | undefined;
  assert(expand && typeof expand === "object", `${path}: no expand object`);
  assertEquals(
    Object.keys(expand).filter((k) => !want.has(k)),
    [],
    `${path}: unasked`,
  );
  for (const [seg, sub] of want) {
    const at = `${path}.${seg}`;
    const got = expand[seg];
    const target = FORWARD[entity]?.[seg];
    if (target !== undefined) {
      const id = record[seg];
      const r = id ? await ask(`/api/v1/entities/${target}/${id}`) : undefined;
      if (r?.status === 200) {
        assert(
          got !== undefined,
          `${at}: ${target}/${id} is visible but absent`,
        );
        assertEquals(own(got as Record<string, unknown>), r.data, at);
        checked++;
        if (sub.size > 0) {
          checked += await verify(
            s,
            token,
            target,
            got as Record<string, unknown>,
            sub,
            at,
            ask,
          );
        }
      } else {
        assert(
          got === undefined,
          `${at}: ${target}/${id} answers ${r?.status} but was expanded`,
        );
      }
      continue;
    }
    const [from, field] = BACK[seg];
    const q = new URLSearchParams({
      filter: `${field} == "${record.id}"`,
      sort: "created",
      limit: "500",
    });
    const r = await ask(`/api/v1/entities/${from}?${q}`);
    if (r.status !== 200) {
      assert(got === undefined, `${at}: list answers ${r.status} but expanded`);
      continue;
    }
    assert(Array.isArray(got), `${at}: not an array`);
    assertEquals(
      got.map((g) => own(g as Record<string, unknown>)),
      r.data.items,
      at,
    );
    checked += got.length;
    if (sub.size > 0) {
      for (const g of got) {
        checked += await verify(
          s,
          token,
          from,
          g as Record<string, unknown>,
          sub,
          at,
          ask,
        );
      }
    }
  }
  return checked;
}

/** GETs remembered per caller (the oracle asks the same record many times). */
function asker(
  s: TestServer,
  token: string | undefined,
): (path: string) => Promise<Reply> {
  const seen = new Map<string, Promise<Reply>>();
  return (path) => {
    let r = seen.get(path);
    if (!r) seen.set(path, r = s.request("GET", path, { token }));
    return r;
  };
}

const PATHS: Record<string, string> = {
  posts: [
    "author",
    "tag",
    "internal",
    "comments_via_post.author",
    // A cycle, and six levels.
    "author.posts_via_author.author",
    "author.posts_via_author.comments_via_post.post.author.comments_via_author",
  ].join(","),
  users: "posts_via_author.comments_via_post.author,comments_via_author.post",
  comments: "post.author,author.posts_via_author.tag",
};

forEachDb("expand", async (t, db) => {
  const s = await startServer(db, { webSocket: true });
  try {
    const admin = await fixtureAdmin(s);
    await schemas(s, admin);

    await t.step(
      "differential: every expansion is what the caller reads of it",
      async () => {
        for (const seed of [1, 2]) {
          const g = await graph(s, admin, seed);
          const callers: [string, string | undefined][] = [
            ["guest", undefined],
            ["user 0", await issue(s, "users", g.users[0])],
            ["hidden user 1", await issue(s, "users", g.users[1])],
            ["user 2", await issue(s, "users", g.users[2])],
            ["admin", admin],
          ];
          let checked = 0;
          for (const [who, token] of callers) {
            const ask = asker(s, token);
            for (const [entity, expand] of Object.entries(PATHS)) {
              const q = new URLSearchParams({ expand, limit: "500" });
              const r = await s.request(
                "GET",
                `/api/v1/entities/${entity}?${q}`,
                { token },
              );
              assertStatus(r, 200, `${who} lists ${entity}`);
              for (const rec of r.data.items) {
                checked += await verify(
                  s,
                  token,
                  entity,
                  rec,
                  tree(expand),
                  `${who} ${entity}/${rec.id}`,
                  ask,
                );
              }
            }
            // get answers the same expansions as the list.
            for (const id of g.posts.slice(0, 3)) {
              const r = await s.request(
                "GET",
                `/api/v1/entities/posts/${id}?expand=${PATHS.posts}`,
                { token },
              );
              if (r.status !== 200) continue;
              checked += await verify(
                s,
                token,
                "posts",
                r.data,
                tree(PATHS.posts),
                `${who} get posts/${id}`,
                ask,
              );
            }
          }
          // The graphs are small but not empty: a check that checks nothing fails.
          assert(checked > 100, `only ${checked} expanded records checked`);
        }
      },
    );

    await t.step(
      "hidden records leave no trace in what is visible",
      async () => {
        const hidden = await fastUser(s, "users", {
          email: "ghost@example.com",
        });
        await s.request("PATCH", `/api/v1/entities/users/${hidden.id}`, {
          token: admin,
          body: { name: "ghost", hidden: true },
        });
        const viewer = await fastUser(s, "users", {
          email: "viewer@example.com",
        });
        const token = await issue(s, "users", viewer.id);
        const post = await s.request("POST", "/api/v1/entities/posts", {
          token: admin,
          body: { title: "by a ghost", public: true, author: hidden.id },
        });
        assertStatus(post, 201);
        const r = await s.request(
          "GET",
          `/api/v1/entities/posts/${post.data.id}?expand=author.posts_via_author`,
          { token },
        );
        assertStatus(r, 200);
        assertEquals(r.data.expand, {});
        assert(
          !r.text.includes("ghost@example.com"),
          "the hidden email leaked",
        );
        // The author's own posts are not reachable through a hidden author.
        assert(!r.text.includes("posts_via_author"), r.text);
        // Passwords never appear, whoever expands.
        const all = await s.request(
          "GET",
          `/api/v1/entities/posts?expand=author&limit=500`,
          { token: admin },
        );
        assert(
          !all.text.includes("password"),
          "a password key in an expansion",
        );
        assert(all.text.includes("ghost@example.com"), "admins see the author");
      },
    );

    await t.step(
      "unknown paths, depth and syntax: 400 naming the path",
      async () => {
        const cases: [string, number, string][] = [
          ["author,nope", 400, '"nope"'],
          ["author.nope", 400, '"author.nope"'],
          ["internal_via_post", 400, '"internal_via_post"'],
          ["mb_admins_via_author", 400, '"mb_admins_via_author"'],
          ["comments_via_nothing", 400, '"comments_via_nothing"'],
          ["title", 400, '"title"'],
          ["a.b.c.d.e.f.g", 400, "at most 6"],
          ["author..tag", 400, "malformed"],
          [
            "author.posts_via_author.author.posts_via_author.author.posts_via_author",
            200,
            "",
          ],
          // Into an entity the caller cannot use: nothing below is checked.
          ["tag.whatever.else", 200, ""],
          ["internal.whatever", 200, ""],
        ];
        const user = await fastUser(s, "users", { email: "paths@example.com" });
        const token = await issue(s, "users", user.id);
        for (const [expand, status, says] of cases) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/posts?expand=${encodeURIComponent(expand)}`,
            { token },
          );
          assertStatus(r, status, expand);
          assert(r.error.includes(says), `${expand}: ${r.error}`);
        }
        // An admin may use tags: below it, names are checked.
        const r = await s.request(
          "GET",
          "/api/v1/entities/posts?expand=tag.whatever",
          { token: admin },
        );
        assertStatus(r, 400);
        assert(r.error.includes('"tag.whatever"'), r.error);
        const twice = await s.request(
          "GET",
          "/api/v1/entities/posts?expand=author&expand=tag",
          { token: admin },
        );
        assertStatus(twice, 400);
      },
    );

    await t.step("fields reach into expansions", async () => {
      const u = await fastUser(s, "users", { email: "fields@example.com" });
      await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
        token: admin,
        body: { name: "Fields", hidden: false },
      });
      const p = await s.request("POST", "/api/v1/entities/posts", {
        token: admin,
        body: { title: "fielded", public: true, author: u.id },
      });
      await s.request("POST", "/api/v1/entities/comments", {
        token: admin,
        body: { body: "c", flagged: false, post: p.data.id, author: u.id },
      });
      const q = new URLSearchParams({
        expand: "author,comments_via_post.author",
        fields:
          "id,title,expand.author.name,expand.comments_via_post.expand.author.name",
      });
      const r = await s.request(
        "GET",
        `/api/v1/entities/posts/${p.data.id}?${q}`,
        { token: admin },
      );
      assertStatus(r, 200);
      assertEquals(r.data, {
        id: p.data.id,
        title: "fielded",
        expand: {
          author: { name: "Fields" },
          comments_via_post: [{ expand: { author: { name: "Fields" } } }],
        },
      });
      const list = await s.request(
        "GET",
        `/api/v1/entities/posts?${q}&filter=${
          encodeURIComponent(`id == "${p.data.id}"`)
        }`,
        { token: admin },
      );
      assertStatus(list, 200);
      assertEquals(list.data.items, [r.data]);
      // Without an expand… entry, expansions are left out.
      const bare = await s.request(
        "GET",
        `/api/v1/entities/posts/${p.data.id}?expand=author&fields=id`,
        { token: admin },
      );
      assertEquals(bare.data, { id: p.data.id });
      for (
        const fields of [
          "id,expand.tag",
          "expand.author.nope",
          "expand.author.password",
          "id,password",
        ]
      ) {
        const bad = await s.request(
          "GET",
          `/api/v1/entities/posts?expand=author&fields=${fields}`,
          { token: admin },
        );
        assertStatus(bad, 400, fields);
        assert(bad.error.includes("in fields"), bad.error);
      }
    });

    await t.step("create and update answer with expansions", async () => {
      const u = await fastUser(s, "users", { email: "writer@example.com" });
      const token = await issue(s, "users", u.id);
      const before = await s.request(
        "GET",
        "/api/v1/entities/posts?count=true",
        {
          token: admin,
        },
      );
      // An unknown path is refused before anything is written.
      const bad = await s.request(
        "POST",
        "/api/v1/entities/posts?expand=nope",
        {
          token,
          body: { title: "never", author: u.id },
        },
      );
      assertStatus(bad, 400);
      const after = await s.request(
        "GET",
        "/api/v1/entities/posts?count=true",
        {
          token: admin,
        },
      );
      assertEquals(after.data.total, before.data.total, "a post was written");
      const c = await s.request(
        "POST",
        "/api/v1/entities/posts?expand=author,comments_via_post",
        { token, body: { title: "mine", author: u.id, public: false } },
      );
      assertStatus(c, 201);
      assertEquals(c.data.expand.author.id, u.id);
      assertEquals(c.data.expand.comments_via_post, []);
      await s.request("POST", "/api/v1/entities/comments", {
        token: admin,
        body: { body: "hi", flagged: false, post: c.data.id, author: u.id },
      });
      const p = await s.request(
        "PATCH",
        `/api/v1/entities/posts/${c.data.id}?expand=comments_via_post.author&fields=title,expand`,
        { token, body: { title: "mine, edited" } },
      );
      assertStatus(p, 200);
      assertEquals(p.data.title, "mine, edited");
      assertEquals(p.data.expand.comments_via_post.length, 1);
      assertEquals(p.data.expand.comments_via_post[0].expand.author.id, u.id);
      const badPatch = await s.request(
        "PATCH",
        `/api/v1/entities/posts/${c.data.id}?expand=author.nope`,
        { token, body: { title: "not this" } },
      );
      assertStatus(badPatch, 400);
      const still = await s.request(
        "GET",
        `/api/v1/entities/posts/${c.data.id}`,
        {
          token,
        },
      );
      assertEquals(still.data.title, "mine, edited");
    });

    await t.step(
      "back-relations: 1000 per record, oldest first; one answer's bound",
      async () => {
        const p = await s.request("POST", "/api/v1/entities/posts", {
          token: admin,
          body: { title: "popular", public: true },
        });
        const post = String(p.data.id);
        await insertSeries(s, "comments", 1005, {
          id: padded(`${post.slice(0, 8)}-c`, 6),
          body: "'bulk'",
          flagged: s.db === "postgres" ? "false" : "0",
          post: "?",
        }, [post]);
        // The oldest, written last with the greatest id.
        await s.app.storage.run(
          `INSERT INTO "comments" ("id", "created", "updated", "body", "flagged", "post") VALUES (?, ?, ?, ?, ?, ?)`,
          [
            `${post.slice(0, 8)}-zzz`,
            "2000-01-01T00:00:00.000Z",
            "2000-01-01T00:00:00.000Z",
            "oldest",
            s.app.storage.dialect.encode("bool", false),
            post,
          ],
        );
        const u = await fastUser(s, "users", { email: "reader@example.com" });
        const token = await issue(s, "users", u.id);
        // An admin (rule passed in SQL) and a user (list rule row by row).
        for (const who of [admin, token]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/posts/${post}?expand=comments_via_post&fields=expand.comments_via_post.id`,
            { token: who },
          );
          assertStatus(r, 200);
          const ids = r.data.expand.comments_via_post.map((c: { id: string }) =>
            c.id
          );
          assertEquals(ids.length, 1000);
          assertEquals(ids[0], `${post.slice(0, 8)}-zzz`);
          assertEquals(ids[1], `${post.slice(0, 8)}-c000001`);
          assertEquals(ids[999], `${post.slice(0, 8)}-c000999`);
        }
        // Under the per-row list rule at most 5000 rows are examined: past it,
        // a 400 (as count=true), never a silently shorter list. An admin (no
        // rule) still gets its 1000.
        await insertSeries(s, "comments", 4000, {
          id: padded(`${post.slice(0, 8)}-d`, 6),
          body: "'more'",
          flagged: s.db === "postgres" ? "false" : "0",
          post: "?",
        }, [post]);
        const many = await s.request(
          "GET",
          `/api/v1/entities/posts/${post}?expand=comments_via_post&fields=id`,
          { token },
        );
        assertStatus(many, 400);
        assert(many.error.includes("checked row by row"), many.error);
        const all = await s.request(
          "GET",
          `/api/v1/entities/posts/${post}?expand=comments_via_post&fields=expand.comments_via_post.id`,
          { token: admin },
        );
        assertStatus(all, 200);
        assertEquals(all.data.expand.comments_via_post.length, 1000);
        // 1000 comments, each expanding its post's 1000 comments: past the bound.
        const big = await s.request(
          "GET",
          `/api/v1/entities/posts/${post}?expand=comments_via_post.post.comments_via_post`,
          { token: admin },
        );
        assertStatus(big, 400);
        assert(big.error.includes("more than 10000 records"), big.error);
        // The write happened: its answer says the expansion failed, with 201.
        const c = await s.request(
          "POST",
          "/api/v1/entities/comments?expand=post.comments_via_post.post.comments_via_post",
          { token: admin, body: { body: "one more", flagged: false, post } },
        );
        assertStatus(c, 201);
        assertEquals(c.data.body, "one more");
        assert(c.data.expand === undefined, "expanded past the bound");
        assert(
          c.headers.get("x-moonbase-expand")?.startsWith("failed;"),
          "no X-Moonbase-Expand header",
        );
      },
    );

    await t.step("views and entities without expansions", async () => {
      const v = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "post_titles",
          type: "view",
          view_query: "SELECT id, title, author FROM posts",
          rules: { list: { mode: "public", expr: "" } },
        },
      });
      assertStatus(v, 201);
      const r = await s.request(
        "GET",
        "/api/v1/entities/post_titles?expand=author",
        { token: admin },
      );
      assertStatus(r, 400);
      assert(r.error.includes('"author"'), r.error);
      const back = await s.request(
        "GET",
        "/api/v1/entities/posts?expand=post_titles_via_author",
        { token: admin },
      );
      assertStatus(back, 400);
    });

    await t.step(
      "realtime: a topic's ?expand= applies per subscriber",
      async () => {
        const author = await fastUser(s, "users", {
          email: "live@example.com",
        });
        await s.request("PATCH", `/api/v1/entities/users/${author.id}`, {
          token: admin,
          body: { hidden: false, name: "live" },
        });
        const shy = await fastUser(s, "users", { email: "shy@example.com" });
        await s.request("PATCH", `/api/v1/entities/users/${shy.id}`, {
          token: admin,
          body: { hidden: true, name: "shy" },
        });
        const token = await issue(s, "users", author.id);
        const topic = `posts?${new URLSearchParams({
          expand: "author,comments_via_post",
        })}`;
        const topics = encodeURIComponent(topic);
        const mine = await openSse(s, `topics=${topics}`, { token });
        let resumeFrom = "";
        const guest = await openSse(s, `topics=${topics}`);
        const plain = await openSse(s, "topics=posts", { token });
        try {
          for (const c of [mine, guest, plain]) {
            assertEquals(c.status, 200);
            assertEquals((await c.next())?.event, "ready");
          }
          const p = await s.request("POST", "/api/v1/entities/posts", {
            token,
            body: { title: "live", public: true, author: author.id },
          });
          assertStatus(p, 201);
          const ev = await mine.next();
          assertEquals(ev?.event, "create");
          resumeFrom = String(ev?.id);
          assertEquals(ev?.data.record.expand.author.id, author.id);
          assertEquals(ev?.data.record.expand.comments_via_post, []);
          const g = await guest.next();
          assertEquals(g?.data.record.id, p.data.id);
          // A guest sees the author only if the users' rule shows it: not hidden.
          assertEquals(g?.data.record.expand.author.id, author.id);
          const pl = await plain.next();
          assertEquals(pl?.data.record.expand, undefined);
          // A post by a hidden user: its author is absent for the guest.
          const q = await s.request("POST", "/api/v1/entities/posts", {
            token: admin,
            body: { title: "shy", public: true, author: shy.id },
          });
          const g2 = await guest.next();
          assertEquals(g2?.data.record.id, q.data.id);
          assertEquals(g2?.data.record.expand, { comments_via_post: [] });
          assert(!JSON.stringify(g2?.data).includes("shy@example.com"));
        } finally {
          for (const c of [mine, guest, plain]) c.close();
        }
        // In order, each expanded, however fast they come; and on resume.
        const before = await s.request("POST", "/api/v1/entities/posts", {
          token,
          body: { title: "mark", public: true, author: author.id },
        });
        const burst = await openSse(s, `topics=${topics}`, { token });
        const ws = await connectWs(s, `token=${token}`);
        try {
          assertEquals((await burst.next())?.event, "ready");
          ws.send({
            type: "subscribe",
            topics: ["posts?expand=author,comments_via_post"],
          });
          assertEquals((await ws.nextOf("ready"))?.topics, ["posts"]);
          const made = await Promise.all(
            Array.from(
              { length: 12 },
              (_, i) =>
                s.request("POST", "/api/v1/entities/posts", {
                  token,
                  body: {
                    title: `burst ${i}`,
                    public: true,
                    author: author.id,
                  },
                }),
            ),
          );
          const ids = new Set(made.map((r) => r.data.id));
          let last = 0;
          for (let i = 0; i < 12; i++) {
            const e = await burst.next();
            assert(
              Number(e?.id) > last,
              `out of order: ${e?.id} after ${last}`,
            );
            last = Number(e?.id);
            assert(ids.has(e?.data.record.id), "an unknown event");
            assertEquals(e?.data.record.expand.author.id, author.id);
            const w = await ws.nextOf("event");
            assertEquals(w?.eventId, e?.id);
            assertEquals(w?.record.expand.author.id, author.id);
          }
        } finally {
          burst.close();
          ws.close();
        }
        const resumed = await openSse(s, `topics=${topics}`, {
          token,
          headers: { "last-event-id": resumeFrom },
        });
        try {
          // Replayed with expansions: find the mark.
          for (let i = 0; i < 200; i++) {
            const e = await resumed.next();
            assert(e, "the resume ended before the mark");
            if (e.data?.record?.id !== before.data.id) continue;
            assertEquals(e.data.record.expand.author.id, author.id);
            break;
          }
        } finally {
          resumed.close();
        }
        const bad = await openSse(
          s,
          `topics=${encodeURIComponent("posts?expand=nope")}`,
          { token },
        );
        assertEquals(bad.status, 400);
        assert(String(bad.body?.error).includes('"nope"'), bad.body?.error);
        // A plain comma splits the topics: the error says how to write it.
        const cut = await openSse(
          s,
          `topics=${
            encodeURIComponent("posts?expand=author,comments_via_post")
          }`,
          { token },
        );
        assertEquals(cut.status, 400);
        assert(String(cut.body?.error).includes("%2C"), cut.body?.error);
        const opt = await openSse(
          s,
          `topics=${encodeURIComponent("posts?sort=title")}`,
          { token },
        );
        assertEquals(opt.status, 400);
      },
    );
  } finally {
    await s.close();
  }
});
