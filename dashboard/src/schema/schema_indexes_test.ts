/**
 * The entity form's indexes, pure parts: saved schema → form, the POST and
 * PATCH bodies (the whole list only when it changed; a rename alone sends
 * none), the JSON view, and API errors placed at the index.
 */
import assert from "node:assert/strict";
import type { EntitySchema } from "../../../lib/schema/types.ts";
import { patchBody, schemaBody } from "./schema_diff.ts";
import { formState, newForm, newIndex } from "./schema_form.ts";
import { fieldErrorKeys, formFromJson, formJson } from "./schema_json.ts";
import { indexableFields } from "./schema_indexes.ts";

const rules = { mode: "" as const, expr: "" };
const saved: EntitySchema = {
  id: "e1",
  name: "items",
  type: "base",
  has_api: true,
  is_system: false,
  view_query: "",
  created: "",
  updated: "",
  rules: { list: rules, get: rules, add: rules, update: rules, delete: rules },
  fields: [
    {
      id: "id",
      name: "id",
      type: "string",
      required: true,
      unique: true,
      system: true,
    },
    { id: "f1", name: "tag", type: "string", required: false, unique: false },
    { id: "f2", name: "n", type: "int", required: false, unique: false },
    { id: "f3", name: "meta", type: "json", required: false, unique: false },
  ],
  indexes: [{ id: "i1", fields: ["tag", "n"], unique: true }],
};

Deno.test("schema_indexes: saved → form → unchanged PATCH", () => {
  const form = formState(saved);
  assert.deepEqual(form.indexes, [{
    key: "i1",
    fields: ["f1", "f2"],
    unique: true,
  }]);
  assert.equal(patchBody(saved, form).empty, true);
});

Deno.test("schema_indexes: a rename alone sends no indexes", () => {
  const form = formState(saved);
  form.fields[0].name = "label";
  const p = patchBody(saved, form);
  assert.deepEqual(p.body, { fields: [{ id: "f1", name: "label" }] });
});

Deno.test("schema_indexes: a changed list is sent whole, with today's names", () => {
  const form = formState(saved);
  form.fields[0].name = "label";
  form.indexes.push({ ...newIndex(), fields: ["f2", "created"] });
  form.indexes[0].unique = false;
  const p = patchBody(saved, form);
  assert.deepEqual(p.body.indexes, [
    { fields: ["label", "n"], unique: false },
    { fields: ["n", "created"], unique: false },
  ]);
  assert.deepEqual(p.errors, {});
});

Deno.test("schema_indexes: a removed field an index uses is marked", () => {
  const form = formState(saved);
  form.fields = form.fields.filter((f) => f.name !== "n");
  const p = patchBody(saved, form);
  assert.match(p.errors["i1.fields"], /being removed/);
  form.indexes = [];
  const q = patchBody(saved, form);
  assert.deepEqual(q.errors, {});
  assert.deepEqual(q.body.indexes, []);
});

Deno.test("schema_indexes: an empty index is refused before sending", () => {
  const form = newForm();
  form.name = "x";
  const idx = newIndex();
  form.indexes = [idx];
  assert.equal(
    schemaBody(form).errors[`${idx.key}.fields`],
    "Pick at least one field",
  );
});

Deno.test("schema_indexes: POST body only lists indexes when there are some", () => {
  const form = newForm();
  form.name = "x";
  assert.equal("indexes" in schemaBody(form).body, false);
  form.indexes = [{ ...newIndex(), fields: ["created"], unique: false }];
  assert.deepEqual(schemaBody(form).body.indexes, [
    { fields: ["created"], unique: false },
  ]);
});

Deno.test("schema_indexes: the fields an index may use", () => {
  const names = indexableFields(formState(saved)).map((c) => c.name);
  assert.deepEqual(names, [
    "id",
    "created",
    "updated",
    "tag",
    "n",
    "fold(tag)",
  ]);
  const auth = indexableFields({ ...newForm(), type: "auth" });
  assert.ok(auth.some((c) => c.name === "email"));
  assert.ok(!auth.some((c) => c.name === "password"));
});

Deno.test("schema_indexes: the JSON view carries them both ways", () => {
  const form = formState(saved);
  const text = formJson(form);
  assert.deepEqual(JSON.parse(text).indexes, [{
    fields: ["tag", "n"],
    unique: true,
  }]);
  const back = formFromJson(text, saved);
  assert.ok(back.ok);
  assert.deepEqual(back.form.indexes.map((i) => [i.fields, i.unique]), [[[
    "f1",
    "f2",
  ], true]]);
  const bad = (indexes: unknown) => {
    const r = formFromJson(
      JSON.stringify({ ...JSON.parse(text), indexes }),
      saved,
    );
    return r.ok ? "" : r.message;
  };
  // fold(<field>) entries keep the fold around the field's ref, both ways.
  const folded = formFromJson(
    JSON.stringify({
      ...JSON.parse(text),
      indexes: [{ fields: ["fold(tag)"] }],
    }),
    saved,
  );
  assert.ok(folded.ok);
  assert.deepEqual(folded.form.indexes[0].fields, ["fold(f1)"]);
  assert.deepEqual(JSON.parse(formJson(folded.form)).indexes, [{
    fields: ["fold(tag)"],
    unique: false,
  }]);
  assert.match(bad("x"), /"indexes" must be a list/);
  assert.match(
    bad([{ fields: ["nope"] }]),
    /indexes\[0\]\.fields: no field "nope"/,
  );
  assert.match(bad([{ fields: [] }]), /indexes\[0\]\.fields must be a list/);
  assert.match(
    bad([{ fields: ["n"], unique: "y" }]),
    /unique must be true or false/,
  );
  assert.match(bad([{ fields: ["n"], name: "x" }]), /unknown key "name"/);
});

Deno.test("schema_indexes: API errors land at the index", () => {
  const form = formState(saved);
  const out = fieldErrorKeys({
    "indexes[0].fields": { message: "no field" },
    "indexes": { message: "in use" },
    "indexes[5].fields": { message: "lost" },
  }, form);
  assert.deepEqual(out, { "i1.fields": "no field", indexes: "in use" });
});
