/**
 * Reading a schema file for import: the export's body, the whole envelope
 * or a bare list; plain errors for anything else, with where the JSON
 * breaks.
 */
import assert from "node:assert/strict";
import { exportText, readSchemaFile } from "./transfer_file.ts";

const POSTS = { name: "posts", type: "base", fields: [] };

Deno.test("transfer_file: the shapes a file may have", async (t) => {
  const cases: [string, string][] = [
    ["the export's body", JSON.stringify({ schemas: [POSTS] })],
    [
      "the whole envelope",
      JSON.stringify({ status: 200, data: { schemas: [POSTS] }, error: "" }),
    ],
    ["a bare list", JSON.stringify([POSTS])],
    ["what Export downloads", exportText([POSTS])],
  ];
  for (const [name, text] of cases) {
    await t.step(name, () => {
      assert.deepEqual(readSchemaFile(text), { ok: true, schemas: [POSTS] });
    });
  }
  await t.step("an empty list (delete_missing may empty a server)", () => {
    assert.deepEqual(readSchemaFile('{"schemas": []}'), {
      ok: true,
      schemas: [],
    });
  });
});

Deno.test("transfer_file: what is wrong, in plain words", async (t) => {
  const cases: [string, string, RegExp][] = [
    ["nothing", "  \n", /choose a file or paste its JSON/],
    ["not an object with schemas", '{"entities": []}', /expected \{"schemas"/],
    ["schemas not a list", '{"schemas": {}}', /expected \{"schemas"/],
    ["a number", "42", /expected \{"schemas"/],
    [
      "an item without a name",
      '{"schemas": [{"name": "a"}, {"type": "base"}]}',
      /item 1 is not a schema with a name/,
    ],
    ["an item not an object", '[{"name": "a"}, 3]', /item 1 is not a schema/],
  ];
  for (const [name, text, message] of cases) {
    await t.step(name, () => {
      const r = readSchemaFile(text);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.message, message);
    });
  }
  await t.step("broken JSON: where it breaks", () => {
    const text = '{"schemas": [\n  {"name": "a",}\n]}';
    const r = readSchemaFile(text);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.match(r.message, /^Cannot read the schemas: Invalid JSON at line 2/);
    assert.equal(r.offset, text.indexOf("}"));
  });
});
