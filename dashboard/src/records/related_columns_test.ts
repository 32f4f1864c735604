/**
 * Related and count columns of the records table: column paths → the list
 * request's `expand`, stale saved keys dropped, values read from
 * expansions (through lists too), and the count columns' aggregate
 * queries and counts per id.
 */
import assert from "node:assert/strict";
import type { EntitySchema, FieldDef } from "../../../lib/schema/types.ts";
import {
  backRelations,
  countKey,
  countLabel,
  countQueries,
  countsByIds,
  expandLabels,
  expandParam,
  extraColumn,
  relatedValues,
} from "./related_columns.ts";
import { keptColumns } from "./column_picker.tsx";

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
  entity("users", [f("name"), f("password"), rel("team", "teams")], {
    type: "auth",
  }),
  entity("tags", [f("label")]),
  entity("posts", [
    f("title"),
    rel("author", "users"),
    rel("editor", "users"),
    rel("tags", "tags", { multiple: true }),
    rel("secret", "vault"),
  ]),
  entity("comments", [
    f("text"),
    rel("post", "posts"),
    rel("reply_to", "posts"),
  ]),
  entity("likes", [rel("post", "posts")]),
  entity("vault", [f("code"), rel("post", "posts")], { has_api: false }),
  entity("post_view", [rel("post", "posts")], { type: "view" }),
  entity("weird", [f("expand"), rel("author", "users")]),
];
const posts = ALL.find((s) => s.name === "posts")!;
const weird = ALL.find((s) => s.name === "weird")!;

Deno.test("related columns: paths are read through relations, 6 deep at most", () => {
  const c = extraColumn(ALL, posts, "author.team.name");
  assert.equal(c?.kind, "related");
  assert.ok(c?.kind === "related");
  assert.deepEqual(c.relations, ["author", "team"]);
  assert.equal(c.entity, "teams");
  assert.equal(c.field.name, "name");
  // Six relations and a field is the deepest path.
  const six = "author.team.org.parent.parent.parent.name";
  assert.ok(extraColumn(ALL, posts, six));
  assert.equal(
    extraColumn(ALL, posts, "author.team.org.parent.parent.parent.parent.name"),
    null,
  );
  for (
    const bad of [
      "author", // an own field, not a path
      "author.password", // never the password
      "author.nope",
      "title.length", // no relation
      "secret.code", // an entity without API
      "nobody_via_post:count",
      "vault_via_post:count", // no API: no count either
      "post_view_via_post:count", // views have no back-relations
      "",
    ]
  ) assert.equal(extraColumn(ALL, posts, bad), null, bad);
  // An entity with a field named "expand" cannot hold expansions.
  assert.equal(extraColumn(ALL, weird, "author.name"), null);
});

Deno.test("related columns: the list's expand covers the columns, once", () => {
  assert.equal(expandParam(ALL, posts, ["title"]), "");
  // An own relation column is expanded for its labels.
  assert.equal(expandParam(ALL, posts, ["title", "author"]), "author");
  assert.equal(
    expandParam(ALL, posts, [
      "author",
      "author.name",
      "author.team.name",
      "editor.name",
      "tags.label",
      "tags",
      "comments_via_post:count",
      "gone.name",
    ]),
    "author.team,editor,tags",
  );
  assert.equal(expandParam(ALL, weird, ["author", "author.name"]), "");
});

Deno.test("related columns: values come from expansions, through lists too", () => {
  const row = {
    id: "p1",
    author: "u1",
    tags: ["t1", "t2", "t3"],
    expand: {
      author: {
        id: "u1",
        name: "Ada",
        expand: { team: { id: "m1", name: "Core" } },
      },
      // t3 is hidden from the caller: absent
      tags: [{ id: "t1", label: "go" }, { id: "t2", label: "" }],
    },
  };
  const col = (k: string) => {
    const c = extraColumn(ALL, posts, k);
    assert.ok(c?.kind === "related");
    return c;
  };
  assert.deepEqual(relatedValues(row, col("author.name")), ["Ada"]);
  assert.deepEqual(relatedValues(row, col("author.team.name")), ["Core"]);
  assert.deepEqual(relatedValues(row, col("tags.label")), ["go"]);
  assert.deepEqual(relatedValues(row, col("editor.name")), []);
  assert.deepEqual(relatedValues({ id: "p2" }, col("author.team.name")), []);
  assert.deepEqual(
    [...expandLabels(row, "tags", "label")],
    [["t1", "go"]],
  );
  assert.deepEqual([...expandLabels(row, "author", "name")], [["u1", "Ada"]]);
  assert.deepEqual([...expandLabels(row, "author", "id")], []);
});

Deno.test("related columns: back-relations and their count columns", () => {
  const backs = backRelations(ALL, "posts");
  assert.deepEqual(backs.map((b) => b.name), [
    "comments_via_post",
    "comments_via_reply_to",
    "likes_via_post",
  ]);
  assert.deepEqual(
    backs.map((b) => countLabel(b, backs)),
    [
      "comments by post (count)",
      "comments by reply_to (count)",
      "likes (count)",
    ],
  );
  assert.equal(countKey(backs[2]), "likes_via_post:count");
  assert.ok(extraColumn(ALL, posts, "likes_via_post:count"));
  // Through a multiple relation.
  const tagged = backRelations(ALL, "tags");
  assert.deepEqual(tagged, [{
    name: "posts_via_tags",
    entity: "posts",
    field: "tags",
    multiple: true,
  }]);
});

Deno.test("related columns: one aggregate per page, counts per id", () => {
  const [comments] = backRelations(ALL, "posts");
  const ids = Array.from({ length: 25 }, (_, i) => `0199-${i}`);
  const queries = countQueries(comments, ids);
  assert.equal(queries.length, 1);
  assert.deepEqual(queries[0].group, "post");
  assert.equal(queries[0].count, true);
  assert.equal(
    String(queries[0].filter).split(" || ")[0],
    'post == "0199-0"',
  );
  assert.equal(countQueries(comments, []).length, 0);
  // Long pages are split to keep each filter under the language's 4096.
  const uuids = Array.from(
    { length: 200 },
    (_, i) => `01a22459-0000-7000-8000-${String(i).padStart(12, "0")}`,
  );
  const split = countQueries(comments, uuids);
  assert.ok(split.length > 1 && split.length <= 3, `${split.length}`);
  for (const q of split) assert.ok(String(q.filter).length < 4096);
  assert.equal(
    split.map((q) => String(q.filter).split(" || ").length).reduce((a, b) =>
      a + b
    ),
    200,
  );
  const counts = countsByIds(comments, ["a", "b", "c"], [
    { key: { post: "a" }, count: 3 },
    { key: { post: "c" }, count: 1 },
    { key: { post: "zz" }, count: 9 },
  ]);
  assert.deepEqual([...counts], [["a", 3], ["b", 0], ["c", 1]]);
  // Through a list: grouped by whole lists, a group counts for each id it holds.
  const [tagged] = backRelations(ALL, "tags");
  assert.equal(
    countQueries(tagged, ["t1", "t2"])[0].filter,
    'tags.includes("t1") || tags.includes("t2")',
  );
  assert.deepEqual(
    [
      ...countsByIds(tagged, ["t1", "t2", "t3"], [
        { key: { tags: ["t1", "t2"] }, count: 2 },
        { key: { tags: ["t2"] }, count: 1 },
        { key: { tags: ["t9", "t1"] }, count: 4 },
      ]),
    ],
    [["t1", 6], ["t2", 3], ["t3", 0]],
  );
});

Deno.test("columns: a saved choice keeps what still exists, in its order", () => {
  assert.deepEqual(
    keptColumns(ALL, posts, [
      "likes_via_post:count",
      "author.name",
      "title",
      "gone",
      "author.gone",
      "author.name",
      7,
    ]),
    ["title", "likes_via_post:count", "author.name"],
  );
  assert.equal(keptColumns(ALL, posts, ["gone"]), null);
  assert.equal(keptColumns(ALL, posts, "title"), null);
});
