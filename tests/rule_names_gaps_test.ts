/**
 * Rules read only names that exist, where the first checks missed them
 * (found attacking issue 27 item 2), on both databases:
 *
 * - a view's rule reads the view's columns as they are after a change of
 *   the entity it reads: a view `SELECT * FROM posts` follows a renamed or
 *   dropped field of `posts` on SQLite, and its rule must not silently turn
 *   into "deny" (409 naming the view's rule, nothing changed).
 *
 * One server per database; the steps share the auth entity `users` and the
 * entity `posts`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { status } from "./_checks.ts";
import { setupUsers } from "./_rules_fixtures.ts";

const custom = (expr: string) => ({ mode: "custom", expr });

forEachDb("rules read only names that exist: gaps", async (t, db) => {
  const s = await startServer(db);
  try {
    const u = await setupUsers(s);
    const a = (method: string, path: string, body?: unknown) =>
      s.request(method, `/api/v1/${path}`, { token: u.admin, body });
    status(
      await a("POST", "schemas", {
        name: "posts",
        type: "base",
        fields: [
          { name: "title", type: "string" },
          { name: "body", type: "text" },
          { name: "owner", type: "relation", foreign_key: { entity: "users" } },
          { name: "meta", type: "json" },
          { name: "tags", type: "files" },
        ],
        rules: { list: { mode: "public", expr: "" } },
      }),
      201,
      "posts",
    );
    const fieldId = async (entity: string, name: string) => {
      const r = await a("GET", `schemas/${entity}`);
      return r.data.fields.find((f: { name: string }) => f.name === name).id;
    };

    await t.step(
      "a change that moves a view's columns away from its rule → 409",
      async () => {
        status(
          await a("POST", "schemas", {
            name: "everything",
            type: "view",
            view_query: "SELECT * FROM posts",
            rules: { list: custom('record.title != ""') },
          }),
          201,
          "view",
        );
        const before = (await a("GET", "schemas/everything")).data;
        for (
          const change of [
            { fields: [{ id: await fieldId("posts", "title"), name: "head" }] },
            { fields: [{ id: await fieldId("posts", "title"), op: "delete" }] },
          ]
        ) {
          const r = await a("PATCH", "schemas/posts", change);
          status(r, 409, JSON.stringify(change));
          // SQLite: the view follows the change, its rule would not;
          // PostgreSQL: the view holds the column (a view reads it).
          assert.match(
            r.error,
            db === "sqlite"
              ? /^Cannot change entity posts: the list rule of everything reads record\.title, which would no longer exist; change that rule first$/
              : /^Cannot change entity posts: (view everything reads it|read by view everything)/,
          );
          assert.deepEqual((await a("GET", "schemas/everything")).data, before);
        }
        status(await a("DELETE", "schemas/everything"), 204, "drop the view");
      },
    );
  } finally {
    await s.close();
  }
});
