/**
 * Schema export and import (`GET /api/v1/schemas/export`, `POST
 * /api/v1/schemas/import`): an export imported into a fresh server gives
 * the same schemas (ids included), relations in dependency order and a
 * cycle of relations, a dry run that changes nothing, an import that is
 * refused at its third change applying none (tables and `mb_tables` as they
 * were), matching by name from another server with details field by field,
 * `delete_missing`, and admin only.
 *
 * Each test builds its own servers; its steps share them (each step reads
 * what the one before left).
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { userToken } from "./_scenarios.ts";

type Schema = Record<string, unknown> & { name: string; id: string };

const rel = (name: string, entity: string, extra = {}) => ({
  name,
  type: "relation",
  foreign_key: { entity, on_delete: "set null" },
  ...extra,
});

/** A project touching every kind of dependency, created out of order where the API allows. */
async function buildProject(s: TestServer): Promise<void> {
  const admin = await s.adminToken();
  const post = async (body: unknown) =>
    assertStatus(
      await s.request("POST", "/api/v1/schemas", { token: admin, body }),
      201,
      JSON.stringify(body).slice(0, 80),
    );
  const patch = async (name: string, body: unknown) =>
    assertStatus(
      await s.request("PATCH", `/api/v1/schemas/${name}`, {
        token: admin,
        body,
      }),
      200,
      name,
    );
  await post({
    name: "members",
    type: "auth",
    fields: [
      { name: "nick", type: "string", required: true, pattern: "^[a-z]+$" },
    ],
  });
  await post({
    name: "categories",
    type: "base",
    fields: [
      { name: "label", type: "string", unique: true },
      rel("parent", "categories"),
    ],
  });
  await post({
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string", required: true, max: 200 },
      { name: "slug", type: "string" },
      {
        name: "state",
        type: "select",
        values: ["draft", "live"],
        default: "draft",
      },
      rel("author", "members", { default: "@auth" }),
      rel("category", "categories"),
    ],
    indexes: [{ fields: ["state", "created"] }],
    rules: {
      list: { mode: "public", expr: "" },
      update: { mode: "custom", expr: "record.author == auth.id" },
    },
  });
  await post({
    name: "comments",
    type: "base",
    fields: [
      { name: "body", type: "text" },
      rel("post", "posts", {
        foreign_key: { entity: "posts", on_delete: "cascade" },
      }),
    ],
  });
  // A cycle: left and right point at each other.
  await post({
    name: "left_side",
    type: "base",
    fields: [{ name: "n", type: "int" }],
  });
  await post({
    name: "right_side",
    type: "base",
    fields: [rel("left", "left_side")],
  });
  await patch("left_side", { fields: [rel("right", "right_side")] });
  await post({
    name: "live_posts",
    type: "view",
    view_query: `SELECT id, title FROM posts WHERE state = 'live'`,
    rules: { list: { mode: "public", expr: "" } },
  });
}

async function exported(s: TestServer): Promise<Schema[]> {
  const r = await s.request("GET", "/api/v1/schemas/export", {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, "export");
  return r.data.schemas;
}

/** Schemas without the moments they were made and changed, by name. */
function timeless(schemas: Schema[]): Record<string, unknown>[] {
  return schemas.map(({ created: _c, updated: _u, ...rest }) => rest)
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

async function importing(
  s: TestServer,
  body: Record<string, unknown>,
  status = 200,
) {
  const r = await s.request("POST", "/api/v1/schemas/import", {
    token: await s.adminToken(),
    body,
  });
  assertStatus(r, status, "import");
  return r;
}

/** What a refused import must leave: the tables, `mb_tables` and the schema version. */
async function stateOf(s: TestServer): Promise<unknown> {
  const pg = s.db === "postgres";
  const tables = await s.app.storage.query(
    pg
      ? `SELECT table_name AS "name" FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`
      : `SELECT "name" FROM sqlite_master WHERE "type" IN ('table', 'view') ORDER BY 1`,
  );
  const rows = await s.app.storage.query(
    `SELECT "id", "name", "schema" FROM "mb_tables" ORDER BY "id"`,
  );
  const version = await s.app.storage.query(
    `SELECT "value" FROM "mb_meta" WHERE "key" = 'schema_version'`,
  );
  const columns = pg
    ? await s.app.storage.query(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1, 2`,
    )
    : [];
  return { tables, rows, version, columns };
}

forEachDb("schemas export and import", async (t, db) => {
  const source = await startServer(db);
  const target = await startServer(db);
  try {
    await buildProject(source);
    const schemas = await exported(source);
    const names = schemas.map((s) => s.name);

    await t.step(
      "the export lists every own entity in dependency order",
      () => {
        assertEquals([...names].sort(), [
          "categories",
          "comments",
          "left_side",
          "live_posts",
          "members",
          "posts",
          "right_side",
        ]);
        const before = (a: string, b: string) =>
          assert(
            names.indexOf(a) < names.indexOf(b),
            `${a} before ${b}: ${names}`,
          );
        before("members", "posts");
        before("categories", "posts");
        before("posts", "comments");
        before("posts", "live_posts");
        // left_side and right_side point at each other: either may come first.
      },
    );

    await t.step(
      "a dry run lists the creates and changes nothing",
      async () => {
        const was = await stateOf(target);
        // Reversed: the import orders the changes itself.
        const r = await importing(target, { schemas: [...schemas].reverse() });
        assertEquals(r.data.dry_run, true);
        assertEquals(
          r.data.changes.map((c: { entity: string; action: string }) =>
            `${c.action} ${c.entity}`
          ).sort(),
          names.map((n) => `create ${n}`).sort(),
        );
        const posts = r.data.changes.find((c: { entity: string }) =>
          c.entity === "posts"
        );
        assertEquals(
          posts.details.find((d: { key: string }) => d.key === "fields.state"),
          {
            key: "fields.state",
            action: "create",
            to: {
              name: "state",
              type: "select",
              default: "draft",
              values: ["draft", "live"],
            },
          },
        );
        assertEquals(await stateOf(target), was);
      },
    );

    await t.step(
      "the import into a fresh server gives identical schemas",
      async () => {
        const r = await importing(target, {
          schemas: [...schemas].reverse(),
          dry_run: false,
        });
        assertEquals(r.data.changes.length, names.length);
        assertEquals(timeless(await exported(target)), timeless(schemas));
        // The tables work: a record through a relation of the cycle.
        const admin = await target.adminToken();
        const left = await target.request(
          "POST",
          "/api/v1/entities/left_side",
          {
            token: admin,
            body: { n: 1 },
          },
        );
        assertStatus(left, 201, "left");
        assertStatus(
          await target.request("POST", "/api/v1/entities/right_side", {
            token: admin,
            body: { left: left.data.id },
          }),
          201,
          "right",
        );
      },
    );

    await t.step(
      "importing the same export again changes nothing",
      async () => {
        const r = await importing(target, { schemas, dry_run: false });
        assertEquals(r.data.changes, []);
      },
    );
  } finally {
    await source.close();
    await target.close();
  }
});

forEachDb(
  "schemas import: changes, refusals, delete_missing",
  async (t, db) => {
    const source = await startServer(db);
    const target = await startServer(db);
    try {
      const admin = await target.adminToken();
      // The target made its own posts (other ids): matched by name.
      for (const s of [source, target]) {
        assertStatus(
          await s.request("POST", "/api/v1/schemas", {
            token: await s.adminToken(),
            body: {
              name: "posts",
              type: "base",
              fields: [
                { name: "title", type: "string" },
                { name: "slug", type: "string" },
                { name: "old", type: "int" },
              ],
            },
          }),
          201,
          "posts",
        );
      }
      const srcPosts = await source.request("GET", "/api/v1/schemas/posts", {
        token: await source.adminToken(),
      });
      const title = srcPosts.data.fields.find((f: { name: string }) =>
        f.name === "title"
      );
      const old = srcPosts.data.fields.find((f: { name: string }) =>
        f.name === "old"
      );
      // On the source: a required title, a new field, a dropped one, a rule.
      assertStatus(
        await source.request("PATCH", "/api/v1/schemas/posts", {
          token: await source.adminToken(),
          body: {
            fields: [
              { id: title.id, required: true },
              { name: "body", type: "text" },
              { id: old.id, op: "delete" },
            ],
            rules: { list: { mode: "public", expr: "" } },
          },
        }),
        200,
        "patch source",
      );
      const srcAfter = await source.request("GET", "/api/v1/schemas/posts", {
        token: await source.adminToken(),
      });
      for (let i = 0; i < 2; i++) {
        assertStatus(
          await target.request("POST", "/api/v1/entities/posts", {
            token: admin,
            body: { title: "same", slug: "same", old: i },
          }),
          201,
          "record",
        );
      }
      assertStatus(
        await target.request("POST", "/api/v1/schemas", {
          token: admin,
          body: { name: "scratch", type: "base", fields: [] },
        }),
        201,
        "scratch",
      );
      const schemas = await exported(source);

      await t.step(
        "matched by name: the details say field by field what changes",
        async () => {
          const r = await importing(target, { schemas });
          assertEquals(r.data.changes, [{
            entity: "posts",
            action: "update",
            details: [
              {
                key: "rules.list",
                action: "update",
                from: { mode: "", expr: "" },
                to: { mode: "public", expr: "" },
              },
              {
                key: "fields.title",
                action: "update",
                from: { required: false },
                to: { required: true },
              },
              {
                key: "fields.body",
                action: "create",
                to: { name: "body", type: "text" },
              },
              {
                key: "fields.old",
                action: "delete",
                from: { name: "old", type: "int" },
              },
            ],
          }]);
        },
      );

      await t.step(
        "an import refused at its third change applies none",
        async () => {
          const was = await stateOf(target);
          const posts = schemas.find((s) => s.name === "posts")!;
          const fields = (posts.fields as { name: string }[]).map((f) =>
            f.name === "slug" ? { ...f, unique: true } : f
          );
          const extra = (name: string) => ({
            name,
            type: "base",
            fields: [{ name: "n", type: "int" }],
          });
          // Two creates, then posts: slug becomes unique, its values are not (409).
          let r = await importing(target, {
            schemas: [extra("first_new"), extra("second_new"), {
              ...posts,
              fields,
            }],
            dry_run: false,
          }, 409);
          assert(/duplicate values/.test(r.error), r.error);
          assertEquals(await stateOf(target), was);
          // The same when the third change is invalid (a type change: 400).
          const retyped = (posts.fields as { name: string }[]).map((f) =>
            f.name === "slug" ? { ...f, type: "int" } : f
          );
          r = await importing(target, {
            schemas: [extra("first_new"), extra("second_new"), {
              ...posts,
              fields: retyped,
            }],
            dry_run: false,
          }, 400);
          assert(/type cannot change/.test(r.error), r.error);
          assertEquals(await stateOf(target), was);
          // A dry run answers the same refusal.
          r = await importing(target, {
            schemas: [extra("first_new"), extra("second_new"), {
              ...posts,
              fields,
            }],
          }, 409);
          assertEquals(await stateOf(target), was);
        },
      );

      await t.step(
        "applied: the records stay, the schema is the source's",
        async () => {
          await importing(target, { schemas, dry_run: false });
          const got = await target.request("GET", "/api/v1/schemas/posts", {
            token: admin,
          });
          const shape = (s: Schema) =>
            (s.fields as { name: string; type: string; required: boolean }[])
              .map((f) => `${f.name}:${f.type}:${f.required}`);
          assertEquals(shape(got.data), shape(srcAfter.data));
          assertEquals(got.data.rules.list.mode, "public");
          const list = await target.request(
            "GET",
            "/api/v1/entities/posts",
            {},
          );
          assertEquals(list.data.items.length, 2);
          assertEquals(list.data.items[0].title, "same");
        },
      );

      await t.step(
        "delete_missing deletes what the import lacks, after a dry run that does not",
        async () => {
          let r = await importing(target, { schemas, dry_run: false });
          assertEquals(r.data.changes, []);
          r = await importing(target, { schemas, delete_missing: true });
          assertEquals(r.data.changes, [
            { entity: "scratch", action: "delete", details: [] },
          ]);
          assertStatus(
            await target.request("GET", "/api/v1/schemas/scratch", {
              token: admin,
            }),
            200,
            "still there after the dry run",
          );
          await importing(target, {
            schemas,
            delete_missing: true,
            dry_run: false,
          });
          assertStatus(
            await target.request("GET", "/api/v1/schemas/scratch", {
              token: admin,
            }),
            404,
            "deleted",
          );
        },
      );

      await t.step("bad bodies and system entities: 400", async () => {
        for (
          const body of [
            { schemas: "no" },
            { schemas: [], extra: 1 },
            { schemas: [], dry_run: "yes" },
            { schemas: [{ name: "mb_admins", type: "auth", fields: [] }] },
            {
              schemas: [{ name: "a", type: "base" }, {
                name: "A",
                type: "base",
              }],
            },
          ]
        ) await importing(target, body, 400);
      });

      await t.step("admin only", async () => {
        const user = (await userToken(target)).token;
        for (const token of [undefined, user]) {
          for (
            const [method, path] of [
              ["GET", "/api/v1/schemas/export"],
              ["POST", "/api/v1/schemas/import"],
            ]
          ) {
            const r = await target.request(method, path, {
              token,
              body: method === "POST" ? { schemas: [] } : undefined,
            });
            assertStatus(r, token ? 403 : 401, `${method} ${path}`);
          }
        }
      });
    } finally {
      await source.close();
      await target.close();
    }
  },
);
