/**
 * The database from inside a before-hook other than through `e.db`:
 * `app.db` and `app.entities` join the write's transaction. They must
 * answer, never hang the write or the database.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DATABASES, type Reply } from "./_server.ts";
import { makeEntity, withScripts } from "./_extend_fixtures.ts";
import { settlesWithin } from "./_wait.ts";

const OUTSIDE = `
export default (app) => {
  app.onRecord("beforeCreate", "things", async (e) => {
    const [row] = await app.db.query('SELECT COUNT(*) AS n FROM "others"');
    const other = await app.entities.get("others").read(e.record.ref);
    e.record.note = "others: " + Number(row.n) + ", ref: " + (other ? other.t : "none");
  });
};
`;

for (const db of DATABASES) {
  Deno.test({
    name: `hooks: app.db and app.entities in a before-hook answer [${db}]`,
    // Found in review: on SQLite, statements issued while a transaction is
    // open waited for it to end, and the transaction waited for the hook.
    // Inside a before-hook they now join the write (lib/records/write_scope.ts).
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await withScripts(db, { "outside.js": OUTSIDE }, async (s) => {
        await makeEntity(s, {
          name: "others",
          fields: [{ name: "t", type: "string" }],
        });
        await makeEntity(s, {
          name: "things",
          fields: [{ name: "ref", type: "string" }, {
            name: "note",
            type: "string",
          }],
        });
        const other = await s.app.schemas.get("others")!.create({ t: "hello" });
        const r = await settlesWithin(
          s.request("POST", "/api/v1/entities/things", {
            body: { ref: other.id },
          }),
          5000,
        );
        assert.notEqual(r, "timeout", "the write answers");
        const reply = r as Reply;
        assert.equal(reply.status, 201, reply.text);
        assert.equal(reply.data.note, "others: 1, ref: hello");
        const h = await settlesWithin(s.request("GET", "/api/v1/health"), 3000);
        assert.equal((h as Reply).status, 200, "the database still answers");
      });
    },
  });
}
