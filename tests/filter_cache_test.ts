/**
 * A filter that reads records alone has its SQL kept per parsed filter (one
 * entity, one schema version): the same text answers the same for every
 * caller, follows schema changes at once, and a filter that reads `auth`
 * is still compiled per caller.
 */

import assert from "node:assert/strict";
import { assertStatus, forEachDb, startServer } from "./_server.ts";
import {
  allRules,
  asAdmin,
  createEntity,
  createRecord,
  userToken,
} from "./_scenarios.ts";

const FILTER = "/api/v1/entities/things?filter=";
const q = (f: string) => FILTER + encodeURIComponent(f);

forEachDb(
  "filter cache: same text, same rows; schema changes apply at once",
  async (t, db) => {
    const s = await startServer(db);
    try {
      const a = await userToken(s, "a@example.com");
      const b = await userToken(s, "b@example.com");
      await createEntity(s, {
        name: "things",
        fields: [
          { name: "n", type: "int" },
          { name: "owner", type: "relation", foreign_key: { entity: "users" } },
        ],
        rules: allRules("auth"),
      });
      for (let n = 0; n < 6; n++) {
        await createRecord(s, "things", { n, owner: n % 2 ? a.id : b.id });
      }
      const ns = (r: { data: { items: { n: number }[] } }) =>
        r.data.items.map((i) => i.n).sort();
      await t.step(
        "a closed filter: the same for each caller, every time",
        async () => {
          for (const who of [a, b, a, b]) {
            const r = await s.request("GET", q("n >= 2 && n < 5"), {
              token: who.token,
            });
            assertStatus(r, 200);
            assert.deepEqual(ns(r), [2, 3, 4]);
          }
        },
      );
      await t.step("a filter on auth: per caller", async () => {
        const mine = async (who: typeof a) =>
          ns(
            await s.request("GET", q("owner == auth.id && n >= 1"), {
              token: who.token,
            }),
          );
        assert.deepEqual(await mine(a), [1, 3, 5]);
        assert.deepEqual(await mine(b), [2, 4]);
        assert.deepEqual(await mine(a), [1, 3, 5]);
      });
      await t.step(
        "a renamed field: the old text fails, the new one runs",
        async () => {
          const admin = await asAdmin(s);
          const schema = (await admin.get("schemas/things")).data;
          const n = schema.fields.find((f: { name: string }) => f.name === "n");
          const r = await admin.patch("schemas/things", {
            fields: schema.fields.map((f: { id: string }) =>
              f.id === n.id ? { ...f, name: "m" } : f
            ),
          });
          assertStatus(r, 200);
          const old = await s.request("GET", q("n >= 2 && n < 5"), {
            token: a.token,
          });
          assertStatus(old, 400);
          const renamed = await s.request("GET", q("m >= 2 && m < 5"), {
            token: a.token,
          });
          assertStatus(renamed, 200);
          assert.deepEqual(
            renamed.data.items.map((i: { m: number }) => i.m).sort(),
            [2, 3, 4],
          );
        },
      );
    } finally {
      await s.close();
    }
  },
);
