/**
 * The owner pattern without a hook (issue 27, item 3), on both databases: a
 * relation field to an auth entity with `"default": "@auth"` takes the
 * caller's id before the add rule `record.owner == auth.id` runs (and before
 * the hooks, which see it); a value the client sends is kept and checked by
 * the rule like any other. A denial names the rule that refused, never what
 * it read. Rules may call the scripts' helpers with the names checked.
 *
 * One server per database with one script (a helper and a `beforeCreate`
 * hook); the steps share the auth entities `users` and `staff` and the
 * entity `notes`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, seedUser, type TestServer } from "./_server.ts";
import { status } from "./_checks.ts";
import { withScripts } from "./_extend_fixtures.ts";
import { setupUsers, tokenOf, type Users } from "./_rules_fixtures.ts";

const custom = (expr: string) => ({ mode: "custom", expr });

const SCRIPT = `
export const helpers = { short: (s) => typeof s === "string" && s.length < 10 };
export default function (app) {
  app.onRecord("beforeCreate", "notes", (e) => {
    e.record.seen = e.record.owner ?? "none";
  });
}
`;

interface World extends Users {
  tStaff: string;
  mine: string;
}

async function setup(s: TestServer): Promise<World> {
  const u = await setupUsers(s);
  const a = (body: unknown) =>
    s.request("POST", "/api/v1/schemas", { token: u.admin, body });
  status(
    await a({ name: "staff", type: "auth", fields: [] }),
    201,
    "staff",
  );
  const staff = await seedUser(
    s,
    "staff",
    { email: "sam@example.com" },
    "password-123",
  );
  status(
    await a({
      name: "notes",
      type: "base",
      fields: [
        { name: "title", type: "string" },
        {
          name: "owner",
          type: "relation",
          foreign_key: { entity: "users" },
          default: "@auth",
        },
        { name: "seen", type: "string" },
      ],
      rules: {
        list: custom("record.owner == auth.id"),
        get: custom("record.owner == auth.id"),
        add: custom("record.owner == auth.id && short(record.title)"),
        update: custom('record.owner == auth.id && record.title != "locked"'),
        delete: { mode: "", expr: "" },
      },
    }),
    201,
    "notes",
  );
  const mine = await s.request("POST", "/api/v1/entities/notes", {
    token: u.tAlice,
    body: { title: "mine" },
  });
  status(mine, 201, "alice's note");
  return {
    ...u,
    tStaff: await tokenOf(s, "staff", staff.id),
    mine: mine.data.id,
  };
}

type Who = "guest" | "alice" | "staff" | "admin";

/** [case, who, method, path under /api/v1/entities/, body, status, error or record check] */
type Row = [
  string,
  Who,
  string,
  (w: World) => string,
  ((w: World) => unknown) | undefined,
  number,
  string | ((data: Record<string, unknown>, w: World) => void),
];

const ROWS: Row[] = [
  [
    "a user's note without owner: the caller, seen by the hook",
    "alice",
    "POST",
    () => "notes",
    () => ({ title: "hi" }),
    201,
    (d, w) => {
      assert.equal(d.owner, w.alice.id);
      assert.equal(d.seen, w.alice.id);
    },
  ],
  [
    "a guest: no caller, the add rule refuses",
    "guest",
    "POST",
    () => "notes",
    () => ({ title: "hi" }),
    401,
    "Cannot add notes: authentication required (the add rule refused a guest)",
  ],
  [
    "someone else's id sent: kept, and the add rule refuses it",
    "alice",
    "POST",
    () => "notes",
    (w) => ({ title: "hi", owner: w.bob.id }),
    403,
    "Cannot add notes: the add rule refused it",
  ],
  [
    "a user of another auth entity: no default, refused",
    "staff",
    "POST",
    () => "notes",
    () => ({ title: "hi" }),
    403,
    "Cannot add notes: the add rule refused it",
  ],
  [
    "an admin: no default (not a user of users), passes every rule",
    "admin",
    "POST",
    () => "notes",
    () => ({ title: "by admin" }),
    201,
    (d) => {
      assert.equal(d.owner, null);
      assert.equal(d.seen, "none");
    },
  ],
  [
    "the helper in the add rule says no",
    "alice",
    "POST",
    () => "notes",
    () => ({ title: "a title far too long" }),
    403,
    "Cannot add notes: the add rule refused it",
  ],
  [
    "the update rule refuses the record after the change",
    "alice",
    "PATCH",
    (w) => `notes/${w.mine}`,
    () => ({ title: "locked" }),
    403,
    "Cannot update notes: the update rule refused it",
  ],
  [
    "an admin-only delete rule, a user",
    "alice",
    "DELETE",
    (w) => `notes/${w.mine}`,
    undefined,
    403,
    "Cannot delete notes: the delete rule refused it",
  ],
  [
    "an admin-only delete rule, a guest",
    "guest",
    "DELETE",
    (w) => `notes/${w.mine}`,
    undefined,
    401,
    "Cannot delete notes: authentication required (the delete rule refused a guest)",
  ],
  [
    "a list rule reading the record: a user sees their own",
    "alice",
    "GET",
    () => "notes",
    undefined,
    200,
    (d, w) => {
      const items = d.items as { owner: string }[];
      assert.ok(items.length >= 2);
      assert.ok(items.every((n) => n.owner === w.alice.id));
    },
  ],
];

forEachDb(
  "a relation defaults to the caller; denials name the rule",
  (t, db) =>
    withScripts(db, { "notes.js": SCRIPT }, async (s) => {
      const w = await setup(s);
      const tokens: Record<Who, string | undefined> = {
        guest: undefined,
        alice: w.tAlice,
        staff: w.tStaff,
        admin: w.admin,
      };
      for (const [label, who, method, path, body, want, check] of ROWS) {
        await t.step(`${label} → ${want}`, async () => {
          const r = await s.request(method, `/api/v1/entities/${path(w)}`, {
            token: tokens[who],
            body: body?.(w),
          });
          status(r, want, label);
          if (typeof check === "string") {
            assert.equal(r.error, check);
            // The rule's text and the values it read stay unsaid.
            assert.ok(!/record\.|auth\.|short\(/.test(r.error), r.error);
          } else check(r.data, w);
        });
      }

      const a = (method: string, path: string, body?: unknown) =>
        s.request(method, `/api/v1/${path}`, { token: w.admin, body });

      // [case, field, error]
      const FIELDS: [string, Record<string, unknown>, RegExp][] = [
        [
          "@auth on a relation to a base entity",
          {
            name: "f",
            type: "relation",
            foreign_key: { entity: "notes" },
            default: "@auth",
          },
          /^Cannot accept field "f"\.default: "@auth" \(the caller\) needs a relation to an auth entity; notes is not one$/,
        ],
        [
          "another default on a relation",
          {
            name: "f",
            type: "relation",
            foreign_key: { entity: "users" },
            default: "someone",
          },
          /^Cannot accept field "f"\.default: a relation takes only "@auth"/,
        ],
      ];
      for (const [label, field, error] of FIELDS) {
        await t.step(`${label} → 400`, async () => {
          const r = await a("POST", "schemas", {
            name: "bad",
            type: "base",
            fields: [field],
          });
          status(r, 400, label);
          assert.match(r.error, error);
        });
      }

      await t.step(
        "a field added with @auth: existing records stay empty",
        async () => {
          const r = await a("PATCH", "schemas/notes", {
            fields: [{
              name: "editor",
              type: "relation",
              foreign_key: { entity: "users" },
              default: "@auth",
            }],
          });
          status(r, 200, "add editor");
          const old = await a("GET", `entities/notes/${w.mine}`);
          assert.equal(old.data.editor, null);
          const made = await s.request("POST", "/api/v1/entities/notes", {
            token: w.tAlice,
            body: { title: "new" },
          });
          status(made, 201, "a new note");
          assert.equal(made.data.editor, w.alice.id);
        },
      );

      await t.step(
        "the rules guide's owner example works as written",
        async () => {
          const readme = await Deno.readTextFile(
            new URL("../docs/guide/rules.md", import.meta.url),
          );
          const after = readme.split("**The owner of a new record.**")[1];
          const block = after.split("```json\n")[1].split("```")[0];
          status(
            await a("POST", "schemas", JSON.parse(block)),
            201,
            "README posts",
          );
          const mine = await s.request("POST", "/api/v1/entities/posts", {
            token: w.tAlice,
            body: { title: "from the README" },
          });
          status(mine, 201, "a user's post");
          assert.equal(mine.data.owner, w.alice.id);
          const guest = await s.request("POST", "/api/v1/entities/posts", {
            body: { title: "anonymous" },
          });
          status(guest, 401, "a guest's post");
        },
      );

      await t.step(
        "rules may call helpers; the names they read are checked",
        async () => {
          const check = (expr: string) =>
            a("POST", "sys/rules/check", { entity: "notes", expr });
          assert.equal((await check("short(record.title)")).data.valid, true);
          const bad = await check("short(record.titl)");
          assert.equal(bad.data.valid, false);
          assert.equal(bad.data.position, 13);
          assert.match(bad.data.detail, /did you mean "record\.title"\?/);
          const p = await a("PATCH", "schemas/notes", {
            rules: { list: custom("short(record.titl)") },
          });
          status(p, 400, "PATCH a helper call on an unknown name");
          assert.match(
            p.error,
            /^Cannot accept rules\.list\.expr: .*record\.titl/,
          );
        },
      );
    }),
);
