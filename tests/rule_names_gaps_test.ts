/**
 * Rules read only names that exist, where the first checks missed them
 * (found attacking issue 27 item 2), on both databases:
 *
 * - a view's rule reads the view's columns as they are after a change of
 *   the entity it reads: a view `SELECT * FROM posts` follows a renamed or
 *   dropped field of `posts` on SQLite, and its rule must not silently turn
 *   into "deny" (409 naming the view's rule, nothing changed);
 * - `req.<name>` and `req.body.<name>` are checked as `record.<name>` is: a
 *   body never carries a key that is not a field (400 before the write), so
 *   `req.body.stauts != "published"` would let every write through, and
 *   `req.metod == "PATCH"` would refuse everyone;
 * - a member of a field's value that cannot exist is refused: a relation
 *   holds the related record's id (`record.owner.email` reads nothing),
 *   strings have only `.length` and indexes, numbers and booleans nothing;
 * - `auth.user.<name>` reads the fields of auth entities with an API: one
 *   without is shut out everywhere (its tokens stop working), so switching
 *   `has_api` off is refused like deleting it when a rule reads its field.
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

/** [case, entity, op, expr, status, error pattern (400s)] */
const SAVES: [string, string, string, string, number, RegExp?][] = [
  [
    "a typo after req.body (fails open under !=)",
    "posts",
    "update",
    'req.body.stauts != "published"',
    400,
    /^Cannot accept rules\.update\.expr: unknown name "req\.body\.stauts" \(did you mean "req\.body\.status"\?\) at 9$/,
  ],
  [
    "a typo after req",
    "posts",
    "update",
    'req.bdy.status != "published"',
    400,
    /unknown name "req\.bdy" \(did you mean "req\.body"\?\) at 4$/,
  ],
  [
    "req.metod",
    "posts",
    "delete",
    'req.metod == "DELETE"',
    400,
    /unknown name "req\.metod" \(did you mean "req\.method"\?\) at 4$/,
  ],
  [
    "a body key that is no field",
    "posts",
    "update",
    "req.body.hasOwnProperty == undefined",
    400,
    /unknown name "req\.body\.hasOwnProperty" \(req\.body has: id, created, updated, title, status, /,
  ],
  [
    "req.body.<field>, req.query.<anything>, req.method",
    "posts",
    "update",
    'req.body.status != "published" && req.body["title"] != "x" && req.query.whatever == null && req.method == "PATCH"',
    200,
  ],
  [
    "a relation's related record (PocketBase-style traversal)",
    "posts",
    "list",
    "record.owner.email == auth.user.email",
    400,
    /^Cannot accept rules\.list\.expr: "record\.owner\.email" reads nothing: record\.owner is a relation, whose value is the related record's id \(rules cannot read that record's fields\) at 13$/,
  ],
  [
    "a member of a string",
    "posts",
    "get",
    'record.title.first == "a"',
    400,
    /"record\.title\.first" reads nothing: record\.title is a string \(only \.length and \[index\] read into it\) at 13$/,
  ],
  [
    "a member of a number",
    "posts",
    "get",
    "record.views.length > 0",
    400,
    /"record\.views\.length" reads nothing: record\.views is a number \(it has no members\) at 13$/,
  ],
  [
    "members values have: .length and indexes of strings and files, json",
    "posts",
    "get",
    'record.title.length > 0 && record.title[0] == "a" && record.owner.length == 36 && record.tags[0] != "" && record.tags.length > 0 && record.meta.a.b == 1 && record.owner.startsWith("0")',
    200,
  ],
  [
    "req.body.password on an auth entity",
    "users",
    "update",
    "record.id == auth.id && req.body.password == null",
    200,
  ],
];

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
          { name: "status", type: "string" },
          { name: "views", type: "int" },
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

    for (const [label, entity, op, expr, want, error] of SAVES) {
      await t.step(`${label} → ${want}`, async () => {
        const r = await a("PATCH", `schemas/${entity}`, {
          rules: { [op]: custom(expr) },
        });
        status(r, want, expr);
        const c = await a("POST", "sys/rules/check", { entity, expr });
        assert.equal(c.data.valid, want !== 400, c.text);
        if (want !== 400) return;
        assert.match(r.error, error!);
        assert.ok(r.error.includes(c.data.detail), c.data.detail);
      });
    }

    await t.step(
      "renaming a field a rule reads as req.body.<field> → 409",
      async () => {
        const r = await a("PATCH", "schemas/posts", {
          fields: [{ id: await fieldId("posts", "status"), name: "state" }],
        });
        status(r, 409, "rename status");
        assert.match(
          r.error,
          /^Cannot change entity posts: its update rule reads req\.body\.status, which would no longer exist; change that rule in the same request$/,
        );
      },
    );

    await t.step(
      "auth.user.<field> of an auth entity without API: refused, and has_api off → 409",
      async () => {
        status(
          await a("POST", "schemas", {
            name: "staff",
            type: "auth",
            fields: [{ name: "badge", type: "string" }],
          }),
          201,
          "staff",
        );
        status(
          await a("POST", "schemas", {
            name: "badges",
            type: "base",
            fields: [{ name: "label", type: "string" }],
            rules: { list: custom('auth.user.badge == "gold"') },
          }),
          201,
          "badges",
        );
        const off = await a("PATCH", "schemas/staff", { has_api: false });
        status(off, 409, "has_api off");
        assert.match(
          off.error,
          /^Cannot change entity staff: the list rule of badges reads auth\.user\.badge, which would no longer exist; change that rule first$/,
        );
        status(
          await a("PATCH", "schemas/badges", {
            rules: { list: { mode: "auth", expr: "" } },
          }),
          200,
          "rule changed",
        );
        status(
          await a("PATCH", "schemas/staff", { has_api: false }),
          200,
          "has_api off",
        );
        const again = await a("PATCH", "schemas/badges", {
          rules: { list: custom('auth.user.badge == "gold"') },
        });
        status(again, 400, "a field only an entity without API has");
        assert.match(again.error, /unknown name "auth\.user\.badge"/);
      },
    );
  } finally {
    await s.close();
  }
});
