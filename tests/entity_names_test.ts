/**
 * Issue 28 item 7, a decision: records and realtime tell an existing
 * admin-only entity (401 for a guest, 403 for a user) from a missing one
 * (404 on records, 400 "no entity" for a realtime topic). The admin-only
 * rule's statuses are fixed (docs/guide/rules.md), so entity
 * names are not secret on these routes (docs/operations/security.md says
 * so). The auth routes, where the specification asks it, answer 404 for
 * every entity they do not serve, so they reveal nothing. This file pins
 * the decision.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, seedUser, startServer } from "./_server.ts";
import { makeEntity } from "./_extend_fixtures.ts";
import { openSse } from "./_realtime_fixtures.ts";

const ADMIN_ONLY = { mode: "", expr: "" };
const RULES = {
  list: ADMIN_ONLY,
  get: ADMIN_ONLY,
  add: ADMIN_ONLY,
  update: ADMIN_ONLY,
  delete: ADMIN_ONLY,
};

forEachDb(
  "entity names: admin-only is 401/403, missing is 404 (records) or 400 (realtime); auth routes hide both",
  async (t, db) => {
    const s = await startServer(db, { realtime: true });
    try {
      await makeEntity(s, { name: "ledger", fields: [], rules: RULES });
      await makeEntity(s, {
        name: "staff",
        type: "auth",
        fields: [],
        rules: RULES,
      });
      const user = await seedUser(
        s,
        "staff",
        { email: "u@example.com" },
        "password-123",
      );
      const { token } = await s.app.sessions.issue(
        s.app.schemas.get("staff")!,
        user,
      );
      const id = "01900000-0000-7000-8000-000000000001";
      const cases: { what: string; token?: string; ledger: number }[] = [
        { what: "a guest", ledger: 401 },
        { what: "a user", token, ledger: 403 },
      ];
      for (const c of cases) {
        await t.step(`records, ${c.what}`, async () => {
          for (const path of ["", `/${id}`]) {
            const known = await s.request(
              "GET",
              `/api/v1/entities/ledger${path}`,
              { token: c.token },
            );
            assert.equal(known.status, c.ledger, `ledger${path}`);
            const missing = await s.request(
              "GET",
              `/api/v1/entities/nosuch${path}`,
              { token: c.token },
            );
            assert.equal(missing.status, 404, `nosuch${path}`);
          }
        });
        await t.step(`realtime, ${c.what}`, async () => {
          const known = await openSse(s, "topics=ledger", { token: c.token });
          known.close();
          assert.equal(known.status, c.ledger, "ledger");
          const missing = await openSse(s, "topics=nosuch", {
            token: c.token,
          });
          missing.close();
          assert.equal(missing.status, 400, "nosuch: a topic naming no entity");
        });
      }
      await t.step("auth routes: 404 for both", async () => {
        for (const name of ["ledger", "nosuch"]) {
          const r = await s.request("POST", `/api/v1/auth/${name}/login`, {
            body: { identity: "u@example.com", password: "password-123" },
          });
          assert.equal(r.status, 404, name);
          assert.equal(r.body?.error, "Route Not Found");
        }
      });
    } finally {
      await s.close();
    }
  },
);
