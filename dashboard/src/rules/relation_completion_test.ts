/**
 * Completions that follow relations, from the schemas: a relation's target
 * fields after `record.author.` (to 6 relations), `auth.user.<relation>.`,
 * back-relations as lists with `.length`, `.some(v => v.`, `.every(v => v.`,
 * a lambda variable's fields, bare names in filters, and what
 * `complete()` then offers for the word typed.
 */
import assert from "node:assert/strict";
import type { EntitySchema, FieldDef } from "../../../lib/schema/types.ts";
import { relationNames } from "./relation_completion.ts";
import { complete } from "./rule_vocabulary.ts";

const open = { mode: "public" as const, expr: "" };
const f = (
  name: string,
  type: FieldDef["type"] = "string",
  more: Partial<FieldDef> = {},
): FieldDef => ({
  id: name,
  name,
  type,
  required: false,
  unique: false,
  ...more,
});
const rel = (name: string, entity: string, more: Partial<FieldDef> = {}) =>
  f(name, "relation", {
    foreign_key: { entity, on_delete: "set null" },
    ...more,
  });
const entity = (
  name: string,
  fields: FieldDef[],
  more: Partial<EntitySchema> = {},
): EntitySchema => ({
  id: name,
  name,
  type: "base",
  fields: [f("id", "string", { system: true }), ...fields],
  view_query: "",
  rules: { list: open, get: open, add: open, update: open, delete: open },
  has_api: true,
  is_system: false,
  created: "",
  updated: "",
  ...more,
});

const ALL: EntitySchema[] = [
  entity("orgs", [f("name"), rel("parent", "orgs")]),
  entity("teams", [f("name"), rel("org", "orgs")]),
  entity("users", [f("email", "email"), f("password"), rel("team", "teams")], {
    type: "auth",
  }),
  entity("members", [f("email", "email"), rel("team", "teams")], {
    type: "auth",
  }),
  entity("tags", [f("label")]),
  entity("posts", [
    f("title"),
    rel("author", "users"),
    rel("tags", "tags", { multiple: true }),
  ]),
  entity("comments", [f("text"), rel("post", "posts"), rel("by", "users")]),
  entity("hidden", [rel("post", "posts")], { has_api: false }),
  entity("mb_admins", [f("email", "email")], { type: "auth", is_system: true }),
];

/** What the input would offer after typing `text` (caret at the end). */
const offered = (
  text: string,
  kind: "rule" | "filter" = "rule",
  on = "posts",
) =>
  complete(
    relationNames(ALL, on, kind, text, text.length),
    [".length", ".includes(", ".startsWith(", ".endsWith("],
    /[A-Za-z_$][\w$]*(?:\.[\w$]*)*$/.exec(text)?.[0] ?? "",
    100,
  );

Deno.test("relation completion: record.author. offers the author's fields", () => {
  assert.deepEqual(offered("record.author."), [
    "record.author.id",
    "record.author.email",
    "record.author.team",
    "record.author.team.",
    "record.author.comments_via_by.length",
    "record.author.comments_via_by.some(c => c.",
    "record.author.comments_via_by.every(c => c.",
    "record.author.posts_via_author.length",
    "record.author.posts_via_author.some(p => p.",
    "record.author.posts_via_author.every(p => p.",
  ]);
  // Typing narrows; never the password.
  assert.deepEqual(offered("record.author.te"), [
    "record.author.team",
    "record.author.team.",
  ]);
  assert.deepEqual(offered("record.author.pa"), []);
  // Deeper: to six relations, and no further.
  assert.deepEqual(offered("x == record.author.team.org.n"), [
    "record.author.team.org.name",
  ]);
  const six = "record.author.team.org.parent.parent.parent.";
  assert.ok(offered(six).includes(six + "name"));
  assert.ok(!offered(six).includes(six + "parent."));
  // A seventh relation is not followed: the id's methods only.
  assert.ok(!offered(six + "parent.").some((o) => o.endsWith(".name")));
  // A field's methods after its name and a dot.
  assert.deepEqual(offered("record.author.email.st"), [
    "record.author.email.startsWith(",
  ]);
});

Deno.test("relation completion: back-relations are lists, multiple relations are not followed", () => {
  assert.deepEqual(offered("record.co"), [
    "record.comments_via_post.length",
    "record.comments_via_post.some(c => c.",
    "record.comments_via_post.every(c => c.",
  ]);
  // An entity without API has no back-relation to offer.
  assert.deepEqual(offered("record.hid"), []);
  // A list of ids: its methods (from the vocabulary), no fields.
  assert.deepEqual(offered("record.tags.").slice(0, 2), [
    "record.tags.length",
    "record.tags.includes(",
  ]);
  assert.ok(!offered("record.tags.").includes("record.tags.label"));
  assert.ok(offered("record.ta").includes("record.tags"));
  assert.ok(!offered("record.ta").includes("record.tags."));
});

Deno.test("relation completion: a lambda variable has its list's fields", () => {
  assert.deepEqual(
    offered("record.comments_via_post.some(c => c."),
    [
      "c.id",
      "c.text",
      "c.post",
      "c.post.",
      "c.by",
      "c.by.",
    ],
  );
  assert.deepEqual(
    offered('record.comments_via_post.every(c => c.text != "" && c.by.t'),
    ["c.by.team", "c.by.team."],
  );
  // Out of the call, the variable means nothing.
  assert.deepEqual(
    offered("record.comments_via_post.some(c => true) && c."),
    [],
  );
  // Parentheses inside strings do not close it.
  assert.deepEqual(
    offered('record.comments_via_post.some(c => c.text == ")" && c.b'),
    ["c.by", "c.by."],
  );
});

Deno.test("relation completion: auth.user follows any auth entity's relation", () => {
  assert.deepEqual(offered("auth.user.team."), [
    "auth.user.team.id",
    "auth.user.team.name",
    "auth.user.team.org",
    "auth.user.team.org.",
  ]);
  assert.deepEqual(offered("auth.user.t"), [
    "auth.user.team",
    "auth.user.team.",
  ]);
  assert.deepEqual(offered("auth.id."), []);
});

Deno.test("relation completion: filters take bare names", () => {
  assert.deepEqual(offered("author.t", "filter"), [
    "author.team",
    "author.team.",
  ]);
  assert.deepEqual(offered("comments_via_post.l", "filter"), [
    "comments_via_post.length",
  ]);
  assert.deepEqual(offered("record.author.", "filter"), []);
  assert.deepEqual(offered("auth.user.team.n", "filter"), [
    "auth.user.team.name",
  ]);
  // On another entity, from its own fields.
  assert.deepEqual(offered("record.post.author.t", "rule", "comments"), [
    "record.post.author.team",
    "record.post.author.team.",
  ]);
  assert.deepEqual(relationNames(ALL, "nope", "rule", "record.a", 8), []);
});
