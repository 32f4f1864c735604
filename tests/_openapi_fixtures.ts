/**
 * The schemas the OpenAPI and types tests share: entities whose rules open
 * different operations to a guest, a user and an admin, with every kind of
 * field a write schema constrains, relations both ways and a file field.
 *
 * @module
 */

import { assertStatus, type TestServer } from "./_server.ts";
import { AUTH, createSchema, PUBLIC } from "./_auth_fixtures.ts";

/** Admins only (the empty mode). */
export const ADMINS = { mode: "", expr: "" };

/**
 * `users` (auth: sign-up public, reads for users), `posts` (reads public,
 * writes by users, an update rule on the record), `comments` (a list rule
 * on the record, open to guests row by row), `staff_notes` (users only, by
 * a custom rule on `auth` alone), `secrets` (admins only) and `post_titles`
 * (a view, public).
 */
export async function openApiSchemas(
  s: TestServer,
  admin: string,
): Promise<void> {
  await createSchema(s, admin, {
    name: "users",
    type: "auth",
    fields: [
      { name: "name", type: "string", required: true, min: 2, max: 40 },
      { name: "role", type: "select", values: ["member", "editor"] },
    ],
    rules: {
      add: PUBLIC,
      get: AUTH,
      list: AUTH,
      update: { mode: "custom", expr: "record.id == auth.id" },
    },
  });
  await createSchema(s, admin, {
    name: "posts",
    type: "base",
    fields: [
      {
        name: "title",
        type: "string",
        required: true,
        min: 1,
        max: 120,
        pattern: "^[^<>]*$",
      },
      {
        name: "status",
        type: "select",
        values: ["draft", "published"],
        default: "draft",
      },
      { name: "score", type: "int", min: 0, max: 10 },
      {
        name: "author",
        type: "relation",
        default: "@auth",
        foreign_key: { entity: "users", on_delete: "set null" },
      },
      { name: "attachment", type: "file" },
      { name: "meta", type: "json" },
    ],
    rules: {
      list: PUBLIC,
      get: PUBLIC,
      add: AUTH,
      update: { mode: "custom", expr: "record.author == auth.id" },
      delete: ADMINS,
    },
  });
  await createSchema(s, admin, {
    name: "comments",
    type: "base",
    fields: [
      { name: "body", type: "text", required: true },
      {
        name: "post",
        type: "relation",
        required: true,
        foreign_key: { entity: "posts", on_delete: "cascade" },
      },
    ],
    rules: {
      list: { mode: "custom", expr: 'record.body != ""' },
      get: PUBLIC,
      add: AUTH,
    },
  });
  await createSchema(s, admin, {
    name: "staff_notes",
    type: "base",
    fields: [{ name: "note", type: "string" }],
    rules: {
      list: { mode: "custom", expr: 'auth.type == "user"' },
      get: AUTH,
    },
  });
  await createSchema(s, admin, {
    name: "secrets",
    type: "base",
    fields: [{ name: "code", type: "string" }],
    rules: {},
  });
  const view = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name: "post_titles",
      type: "view",
      view_query: "SELECT id, title FROM posts",
      rules: { list: PUBLIC, get: PUBLIC },
    },
  });
  assertStatus(view, 201, "create view");
}
