/**
 * The entity form's pure parts: schema ↔ form state ↔ JSON, and the PATCH
 * the form computes (only the changed parts).
 */
import assert from "node:assert/strict";
import type { EntitySchema, FieldDef } from "../../../lib/schema/types.ts";
import { fieldBody, patchBody, schemaBody } from "./schema_diff.ts";
import { formState, newField, newForm, optionsOf } from "./schema_form.ts";
import {
  errorKey,
  fieldErrorKeys,
  formFromJson,
  formJson,
} from "./schema_json.ts";
import { jsonErrorOffset, parseJson } from "./json_error.ts";

const sys = (name: string): FieldDef => ({
  id: name,
  name,
  type: "string",
  required: true,
  unique: false,
  system: true,
});

const saved: EntitySchema = {
  id: "e1",
  name: "posts",
  type: "base",
  has_api: true,
  is_system: false,
  view_query: "",
  created: "2024-01-01T00:00:00.000Z",
  updated: "2024-01-01T00:00:00.000Z",
  rules: {
    list: { mode: "", expr: "" },
    get: { mode: "", expr: "" },
    add: { mode: "", expr: "" },
    update: { mode: "", expr: "" },
    delete: { mode: "", expr: "" },
  },
  fields: [
    sys("id"),
    {
      id: "f1",
      name: "title",
      type: "string",
      required: true,
      unique: true,
      min: 1,
      max: 80,
      pattern: "^[A-Z]",
      default: "Hello",
    },
    {
      id: "f2",
      name: "score",
      type: "int",
      required: false,
      unique: false,
      index: true,
      min: 0,
      default: 3,
    },
    {
      id: "f3",
      name: "meta",
      type: "json",
      required: false,
      unique: false,
      default: { a: [1, "x"] },
    },
    {
      id: "f4",
      name: "kind",
      type: "select",
      required: false,
      unique: false,
      values: ["a", "b"],
      default: "a",
    },
    {
      id: "f5",
      name: "owner",
      type: "relation",
      required: false,
      unique: false,
      foreign_key: { entity: "users", on_delete: "cascade" },
    },
    {
      id: "f6",
      name: "pics",
      type: "files",
      required: false,
      unique: false,
      min: 1,
      max: 3,
      mime_types: ["image/png"],
      thumbs: ["100x100", "640x0"],
    },
    {
      id: "f7",
      name: "on",
      type: "bool",
      required: false,
      unique: false,
      default: false,
    },
    {
      id: "f8",
      name: "at",
      type: "date",
      required: false,
      unique: false,
      default: "2024-05-06T07:08:09.000Z",
    },
  ],
};

Deno.test("schema_diff: a saved schema's JSON is the schema itself and round-trips", () => {
  const text = formJson(formState(saved));
  const v = JSON.parse(text);
  assert.deepEqual(v.fields, saved.fields.filter((f) => !f.system));
  assert.equal(JSON.stringify(v.fields), JSON.stringify(saved.fields.slice(1)));
  assert.deepEqual(Object.keys(v), ["name", "type", "has_api", "fields"]);
  const back = formFromJson(text, saved);
  assert.ok(back.ok);
  assert.equal(formJson(back.form), text);
  assert.ok(patchBody(saved, back.form).empty);
});

Deno.test("schema_diff: unchanged form → empty PATCH; changes → only those parts", () => {
  const form = formState(saved);
  assert.deepEqual(patchBody(saved, form), {
    body: {},
    errors: {},
    dropped: [],
    empty: true,
  });
  form.name = "articles";
  form.fields[0].name = "headline"; // rename keeps data: id + new name
  form.fields[0].pattern = ""; // cleared option → null
  form.fields[1].index = false;
  form.fields[5].mime_types = [];
  form.fields[5].thumbs = ["100x100"];
  form.fields[4].on_delete = "restrict";
  form.fields.splice(2, 1); // drop "meta"
  const added = { ...newField("email"), name: "contact", required: true };
  form.fields.push(added);
  const p = patchBody(saved, form);
  assert.deepEqual(p.errors, {});
  assert.deepEqual(p.dropped, ["meta"]);
  assert.deepEqual(p.body, {
    name: "articles",
    fields: [
      { id: "f3", op: "delete" },
      { id: "f1", name: "headline", pattern: null },
      { id: "f2", index: false },
      { id: "f5", foreign_key: { entity: "users", on_delete: "restrict" } },
      { id: "f6", mime_types: null, thumbs: ["100x100"] },
      { name: "contact", type: "email", required: true, unique: false },
    ],
  });
});

Deno.test("schema_diff: POST body per type, options that do not apply left out", () => {
  const form = newForm();
  form.name = "things";
  const f = { ...newField("string"), name: "a", pattern: "x", min: "2" };
  f.type = "int"; // pattern no longer applies
  const g = { ...newField("json"), name: "j", default: "{bad" };
  const h = { ...newField("bool"), name: "b", unique: true, default: "true" };
  form.fields = [f, g, h];
  const { body, errors } = schemaBody(form);
  assert.deepEqual((body.fields as unknown[])[0], {
    name: "a",
    type: "int",
    required: false,
    unique: false,
    min: 2,
  });
  assert.deepEqual((body.fields as unknown[])[2], {
    name: "b",
    type: "bool",
    required: false,
    unique: false,
    default: true,
  });
  assert.match(errors[`${g.key}.default`], /Invalid JSON at line 1, column 2/);
  assert.deepEqual(
    fieldBody({ ...newField("int"), name: "n", min: "1.5" }).errors,
    {
      min: "Must be a whole number",
    },
  );
  assert.equal(optionsOf("files").range, "count");
  assert.equal(optionsOf("relation").index, false);
  assert.equal(optionsOf("relation").default, false);
  const view = {
    ...newForm(),
    name: "v",
    type: "view" as const,
    view_query: "SELECT 1 AS id",
  };
  assert.deepEqual(schemaBody(view).body, {
    name: "v",
    type: "view",
    has_api: true,
    view_query: "SELECT 1 AS id",
  });
});

Deno.test("schema_diff: JSON errors say where", () => {
  assert.equal(jsonErrorOffset('{"a":}'), 5);
  assert.equal(jsonErrorOffset("[1,]"), 3);
  assert.equal(jsonErrorOffset('{"a": 1}'), -1);
  assert.equal(jsonErrorOffset('{"a": 1} x'), 9);
  const r = parseJson('{\n  "name": "x",\n  "type": tru\n}');
  assert.ok(!r.ok && /line 3, column 11/.test(r.message), JSON.stringify(r));
  const bad = formFromJson(
    '{"name": "x", "fields": [{"name": "a", "type": "nope"}]}',
  );
  assert.ok(!bad.ok && /fields\[0\]\.type must be one of/.test(bad.message));
  const typeChange = formFromJson(
    JSON.stringify({
      name: "posts",
      fields: [{ id: "f1", name: "title", type: "int" }],
    }),
    saved,
  );
  assert.ok(!typeChange.ok && /cannot change/.test(typeChange.message));
});

Deno.test("schema_diff: API errors land next to the right input", () => {
  const form = formState(saved);
  const title = form.fields[0].key;
  assert.equal(
    errorKey('Cannot accept field "title".pattern: bad', form),
    `${title}.pattern`,
  );
  assert.equal(
    errorKey('Cannot accept field "title": min > max', form),
    `${title}.min`,
  );
  assert.equal(
    errorKey('Cannot accept field "owner".foreign_key.entity: no base', form),
    `${form.fields[4].key}.entity`,
  );
  form.fields[1].name = "bad name";
  assert.equal(
    errorKey('Cannot accept field name "bad name": use 1-64 characters', form),
    `${form.fields[1].key}.name`,
  );
  assert.equal(
    errorKey('Cannot rename entity: "x" already exists', form),
    "name",
  );
  assert.equal(errorKey("Something else", form), "");
  assert.deepEqual(
    fieldErrorKeys({
      "fields[2].default": { message: "bad" },
      "fields[9].min": { message: "lost" },
      name: { message: "taken" },
    }, form),
    { [`${form.fields[2].key}.default`]: "bad", name: "taken" },
  );
});

Deno.test("schema_diff: a multiple relation keeps multiple and max, never unique", () => {
  const tags: FieldDef = {
    id: "f9",
    name: "tags",
    type: "relation",
    required: false,
    unique: false,
    foreign_key: { entity: "tags", on_delete: "set null" },
    multiple: true,
    max: 5,
  };
  const withTags = { ...saved, fields: [...saved.fields, tags] };
  const form = formState(withTags);
  const f = form.fields.find((x) => x.name === "tags")!;
  assert.equal(f.multiple, true);
  assert.deepEqual(fieldBody(f).body, {
    id: "f9",
    name: "tags",
    type: "relation",
    required: false,
    unique: false,
    foreign_key: { entity: "tags", on_delete: "set null" },
    multiple: true,
    max: 5,
  });
  // The JSON view round-trips it; an unchanged form sends nothing.
  const back = formFromJson(formJson(form), withTags);
  assert.ok(back.ok);
  assert.equal(back.form.fields.at(-1)!.multiple, true);
  assert.ok(patchBody(withTags, back.form).empty);
  // A changed max is sent alone.
  const more = {
    ...form,
    fields: form.fields.map((x) => x.name === "tags" ? { ...x, max: "8" } : x),
  };
  assert.deepEqual(patchBody(withTags, more).body, {
    fields: [{ id: "f9", max: 8 }],
  });
  // A new one: a list, never unique; a single relation has no max.
  const fresh = {
    ...newField("relation"),
    name: "readers",
    entity: "users",
    multiple: true,
    unique: true,
    max: "",
  };
  const body = fieldBody(fresh).body;
  assert.equal(body.multiple, true);
  assert.equal(body.unique, false);
  assert.equal("max" in body, false);
  const single = fieldBody({ ...fresh, multiple: false, max: "3" }).body;
  assert.equal("multiple" in single, false);
  assert.equal("max" in single, false);
  assert.deepEqual(fieldBody({ ...fresh, max: "2.5" }).errors, {
    max: "Must be a whole number",
  });
  const bad = formFromJson(
    JSON.stringify({
      name: "x",
      type: "base",
      fields: [{ name: "t", type: "relation", multiple: "yes" }],
    }),
    undefined,
  );
  assert.ok(!bad.ok);
});
