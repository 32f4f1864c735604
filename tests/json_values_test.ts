/**
 * Every JSON value a `json` field accepts is stored and read back as sent,
 * on both databases (PostgreSQL used to answer 500 for `true`, `false` and
 * arrays of booleans: postgres.js sent them as bool parameters).
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { allRules, createEntity } from "./_scenarios.ts";

const VALUES: unknown[] = [
  true,
  false,
  0,
  -1.5,
  "x",
  [true, false],
  [[true]],
  [1, "a", null, { b: false }],
  [],
  {},
  { a: true, b: [false] },
  null,
];

forEachDb("json fields keep every JSON value", async (t, db) => {
  const s = await startServer(db);
  try {
    await createEntity(s, {
      name: "docs_json",
      fields: [{ name: "meta", type: "json" }],
      rules: allRules("public"),
    });
    for (const value of VALUES) {
      await t.step(JSON.stringify(value), async () => {
        const made = await s.request("POST", "/api/v1/entities/docs_json", {
          body: { meta: value },
        });
        assert.equal(made.status, 201, made.text);
        assert.deepEqual(made.data.meta, value);
        const read = await s.request(
          "GET",
          `/api/v1/entities/docs_json/${made.data.id}`,
        );
        assert.deepEqual(read.data.meta, value);
        const changed = await s.request(
          "PATCH",
          `/api/v1/entities/docs_json/${made.data.id}`,
          { body: { meta: [value] } },
        );
        assert.equal(changed.status, 200, changed.text);
        assert.deepEqual(changed.data.meta, [value]);
      });
    }
  } finally {
    await s.close();
  }
});
