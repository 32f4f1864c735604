/**
 * Bad `indexes` input: every case a 400 in the envelope naming the entry in
 * `data.fields`, on create and on PATCH, with nothing created or changed.
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { asAdmin, createEntity } from "./_scenarios.ts";
import { dbIndexes } from "./_indexes_fixtures.ts";

const FIELDS = [
  { name: "title", type: "string" },
  { name: "n", type: "int" },
  { name: "tag", type: "string" },
  { name: "j", type: "json" },
  { name: "f", type: "file" },
  { name: "fs", type: "files" },
  { name: "flag", type: "bool" },
];

const nine = ["title", "n", "tag", "flag", "id", "created", "updated"];
/** 17 distinct, otherwise valid indexes. */
const SEVENTEEN = [
  ...nine.map((f) => [f]),
  ...nine.map((f, i) => [f, nine[(i + 1) % 7]]),
  ["n", "tag", "title"],
  ["tag", "title", "n"],
  ["title", "n", "tag"],
].map((fields) => ({ fields }));
// deno-fmt-ignore
/** [indexes, key in data.fields, words the message holds]. */
const BAD: [unknown, string, RegExp][] = [
  ["x", "indexes", /must be a list/],
  [{ fields: ["n"] }, "indexes", /must be a list/],
  [7, "indexes", /must be a list/],
  [[null], "indexes[0]", /must be \{fields, unique\}/],
  [["n"], "indexes[0]", /must be \{fields, unique\}/],
  [[[]], "indexes[0]", /must be \{fields, unique\}/],
  [[{}], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: [] }], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: "n" }], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: [1] }], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: [""] }], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: [null] }], "indexes[0].fields", /list of 1-8 field names/],
  [[{ fields: [...nine, "n", "tag"] }], "indexes[0].fields", /list of 1-8/],
  [[{ fields: ["nope"] }], "indexes[0].fields", /no field "nope"/],
  [[{ fields: ["N"] }], "indexes[0].fields", /no field "N"/],
  [[{ fields: ["n", "n"] }], "indexes[0].fields", /"n" is listed twice/],
  [[{ fields: ["j"] }], "indexes[0].fields", /"j" \(json\) cannot be indexed/],
  [[{ fields: ["tag", "f"] }], "indexes[0].fields", /"f" \(file\) cannot/],
  [[{ fields: ["fs"] }], "indexes[0].fields", /"fs" \(files\) cannot/],
  [[{ fields: ["n"], unique: "yes" }], "indexes[0].unique", /true or false/],
  [[{ fields: ["n"], unique: 1 }], "indexes[0].unique", /true or false/],
  [[{ fields: ["n"], name: "x" }], "indexes[0]", /unknown key "name"/],
  [[{ fields: ["n", "tag"] }, { fields: ["n", "tag"], unique: true }], "indexes[1]", /same fields as indexes\[0\]/],
  [[{ fields: ["n"] }, { fields: ["tag"] }, { fields: ["n"] }], "indexes[2]", /same fields as indexes\[0\]/],
  [SEVENTEEN, "indexes", /at most 16/],
  [[{ fields: ["x".repeat(10_000)] }], "indexes[0].fields", /no field "x{64}"$/],
];

forEachDb("indexes: bad input -> 400 naming the entry", async (t, db) => {
  const s = await startServer(db);
  const a = await asAdmin(s);
  try {
    await createEntity(s, { name: "items", fields: FIELDS });
    for (const [i, [indexes, key, words]] of BAD.entries()) {
      const what = `${i}: ${JSON.stringify(indexes).slice(0, 70)}`;
      await t.step(what, async () => {
        const c = await a.post("schemas", {
          name: "fresh",
          type: "base",
          fields: FIELDS,
          indexes,
        });
        const p = await a.patch("schemas/items", { indexes });
        for (const r of [c, p]) {
          assert.equal(r.status, 400, r.text);
          assert.equal(r.body?.status, 400);
          assert.match(r.error, /^Cannot accept indexes/);
          assert.match(r.error, words);
          assert.ok(r.data?.fields?.[key], `${key} in ${r.text}`);
          assert.equal(r.data.fields[key].code, "invalid");
        }
        assert.equal((await a.get("schemas/fresh")).status, 404);
        assert.deepEqual((await a.get("schemas/items")).data.indexes, []);
      });
    }
    await t.step("password cannot be indexed", async () => {
      const r = await a.post("schemas", {
        name: "users",
        type: "auth",
        fields: [],
        indexes: [{ fields: ["email", "password"] }],
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.error, /"password" \(string\) cannot be indexed/);
    });
    await t.step("a view: indexes refused on create and PATCH", async () => {
      const body = {
        name: "v",
        type: "view",
        view_query: "SELECT id, n FROM items",
      };
      const c = await a.post("schemas", {
        ...body,
        indexes: [{ fields: ["n"] }],
      });
      assert.equal(c.status, 400, c.text);
      assert.equal(c.error, "Cannot accept indexes: a view has no indexes");
      assert.ok(c.data.fields.indexes);
      assert.equal(
        (await a.post("schemas", { ...body, indexes: [] })).status,
        201,
      );
      const p = await a.patch("schemas/v", { indexes: [{ fields: ["n"] }] });
      assert.equal(p.status, 400, p.text);
      assert.equal(p.error, "Cannot accept indexes: a view has no indexes");
    });
    await t.step("bool and built-in fields can be indexed", async () => {
      const r = await a.patch("schemas/items", {
        indexes: [{ fields: ["flag", "created"] }, { fields: ["id", "n"] }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await dbIndexes(s, "items"), [
        "i:flag,created",
        "i:id,n",
      ]);
    });
  } finally {
    await s.close();
  }
});
