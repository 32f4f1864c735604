/**
 * Rules read only names that exist (issue 27, item 2), on both databases:
 * a custom rule naming a field its entity (`record.*`) or no auth entity
 * (`auth.user.*`) has is refused at save with the position and the closest
 * name, on create, on PATCH and in the rule check; a schema change after
 * which a working rule would read a name that is gone is refused (409); a
 * rule stored before (by an older version) is served as saved, warned in
 * the log and shown by the rule check, and blocks no other change.
 *
 * Further (found attacking issue 27 item 2): a view's rule reads the view's
 * columns as they are after a change of the entity it reads (a view
 * `SELECT * FROM posts` follows a renamed or dropped field on SQLite, and its
 * rule must not silently turn into "deny": 409); `req.<name>` and
 * `req.body.<name>` are checked as `record.<name>` is (a body never carries a
 * key that is not a field, so `req.body.stauts != "published"` would let
 * every write through); a member of a field's value that cannot exist is
 * refused (a relation holds an id, strings have only `.length` and indexes);
 * `auth.user.<name>` reads the fields of auth entities with an API only, so
 * switching `has_api` off is refused like deleting it when a rule reads its
 * field.
 *
 * One server per database and test: the first test's steps share the auth
 * entities `users` (role, team) and `staff` (badge) and the entity `posts`;
 * the second's share `users` and a `posts` of its own.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { status } from "./_checks.ts";
import { logsOf } from "./_extend_fixtures.ts";
import { setupUsers } from "./_rules_fixtures.ts";

const custom = (expr: string) => ({ mode: "custom", expr });

/** The fields of `posts` (and of each entity a save case creates). */
const POST_FIELDS = [
  { name: "title", type: "string" },
  { name: "author", type: "relation", foreign_key: { entity: "users" } },
  { name: "meta", type: "json" },
];

/** [case, op, expr, status, error pattern (400s), position (400s)] */
const SAVES: [string, string, string, number, RegExp?, number?][] = [
  [
    "a typo in record.*",
    "add",
    "record.autor == auth.id",
    400,
    /^Cannot accept rules\.add\.expr: .*unknown name "record\.autor" \(did you mean "record\.author"\?\) at 7$/,
    7,
  ],
  [
    "a field the entity lacks: its fields are listed",
    "list",
    "record.owner == auth.id",
    400,
    /unknown name "record\.owner" \(record has: id, created, updated, title, author, meta\) at 7$/,
    7,
  ],
  [
    "record[...] with a string key",
    "get",
    'record["autor"] == auth.id',
    400,
    /unknown name "record\.autor" \(did you mean "record\.author"\?\) at 7$/,
    7,
  ],
  [
    "a typo in auth.user.*",
    "update",
    'record.author == auth.id || auth.user.rol == "editor"',
    400,
    /unknown name "auth\.user\.rol" \(did you mean "auth\.user\.role"\?\) at 38$/,
    38,
  ],
  [
    "a typo in auth.*",
    "delete",
    'auth.usr.role == "editor"',
    400,
    /unknown name "auth\.usr" \(did you mean "auth\.user"\?\) at 5$/,
    5,
  ],
  [
    "password is never readable",
    "list",
    'auth.user.password != ""',
    400,
    /unknown name "auth\.user\.password"/,
    10,
  ],
  [
    "known names: fields, built-ins, any auth entity's fields, nested json, req",
    "delete",
    'record.author == auth.id && record.title.length > 0 && record.id != "" && record.created != "" && auth.user.role == "editor" && auth.user.badge != "" && auth.user.email.endsWith("@x.io") && auth.user.verified == true && record.meta.any.depth == 1 && req.body.title == null && req.query.whatever == null && req.method != "" && auth.entity == "users" && auth.type == "user"',
    201,
  ],
];

async function fixtures(s: TestServer): Promise<string> {
  const u = await setupUsers(s);
  const a = (method: string, path: string, body?: unknown) =>
    s.request(method, `/api/v1/${path}`, { token: u.admin, body });
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
      name: "posts",
      type: "base",
      fields: POST_FIELDS,
      rules: {
        list: custom("record.author == auth.id || auth.user.team == 'red'"),
        get: custom("auth.user.badge != ''"),
        add: custom("record.author == auth.id"),
      },
    }),
    201,
    "posts",
  );
  return u.admin;
}

forEachDb("rules read only names that exist", async (t, db) => {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
  const s = await startServer(db, { dataDir });
  let open: TestServer | undefined = s;
  try {
    const admin = await fixtures(s);
    const a = (method: string, path: string, body?: unknown) =>
      s.request(method, `/api/v1/${path}`, { token: admin, body });

    for (const [i, [label, op, expr, want, error, pos]] of SAVES.entries()) {
      await t.step(`create: ${label} → ${want}`, async () => {
        const name = `e${i}`;
        const r = await a("POST", "schemas", {
          name,
          type: "base",
          fields: POST_FIELDS,
          rules: { [op]: custom(expr) },
        });
        status(r, want, expr);
        if (want !== 400) return;
        assert.match(r.error, error!);
        status(await a("GET", `schemas/${name}`), 404, "nothing created");
        // The rule check answers as the save does, with the same position.
        const c = await a("POST", "sys/rules/check", { entity: "posts", expr });
        status(c, 200, "check");
        assert.equal(c.data.valid, false, expr);
        assert.equal(c.data.position, pos);
        assert.ok(r.error.includes(c.data.detail), c.data.detail);
      });
      await t.step(
        `PATCH rules: ${label} → ${want === 201 ? 200 : want}`,
        async () => {
          const r = await a("PATCH", "schemas/posts", {
            rules: { [op]: custom(expr) },
          });
          status(r, want === 201 ? 200 : want, expr);
          if (want === 400) assert.match(r.error, error!);
          if (want !== 400) {
            const c = await a("POST", "sys/rules/check", {
              entity: "posts",
              expr,
            });
            assert.equal(c.data.valid, true, c.text);
          }
        },
      );
    }

    await t.step("a view's rules read its columns", async () => {
      const bad = await a("POST", "schemas", {
        name: "titles",
        type: "view",
        view_query: "SELECT id, title AS t FROM posts",
        rules: { list: custom('record.title != ""') },
      });
      status(bad, 400, "view rule on a column it lacks");
      assert.match(
        bad.error,
        /unknown name "record\.title" \(record has: id, t\) at 7/,
      );
      const ok = await a("POST", "schemas", {
        name: "titles",
        type: "view",
        view_query: "SELECT id, title AS t FROM posts",
        rules: { list: custom('record.t != ""') },
      });
      status(ok, 201, "view rule on its column");
    });

    await t.step("a filter's unknown field names the closest", async () => {
      const c = await a("POST", "sys/rules/check", {
        entity: "posts",
        expr: 'titel == "x"',
        kind: "filter",
      });
      assert.equal(c.data.valid, false);
      assert.equal(
        c.data.detail,
        'unknown name "titel" (did you mean "title"?)',
      );
      const l = await s.request(
        "GET",
        `/api/v1/entities/posts?filter=${encodeURIComponent('titel == "x"')}`,
        { token: admin },
      );
      status(l, 400, "list filter");
      assert.match(l.error, /did you mean "title"\?/);
    });

    const fieldId = async (entity: string, name: string) => {
      const r = await a("GET", `schemas/${entity}`);
      return r.data.fields.find((f: { name: string }) => f.name === name).id;
    };

    // [case, entity, body, rule and name named in the 409]
    const CHANGES: [string, string, () => Promise<unknown>, RegExp][] = [
      [
        "dropping a field its own rule reads",
        "posts",
        async () => ({
          fields: [{ id: await fieldId("posts", "author"), op: "delete" }],
        }),
        /^Cannot change entity posts: its list rule reads record\.author, which would no longer exist; change that rule in the same request$/,
      ],
      [
        "renaming a field its own rule reads",
        "posts",
        async () => ({
          fields: [{ id: await fieldId("posts", "author"), name: "writer" }],
        }),
        /^Cannot change entity posts: its list rule reads record\.author, which would no longer exist/,
      ],
      [
        "dropping an auth entity's field another entity's rule reads",
        "users",
        async () => ({
          fields: [{ id: await fieldId("users", "team"), op: "delete" }],
        }),
        /^Cannot change entity users: the list rule of posts reads auth\.user\.team, which would no longer exist; change that rule first$/,
      ],
    ];
    for (const [label, entity, body, error] of CHANGES) {
      await t.step(`${label} → 409, nothing changed`, async () => {
        const before = (await a("GET", `schemas/${entity}`)).data;
        const r = await a("PATCH", `schemas/${entity}`, await body());
        status(r, 409, label);
        assert.match(r.error, error);
        assert.deepEqual((await a("GET", `schemas/${entity}`)).data, before);
      });
    }

    await t.step(
      "deleting the only auth entity with a field a rule reads → 409",
      async () => {
        const r = await a("DELETE", "schemas/staff");
        status(r, 409, "delete staff");
        assert.match(
          r.error,
          /^Cannot delete entity staff: the get rule of posts reads auth\.user\.badge, which would no longer exist; change that rule first$/,
        );
        status(await a("GET", "schemas/staff"), 200, "staff kept");
      },
    );

    await t.step(
      "a rename with the rule changed in the same PATCH → 200",
      async () => {
        const r = await a("PATCH", "schemas/posts", {
          fields: [{ id: await fieldId("posts", "author"), name: "writer" }],
          rules: {
            list: custom("record.writer == auth.id || auth.user.team == 'red'"),
            add: custom("record.writer == auth.id"),
            delete: custom("auth.id != ''"),
          },
        });
        status(r, 200, "rename with rules");
      },
    );

    await t.step("a rule stored by an older version", async () => {
      // Written behind Moonbase's back, as a database saved before the check holds it.
      const [row] = await s.app.storage.query(
        `SELECT "schema" FROM "mb_tables" WHERE "name" = 'posts'`,
      );
      const schema = JSON.parse(String(row.schema));
      schema.rules.list = custom("record.autor == auth.id");
      await s.app.storage.run(
        `UPDATE "mb_tables" SET "schema" = ? WHERE "name" = 'posts'`,
        [JSON.stringify(schema)],
      );
      open = undefined;
      await s.close();
      const second = open = await startServer(db, {
        dataDir,
        connection: s.connection,
      });
      const b = (method: string, path: string, body?: unknown) =>
        second.request(method, `/api/v1/${path}`, { token: admin, body });
      const warned = await logsOf(second, "reads a name that does not exist");
      assert.equal(warned.length, 1, JSON.stringify(warned));
      assert.equal(warned[0].level, "warn");
      assert.match(warned[0].message, /list rule of posts .*"record\.autor"/);
      // Served as saved: the list answers (the rule matches no row).
      const u = await second.app.schemas.get("users")!.queryFromCols(
        "alice@example.com",
        ["email"],
      );
      const token = (await second.app.sessions.issue(
        second.app.schemas.get("users")!,
        u!,
      )).token;
      const l = await second.request("GET", "/api/v1/entities/posts", {
        token,
      });
      status(l, 200, "list under the stored rule");
      // The rule check shows the problem.
      const c = await b("POST", "sys/rules/check", {
        entity: "posts",
        expr: "record.autor == auth.id",
      });
      assert.equal(c.data.valid, false);
      // Other changes go through; the stored rule stays as it is.
      const p = await b("PATCH", "schemas/posts", {
        fields: [{ name: "extra", type: "string" }],
        rules: { get: custom("auth.id != ''") },
      });
      status(p, 200, "an unrelated change");
      assert.equal(p.data.rules.list.expr, "record.autor == auth.id");
    });
  } finally {
    await open?.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

/** [case, entity, op, expr, status, error pattern (400s)] */
const LATER_SAVES: [string, string, string, string, number, RegExp?][] = [
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
    "a relation's related record (traversal)",
    "posts",
    "list",
    "record.owner.email == auth.user.email",
    200,
  ],
  [
    "a name the related record does not have",
    "posts",
    "list",
    "record.owner.emial == auth.user.email",
    400,
    /^Cannot accept rules\.list\.expr: unknown name "record\.owner\.emial" \(did you mean "record\.owner\.email"\?\) at 13$/,
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

forEachDb(
  "rules read only names that exist: views, req.*, members, auth.user",
  async (t, db) => {
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
            {
              name: "owner",
              type: "relation",
              foreign_key: { entity: "users" },
            },
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
              {
                fields: [{ id: await fieldId("posts", "title"), name: "head" }],
              },
              {
                fields: [{ id: await fieldId("posts", "title"), op: "delete" }],
              },
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
            assert.deepEqual(
              (await a("GET", "schemas/everything")).data,
              before,
            );
          }
          status(await a("DELETE", "schemas/everything"), 204, "drop the view");
        },
      );

      for (const [label, entity, op, expr, want, error] of LATER_SAVES) {
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
  },
);
