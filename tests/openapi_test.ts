/**
 * `GET /api/v1/openapi.json`: a valid OpenAPI 3.1 document (checked by
 * `@seriousme/openapi-schema-validator`) that names every registered route,
 * shows each caller only the entities its rules open to it, describes
 * records as the API really returns them (checked with Ajv on real
 * answers), and follows schema changes without a restart. One server per
 * database; the steps read the schemas of tests/_openapi_fixtures.ts.
 */

import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { buildRouter } from "../routes/mod.ts";
import { BUILTIN_ROUTES, LEFT_OUT } from "../lib/openapi/builtin_routes.ts";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { fastUser, fixtureAdmin, issue } from "./_auth_fixtures.ts";
import { openApiSchemas } from "./_openapi_fixtures.ts";

// deno-lint-ignore no-explicit-any
type Doc = any;

/** How a document would name the entities only some callers see. */
const HIDDEN_NAMES = [
  "entities/secrets",
  '"Secrets',
  "staff_notes",
  '"StaffNotes',
];

async function documentFor(s: TestServer, token?: string): Promise<Doc> {
  const res = await fetch(`${s.url}/api/v1/openapi.json`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  assertEquals(res.status, 200);
  assert(res.headers.get("content-type")?.startsWith("application/json"));
  return await res.json();
}

async function assertValid(doc: Doc, who: string): Promise<void> {
  const result = await new Validator().validate(doc);
  if (!result.valid) {
    throw new Error(
      `${who}'s document is not valid OpenAPI 3.1: ${
        JSON.stringify(result.errors).slice(0, 2000)
      }`,
    );
  }
}

/** The entity paths of a document: `posts` → its methods. */
function entityOps(doc: Doc): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    const m = /^\/api\/v1\/entities\/([A-Za-z0-9_]+)(\/\{id\})?$/.exec(path);
    if (!m) continue;
    for (const method of Object.keys(item as object)) {
      (out[m[1]] ??= []).push(`${method}${m[2] ? " one" : ""}`);
    }
  }
  for (const ops of Object.values(out)) ops.sort();
  return out;
}

/** Validates `value` against the document's schema `name` (Ajv, 2020-12). */
function conforms(doc: Doc, name: string, value: unknown): string {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv); // date-time, email, uri checked too
  ajv.addSchema({ ...doc, $id: "doc" });
  const check = ajv.getSchema(`doc#/components/schemas/${name}`);
  assert(check, `no schema ${name}`);
  return check(value) ? "" : JSON.stringify(check.errors);
}

forEachDb("openapi document", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await fixtureAdmin(s);
    await openApiSchemas(s, admin);
    const ann = await fastUser(s, "users", {
      email: "ann@example.com",
      name: "Ann",
    });
    const user = await issue(s, "users", ann.id);

    await t.step(
      "valid OpenAPI 3.1 for a guest, a user and an admin",
      async () => {
        for (
          const [who, token] of [["guest", undefined], ["user", user], [
            "admin",
            admin,
          ]] as const
        ) {
          const doc = await documentFor(s, token);
          assertEquals(doc.openapi, "3.1.0");
          await assertValid(doc, who);
        }
      },
    );

    await t.step(
      "every registered route is in the document, described",
      async () => {
        const doc = await documentFor(s, admin);
        const missing: string[] = [];
        const undescribed: string[] = [];
        for (const [method, pattern] of buildRouter(s.app).routes()) {
          const key = `${method} ${pattern}`;
          if (key in LEFT_OUT) continue;
          if (!(key in BUILTIN_ROUTES)) undescribed.push(key);
          const path = pattern.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
          if (!doc.paths[path]?.[method.toLowerCase()]) missing.push(key);
        }
        assertEquals(missing, [], "routes missing from the document");
        assertEquals(
          undescribed,
          [],
          "routes without an entry in lib/openapi/builtin_routes.ts",
        );
        // Each list parameter of records is there.
        const params = doc.paths["/api/v1/entities/posts"].get.parameters
          .map((p: { name: string }) => p.name).sort();
        assertEquals(params, [
          "after",
          "count",
          "expand",
          "fields",
          "filter",
          "limit",
          "search",
          "sort",
        ]);
        assertEquals(doc.components.securitySchemes.bearer.scheme, "bearer");
        assertEquals(doc.components.schemas.Error.required, [
          "status",
          "data",
          "error",
        ]);
      },
    );

    await t.step(
      "a guest sees what rules open to guests, no more",
      async () => {
        const doc = await documentFor(s);
        assertEquals(entityOps(doc), {
          comments: ["get", "get one"], // list: a rule on the record, row by row
          post_titles: ["get", "get one"],
          // update: a rule on the record (decided per record) counts as open
          posts: ["get", "get one", "patch one"],
          users: ["patch one", "post"], // sign-up
        });
        const text = JSON.stringify(doc);
        for (const hidden of HIDDEN_NAMES) {
          assert(!text.includes(hidden), `a guest's document names ${hidden}`);
        }
        // staff_notes' rule reads `auth` alone: decided for the guest (closed).
        // No expansion into users, which a guest may not read.
        const expand = doc.components.schemas.Posts.properties.expand;
        assertEquals(Object.keys(expand.properties), ["comments_via_post"]);
        // Sign-up: the password is write-only, `verified` is not the guest's.
        const create = doc.components.schemas.UsersCreate;
        assertEquals(create.properties.password.writeOnly, true);
        assert(!("verified" in create.properties), "a guest may set verified");
        assert(!("password" in doc.components.schemas.Users.properties));
        assertEquals(create.required.sort(), ["email", "name", "password"]);
      },
    );

    await t.step("a user sees what authenticated rules open", async () => {
      const doc = await documentFor(s, user);
      assertEquals(entityOps(doc), {
        comments: ["get", "get one", "post"],
        post_titles: ["get", "get one"],
        posts: ["get", "get one", "patch one", "post"],
        staff_notes: ["get", "get one"],
        users: ["get", "get one", "patch one", "post"],
      });
      const text = JSON.stringify(doc);
      for (const hidden of HIDDEN_NAMES.filter((n) => !/staff/i.test(n))) {
        assert(!text.includes(hidden), `a user's document names ${hidden}`);
      }
      const expand = doc.components.schemas.Posts.properties.expand.properties;
      assertEquals(expand.author, { $ref: "#/components/schemas/Users" });
      assertEquals(expand.comments_via_post.items, {
        $ref: "#/components/schemas/Comments",
      });
      assert(
        !("password" in doc.components.schemas.Users.properties),
        "a read shows the password",
      );
    });

    await t.step("an admin sees everything", async () => {
      const doc = await documentFor(s, admin);
      const ops = entityOps(doc);
      assertEquals(ops.secrets, [
        "delete one",
        "get",
        "get one",
        "patch one",
        "post",
      ]);
      assertEquals(ops.post_titles, ["get", "get one"]); // a view: no writes
      assert("verified" in doc.components.schemas.UsersCreate.properties);
      assert(!("password" in doc.components.schemas.Users.properties));
    });

    await t.step("write schemas carry the field constraints", async () => {
      const doc = await documentFor(s, user);
      const create = doc.components.schemas.PostsCreate;
      assertEquals(create.required, ["title"]); // status and author: defaults
      assertEquals(create.properties.title, {
        type: "string",
        minLength: 1,
        maxLength: 120,
        pattern: "^[^<>]*$",
      });
      assertEquals(create.properties.status.enum, ["draft", "published", null]);
      assertEquals(create.properties.score.minimum, 0);
      assertEquals(create.properties.score.maximum, 10);
      assertEquals(create.properties.author["x-moonbase-relation"], "users");
      assertEquals(create.additionalProperties, false);
      const body = doc.paths["/api/v1/entities/posts"].post.requestBody.content;
      assertEquals(
        body["multipart/form-data"].schema.properties.attachment
          .contentMediaType,
        "application/octet-stream",
      );
      assertEquals(doc.components.schemas.PostsUpdate.required, undefined);
      assert("oldPassword" in doc.components.schemas.UsersUpdate.properties);
    });

    await t.step(
      "records answered by the API conform to their schemas",
      async () => {
        const doc = await documentFor(s, user);
        const created = await s.request("POST", "/api/v1/entities/posts", {
          token: user,
          body: { title: "Hello", meta: { a: [1] } },
        });
        assertStatus(created, 201);
        const id = created.data.id;
        await s.request("POST", "/api/v1/entities/comments", {
          token: user,
          body: { body: "Nice", post: id },
        });
        const got = await s.request(
          "GET",
          `/api/v1/entities/posts/${id}?expand=author,comments_via_post`,
          { token: user },
        );
        assertStatus(got, 200);
        assert(got.data.expand.author.id === ann.id, "expanded author");
        assertEquals(conforms(doc, "Posts", got.data), "");
        const page = await s.request("GET", "/api/v1/entities/users", {
          token: user,
        });
        assertEquals(conforms(doc, "Users", page.data.items[0]), "");
        const view = await s.request("GET", "/api/v1/entities/post_titles");
        assertEquals(conforms(doc, "PostTitles", view.data.items[0]), "");
        // The schema is strict: a record with a stray key does not conform.
        assert(conforms(doc, "Posts", { ...got.data, extra: 1 }) !== "");
      },
    );

    await t.step("follows schema changes without a restart", async () => {
      const patched = await s.request("PATCH", "/api/v1/schemas/secrets", {
        token: admin,
        body: {
          rules: { list: { mode: "public", expr: "" } },
          fields: [{ name: "label", type: "string", required: true }],
        },
      });
      assertStatus(patched, 200);
      const doc = await documentFor(s);
      assertEquals(entityOps(doc).secrets, ["get"]);
      assertEquals(doc.components.schemas.Secrets.required, [
        "id",
        "created",
        "updated",
        "code",
        "label",
      ]);
      const removed = await s.request("DELETE", "/api/v1/schemas/post_titles", {
        token: admin,
      });
      assertStatus(removed, 204);
      assert(!("PostTitles" in (await documentFor(s)).components.schemas));
    });

    await t.step(
      "a rule reading the caller's relations is evaluated for the caller",
      async () => {
        const make = async (body: Record<string, unknown>) =>
          assertStatus(
            await s.request("POST", "/api/v1/schemas", { token: admin, body }),
            201,
          );
        const open = { mode: "public", expr: "" };
        await make({
          name: "oa_teams",
          type: "base",
          fields: [{ name: "active", type: "bool" }],
          rules: { list: open, get: open },
        });
        await make({
          name: "oa_members",
          type: "auth",
          fields: [{
            name: "team",
            type: "relation",
            foreign_key: { entity: "oa_teams", on_delete: "set null" },
          }],
          rules: { get: open },
        });
        const active = "auth.user.team.active == true";
        await make({
          name: "oa_boards",
          type: "base",
          fields: [{ name: "title", type: "string" }],
          rules: {
            list: { mode: "custom", expr: active },
            // Reads the record too: decided per record (maybe open).
            get: { mode: "custom", expr: `record.id != "" && ${active}` },
          },
        });
        const team = async (on: boolean) => {
          const r = await s.request("POST", "/api/v1/entities/oa_teams", {
            token: admin,
            body: { active: on },
          });
          assertStatus(r, 201);
          return r.data.id as string;
        };
        const member = async (email: string, teamId: string | null) => {
          const u = await fastUser(s, "oa_members", { email });
          const r = await s.request(
            "PATCH",
            `/api/v1/entities/oa_members/${u.id}`,
            { token: admin, body: { team: teamId } },
          );
          assertStatus(r, 200);
          return await issue(s, "oa_members", u.id);
        };
        const on = await member("on@example.com", await team(true));
        const off = await member("off@example.com", await team(false));
        const none = await member("none@example.com", null);
        assertEquals(entityOps(await documentFor(s, on)).oa_boards, [
          "get",
          "get one",
        ]);
        for (const token of [off, none, undefined]) {
          assertEquals(entityOps(await documentFor(s, token)).oa_boards, [
            "get one",
          ]);
        }
      },
    );
  } finally {
    await s.close();
  }
});
