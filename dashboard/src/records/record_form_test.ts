/**
 * The record form's model for a relation whose default is the caller
 * (`"default": "@auth"`): a new record's form leaves it empty and sends
 * nothing for it (the server fills it with the creating user); the text
 * `@auth` is never sent as a record id.
 */
import assert from "node:assert/strict";
import type { EntitySchema, FieldDef } from "../../../lib/schema/types.ts";
import { buildWrite, formOf, isCallerDefault } from "./record_form.ts";

const field = (f: Partial<FieldDef> & Pick<FieldDef, "name" | "type">) => ({
  id: f.name,
  required: false,
  unique: false,
  ...f,
});

const open = { mode: "public" as const, expr: "" };
const notes: EntitySchema = {
  id: "e1",
  name: "notes",
  type: "base",
  fields: [
    field({ name: "id", type: "string", system: true }),
    field({ name: "title", type: "string", default: "untitled" }),
    field({
      name: "owner",
      type: "relation",
      default: "@auth",
      foreign_key: { entity: "users", on_delete: "cascade" },
    }),
    // Not a relation: "@auth" is plain text there.
    field({ name: "tag", type: "string", default: "@auth" }),
  ],
  view_query: "",
  rules: { list: open, get: open, add: open, update: open, delete: open },
  has_api: true,
  is_system: false,
  created: "",
  updated: "",
};

const NO_PASSWORD = { value: "", confirm: "" };

Deno.test("record form: a caller default is left empty and not sent", () => {
  const [, title, owner, tag] = notes.fields;
  assert.equal(isCallerDefault(owner), true);
  assert.equal(isCallerDefault(tag), false);
  assert.equal(isCallerDefault(title), false);
  const form = formOf(notes, null);
  assert.deepEqual(form, { title: "untitled", owner: "", tag: "@auth" });
  const w = buildWrite(notes, form, null, NO_PASSWORD);
  assert.ok(w.ok);
  assert.deepEqual(w.body, { title: "untitled", tag: "@auth" });
  // A picked owner is sent; an existing record shows its own owner.
  const picked = buildWrite(notes, { ...form, owner: "u2" }, null, NO_PASSWORD);
  assert.ok(picked.ok);
  assert.equal((picked.body as Record<string, unknown>).owner, "u2");
  assert.equal(formOf(notes, { id: "n1", owner: "u1" }).owner, "u1");
});

const reading: EntitySchema = {
  ...notes,
  name: "reading",
  fields: [
    field({ name: "id", type: "string", system: true }),
    field({ name: "title", type: "string" }),
    field({
      name: "books",
      type: "relation",
      multiple: true,
      max: 3,
      foreign_key: { entity: "books", on_delete: "set null" },
    }),
  ],
};

Deno.test("record form: a multiple relation is a list of ids, sent whole when changed", () => {
  const books = reading.fields[2];
  const empty = formOf(reading, null);
  assert.deepEqual(empty.books, []);
  // A new record's empty list is not sent (the server stores []).
  const none = buildWrite(reading, { ...empty, title: "t" }, null, NO_PASSWORD);
  assert.ok(none.ok);
  assert.deepEqual(none.body, { title: "t" });
  const picked = buildWrite(
    reading,
    { ...empty, books: ["b2", "b1"] },
    null,
    NO_PASSWORD,
  );
  assert.ok(picked.ok);
  assert.deepEqual(picked.body, { books: ["b2", "b1"] });
  // A stored list keeps its order; only a change is sent, in its new order.
  const initial = formOf(reading, {
    id: "r1",
    title: "x",
    books: ["b1", "b2"],
  });
  assert.deepEqual(initial.books, ["b1", "b2"]);
  const same = buildWrite(reading, { ...initial }, initial, NO_PASSWORD);
  assert.ok(same.ok && same.empty);
  const removed = buildWrite(
    reading,
    { ...initial, books: ["b2"] },
    initial,
    NO_PASSWORD,
  );
  assert.ok(removed.ok);
  assert.deepEqual(removed.body, { books: ["b2"] });
  const cleared = buildWrite(
    reading,
    { ...initial, books: [] },
    initial,
    NO_PASSWORD,
  );
  assert.ok(cleared.ok);
  assert.deepEqual(cleared.body, { books: [] });
  // A stored null reads as an empty list.
  assert.deepEqual(formOf(reading, { id: "r2", books: null }).books, []);
  assert.equal(books.multiple, true);
});
