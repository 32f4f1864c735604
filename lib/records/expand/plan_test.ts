import assert from "node:assert/strict";
import type { FieldDef, Rules } from "../../schema/types.ts";
import { adminOnlyRules } from "../../schema/types.ts";
import { parseExpand } from "./paths.ts";
import { type PlanEntity, planExpand, type PlanScope } from "./plan.ts";

const open: Rules = {
  list: { mode: "public", expr: "" },
  get: { mode: "public", expr: "" },
  add: { mode: "", expr: "" },
  update: { mode: "", expr: "" },
  delete: { mode: "", expr: "" },
};

function rel(name: string, entity: string): FieldDef {
  return {
    id: name,
    name,
    type: "relation",
    required: false,
    unique: false,
    foreign_key: { entity, on_delete: "set null" },
  };
}

function str(name: string): FieldDef {
  return { id: name, name, type: "string", required: false, unique: false };
}

function entity(
  name: string,
  fields: FieldDef[],
  more: Partial<PlanEntity> = {},
): PlanEntity {
  return {
    name,
    type: "base",
    isSystem: false,
    hasApi: true,
    rules: open,
    field: (n) => fields.find((f) => f.name === n),
    ...more,
  };
}

const users = entity("users", [str("name")]);
const posts = entity("posts", [str("title"), rel("author", "Users")]);
// An entity whose name holds `_via_`: the split is found by trying each.
const odd = entity("a_via_b", [rel("post", "posts")]);
const secret = entity("secret", [rel("owner", "users")], {
  rules: adminOnlyRules(),
});
const hidden = entity("hidden", [rel("post", "posts")], { hasApi: false });
const all = [users, posts, odd, secret, hidden];

function scope(canUse = true): PlanScope {
  return {
    lookup: (n) => all.find((e) => e.name.toLowerCase() === n.toLowerCase()),
    canUse: (e) => canUse || e.rules.get.mode === "public",
    action: "list records",
  };
}

const plan = (root: PlanEntity, expand: string, s = scope()) =>
  planExpand(s, root, parseExpand(expand, "list records"));

Deno.test("plan: forward and back-relations, nested and cyclic", () => {
  const p = plan(posts, "author.posts_via_author.author");
  assert.equal(p[0].kind, "forward");
  assert.equal(p[0].entity, "users");
  assert.equal(p[0].children[0].kind, "back");
  assert.deepEqual(
    [p[0].children[0].entity, p[0].children[0].field],
    ["posts", "author"],
  );
  assert.equal(
    p[0].children[0].children[0].path,
    "author.posts_via_author.author",
  );
  const q = plan(posts, "a_via_b_via_post");
  assert.deepEqual([q[0].entity, q[0].field, q[0].served], [
    "a_via_b",
    "post",
    true,
  ]);
});

Deno.test("plan: unknown paths are 400s naming them", () => {
  for (
    const [root, expand, path] of [
      [posts, "title", "title"],
      [posts, "author.nope", "author.nope"],
      [posts, "hidden_via_post", "hidden_via_post"],
      [users, "posts_via_title", "posts_via_title"],
      [users, "nobody_via_author", "nobody_via_author"],
    ] as const
  ) {
    assert.throws(() => plan(root, expand), (err: Error) => {
      assert.ok(err.message.includes(JSON.stringify(path)), err.message);
      return true;
    });
  }
});

Deno.test("plan: into an entity the caller cannot use, nothing below is checked", () => {
  // The caller may not use `secret`: any field name reads as absent, not 400.
  const p = plan(users, "secret_via_anything.more", scope(false));
  assert.equal(p[0].served, false);
  assert.equal(p[0].children[0].served, false);
  // An admin may: the field is checked.
  assert.throws(() => plan(users, "secret_via_anything"));
  assert.equal(plan(users, "secret_via_owner")[0].served, true);
});

Deno.test("plan: a field named expand cannot hold expansions", () => {
  const e = entity("e", [str("expand"), rel("author", "users")]);
  assert.throws(() => plan(e, "author"), /field named expand/);
  assert.deepEqual(plan(e, ""), []);
});
