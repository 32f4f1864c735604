/**
 * The import's diff in words: each detail as `from → to` lines (a field's
 * options one by one, rules as who they let through), the one-line
 * summary, and the question before applying.
 */
import assert from "node:assert/strict";
import {
  changeCounts,
  type ChangeDetail,
  confirmText,
  detailView,
  type EntityChange,
  formatValue,
  summaryText,
} from "./transfer_diff.ts";

Deno.test("transfer_diff: each detail as lines", async (t) => {
  const cases: [
    string,
    ChangeDetail,
    { label: string; from?: string; to?: string }[],
  ][] = [
    [
      "a field's changed options, one line each",
      {
        key: "fields.title",
        action: "update",
        from: { required: false, max: 80 },
        to: { required: true, max: 120 },
      },
      [
        { label: "required", from: "false", to: "true" },
        { label: "max", from: "80", to: "120" },
      ],
    ],
    [
      "a renamed field: its name from → to",
      {
        key: "fields.headline",
        action: "update",
        from: { name: "title" },
        to: { name: "headline" },
      },
      [{ label: "name", from: '"title"', to: '"headline"' }],
    ],
    [
      "an option only one side has: none on the other",
      {
        key: "fields.status",
        action: "update",
        from: { values: ["a"] },
        to: { values: ["a", "b"], default: "a" },
      },
      [
        { label: "values", from: '["a"]', to: '["a","b"]' },
        { label: "default", from: "none", to: '"a"' },
      ],
    ],
    [
      "a rule: who it lets through",
      {
        key: "rules.list",
        action: "update",
        from: { mode: "", expr: "" },
        to: { mode: "custom", expr: "record.owner == auth.id" },
      },
      [{
        label: "",
        from: "admins only",
        to: "custom: record.owner == auth.id",
      }],
    ],
    [
      "public and auth rules",
      {
        key: "rules.get",
        action: "update",
        from: { mode: "auth", expr: "" },
        to: { mode: "public", expr: "" },
      },
      [{ label: "", from: "signed-in users", to: "anyone" }],
    ],
    [
      "a plain value",
      { key: "has_api", action: "update", from: true, to: false },
      [{ label: "", from: "true", to: "false" }],
    ],
    [
      "an entity's name (quoted: an empty string shows)",
      { key: "name", action: "update", from: "post", to: "posts" },
      [{ label: "", from: '"post"', to: '"posts"' }],
    ],
    [
      "a created field: its options without the name its key holds",
      {
        key: "fields.body",
        action: "create",
        to: { name: "body", type: "text", required: true },
      },
      [{ label: "", to: 'type: "text", required: true' }],
    ],
    [
      "a deleted field: what it was",
      {
        key: "fields.old",
        action: "delete",
        from: { name: "old", type: "int" },
      },
      [{ label: "", from: 'type: "int"' }],
    ],
    [
      "a view's query",
      { key: "view_query", action: "create", to: "SELECT id FROM posts" },
      [{ label: "", to: '"SELECT id FROM posts"' }],
    ],
    [
      "indexes: whole lists",
      {
        key: "indexes",
        action: "update",
        from: [],
        to: [{ fields: ["title"], unique: true }],
      },
      [{ label: "", from: "[]", to: '[{"fields":["title"],"unique":true}]' }],
    ],
    [
      "objects equal on every key: shown whole",
      {
        key: "auth.oauth2",
        action: "update",
        from: { a: 1 },
        to: { a: 1 },
      },
      [{ label: "", from: "a: 1", to: "a: 1" }],
    ],
    [
      "a null auth option: none",
      { key: "auth.otp", action: "update", from: null, to: { length: 6 } },
      [{ label: "", from: "none", to: "length: 6" }],
    ],
  ];
  for (const [name, detail, lines] of cases) {
    await t.step(name, () => {
      const v = detailView(detail);
      assert.equal(v.key, detail.key);
      assert.equal(v.action, detail.action);
      assert.deepEqual(v.lines, lines);
    });
  }
});

Deno.test("transfer_diff: values as text", () => {
  assert.equal(formatValue(undefined), "none");
  assert.equal(formatValue(null), "none");
  assert.equal(formatValue(""), '""');
  assert.equal(formatValue({}), "{}");
  assert.equal(
    formatValue({ entity: "users", on_delete: "cascade" }),
    'entity: "users", on_delete: "cascade"',
  );
});

const CHANGES: EntityChange[] = [
  {
    entity: "tags",
    action: "create",
    details: [{ key: "fields.label", action: "create", to: { name: "label" } }],
  },
  {
    entity: "posts",
    action: "update",
    details: [{
      key: "fields.old",
      action: "delete",
      from: { name: "old", type: "int" },
    }],
  },
  { entity: "drafts", action: "delete", details: [] },
  { entity: "notes", action: "delete", details: [] },
];

Deno.test("transfer_diff: the summary counts entities by action", () => {
  assert.deepEqual(changeCounts(CHANGES), { create: 1, update: 1, delete: 2 });
  assert.equal(
    summaryText(CHANGES),
    "4 entities change: 1 created, 1 changed, 2 deleted.",
  );
  assert.equal(
    summaryText([CHANGES[0]]),
    "1 entity changes: 1 created.",
  );
  assert.equal(
    summaryText(CHANGES, true),
    "4 entities changed: 1 created, 1 changed, 2 deleted.",
  );
  assert.equal(
    summaryText([]),
    "Nothing to change: this server's schemas already match.",
  );
});

Deno.test("transfer_diff: the confirmation names the count, all or nothing, and what is lost", () => {
  assert.equal(
    confirmText(CHANGES),
    "Apply the changes to 4 entities? They are applied all or nothing: if " +
      "the server refuses one, none is applied. Deleted with all their " +
      "records: drafts, notes. Deleted fields lose their data.",
  );
  assert.equal(
    confirmText([CHANGES[0]]),
    "Apply the changes to 1 entity? They are applied all or nothing: if " +
      "the server refuses one, none is applied.",
  );
});
