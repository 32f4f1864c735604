/**
 * Auth routes of entities that have none (README "Auth"): an unknown
 * entity, a base entity, the admins' system entity, an auth entity without
 * API and a name in the wrong case all answer the same `404 Route Not
 * Found`, whatever the token, and a 404 logout revokes nothing.
 *
 * @module
 */

import { assert, assertEquals, assertStatus, forEachDb } from "./_server.ts";
import {
  assertTokenWorks,
  claimsOf,
  createSchema,
  fastUser,
  issue,
  login,
  nextIp,
  PUBLIC,
  ROUTE_NOT_FOUND,
  USER_PW,
  withAuthServer,
} from "./_auth_fixtures.ts";

const NOT_AUTH_ENTITIES = [
  "nope",
  "posts",
  "mb_admins",
  "hidden",
  "Users",
  "USERS",
];
const OPS = ["login", "refresh", "logout"];

const SCOPED_CASES = NOT_AUTH_ENTITIES.flatMap((entity) =>
  OPS.map((op) => ({ name: `${op} on ${entity}`, entity, op }))
);

const LEGACY_CASES = ["nope", "posts", "mb_admins", "hidden", undefined].map(
  (entity) => ({ name: `legacy login, entity ${entity}`, entity }),
);

forEachDb(
  "auth routes: Route Not Found",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // A user of users and of the API-less `hidden`, seeded once: the rows
      // below only read them. Each row issues its own tokens, so a row that
      // wrongly revoked one would fail alone.
      const ada = await fastUser(s, "users", { email: "ada@example.com" });
      await fastUser(s, "hidden", { email: "hid@example.com" });
      const adminId = claimsOf(admin).sub;

      for (const c of SCOPED_CASES) {
        await t.step(`identical 404: ${c.name}`, async () => {
          const ut = await issue(s, "users", ada.id);
          const at = await issue(s, "mb_admins", adminId);
          for (const token of [undefined, ut, at]) {
            const r = await s.request(
              "POST",
              `/api/v1/auth/${c.entity}/${c.op}`,
              {
                token,
                body: c.op === "login"
                  ? { identity: "ada@example.com", password: USER_PW }
                  : undefined,
                headers: { "x-forwarded-for": nextIp() },
              },
            );
            assertStatus(r, 404, c.name);
            assertEquals(r.text, ROUTE_NOT_FOUND, c.name);
          }
          // The 404 answers revoked nothing.
          await assertTokenWorks(s, ada.id, ut, "user token after the 404s");
          const r = await s.request("GET", "/api/v1/schemas", { token: at });
          assertStatus(r, 200, "admin token after the 404s");
        });
      }

      for (const c of LEGACY_CASES) {
        await t.step(`identical 404: ${c.name}`, async () => {
          const r = await login(s, "/api/v1/auth/login", {
            entity: c.entity,
            identity: "admin@example.com",
            password: s.adminPassword,
          });
          assertStatus(r, 404, c.name);
          assertEquals(r.text, ROUTE_NOT_FOUND, c.name);
        });
      }

      await t.step("a correct login on the API-less entity → 404", async () => {
        const r = await login(s, "/api/v1/auth/hidden/login", {
          identity: "hid@example.com",
          password: USER_PW,
        });
        assertEquals(r.text, ROUTE_NOT_FOUND);
      });

      await t.step("has_api false also closes the legacy refresh", async () => {
        // A user holds a token, then the entity's API is switched off.
        await createSchema(s, admin, {
          name: "closing",
          type: "auth",
          rules: { add: PUBLIC },
        });
        const u = await fastUser(s, "closing", { email: "c@example.com" });
        const tok = await issue(s, "closing", u.id);
        const r0 = await s.request("PATCH", "/api/v1/schemas/closing", {
          token: admin,
          body: { has_api: false },
        });
        assertStatus(r0, 200);
        let r = await s.request("POST", "/api/v1/auth/closing/refresh", {
          token: tok,
        });
        assertEquals(r.text, ROUTE_NOT_FOUND, "scoped refresh");
        // The legacy forms are aliases of the scoped ones: no new token for an
        // entity without API (404 like the scoped form, or 401).
        r = await s.request("POST", "/api/v1/auth/refresh", { token: tok });
        assert(
          r.status === 404 || r.status === 401,
          `legacy refresh for a has_api:false entity: expected 404 or 401, got ${r.status} ${
            r.text.slice(0, 100)
          }`,
        );
      });
    }),
);
