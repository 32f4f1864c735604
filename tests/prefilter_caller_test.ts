/**
 * A rule that reads the caller's own record (`auth.user…`) is not narrowed
 * by an SQL superset: which hidden rows such a superset keeps (and so which
 * use up the per-row scan budget) would depend on data the caller controls,
 * and `has_more` would tell the types of hidden values (review finding).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  forEachDb,
  insertSeries,
  padded,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createEntity, createRecord, signToken } from "./_scenarios.ts";

const RULE = {
  mode: "custom",
  expr: "record.meta.team == auth.user.team",
};

/** `count` rows whose `meta` is the JSON text `meta` (SQL literal). */
function bulk(s: TestServer, name: string, count: number, meta: string) {
  return insertSeries(s, name, count, {
    id: padded("r", 12),
    meta: `'${meta}'`,
  });
}

forEachDb(
  "rules reading the caller's record: has_more does not tell the types of hidden values",
  async (_t, db) => {
    const s = await startServer(db);
    try {
      await createEntity(s, {
        name: "members",
        type: "auth",
        fields: [{ name: "team", type: "json" }],
      });
      const user = await createRecord(s, "members", {
        email: "m@example.com",
        password: "member-password-1",
        team: "x",
      });
      const token = await signToken({ sub: user.id, entity: "members" });
      for (const name of ["cards_arrays", "cards_strings"]) {
        await createEntity(s, {
          name,
          fields: [{ name: "meta", type: "json" }],
          rules: { list: RULE },
        });
      }
      await bulk(s, "cards_arrays", 5001, '{"team":["other"]}');
      await bulk(s, "cards_strings", 5001, '{"team":"other"}');
      const page = async (name: string) => {
        const r = await s.request("GET", `/api/v1/entities/${name}`, { token });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.data.items, []);
        return r.data.has_more as boolean;
      };
      assert.equal(
        await page("cards_arrays"),
        await page("cards_strings"),
        "has_more differs with the types of hidden values",
      );
    } finally {
      await s.close();
    }
  },
);
