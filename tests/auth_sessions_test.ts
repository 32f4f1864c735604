/**
 * Refresh and logout of user sessions (README "Auth"): the scoped
 * `/api/v1/auth/<entity>/refresh|logout` and the legacy forms that take the
 * entity from the token; a refresh revokes the old token, a logout only the
 * token it is called with, and a token never works on another entity's
 * routes.
 *
 * @module
 */

import { assert, assertEquals, assertStatus, forEachDb } from "./_server.ts";
import {
  assertTokenRejected,
  assertTokenWorks,
  claimsOf,
  fastUser,
  issue,
  withAuthServer,
} from "./_auth_fixtures.ts";

/** A token refused on another entity's session route. */
interface CrossCase {
  name: string;
  path: string;
  holder: "users" | "members" | "admin";
}

const CROSS_CASES: CrossCase[] = ["refresh", "logout"].flatMap((op) => [
  {
    name: `users token on members/${op}`,
    path: `/api/v1/auth/members/${op}`,
    holder: "users" as const,
  },
  {
    name: `members token on users/${op}`,
    path: `/api/v1/auth/users/${op}`,
    holder: "members" as const,
  },
  {
    name: `admin token on users/${op}`,
    path: `/api/v1/auth/users/${op}`,
    holder: "admin" as const,
  },
  {
    name: `user token on sys/admins/${op}`,
    path: `/api/v1/sys/admins/${op}`,
    holder: "users" as const,
  },
]);

forEachDb(
  "auth sessions: refresh and logout",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // Ada and a member are seeded once and only read; every step issues the
      // tokens it revokes, so no step depends on another.
      const ada = await fastUser(s, "users", {
        email: "ada@example.com",
        name: "Ada",
      });
      const member = await fastUser(s, "members", { email: "mem@example.com" });
      const id = ada.id;
      const adminId = claimsOf(admin).sub;

      for (
        const [label, base] of [
          ["scoped", "/api/v1/auth/users"],
          ["legacy", "/api/v1/auth"],
        ]
      ) {
        await t.step(
          `${label} refresh → {token, user}; old token revoked`,
          async () => {
            const old = await issue(s, "users", id);
            const r = await s.request("POST", `${base}/refresh`, {
              token: old,
            });
            assertStatus(r, 200);
            assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
            assertEquals(r.data.user.id, id);
            assertEquals(r.data.user.name, "Ada");
            assert(!("password" in r.data.user));
            const o = claimsOf(old), n = claimsOf(r.data.token);
            assert(r.data.token !== old, "a new token");
            assert(n.jti !== o.jti, "a new jti");
            assert(n.exp >= o.exp, `later expiry: ${n.exp} >= ${o.exp}`);
            assertEquals(n.exp - n.iat, 3600);
            assertEquals(n.sub, id);
            assertEquals(n.entity, "users");
            await assertTokenRejected(s, id, old, "old token after refresh");
            await assertTokenWorks(s, id, r.data.token, "new token");
            const again = await s.request("POST", `${base}/refresh`, {
              token: old,
            });
            assertStatus(again, 401, "refresh with the old token");
            // Logout with the new one.
            const out = await s.request("POST", `${base}/logout`, {
              token: r.data.token,
            });
            assertStatus(out, 200);
            assertEquals(out.body, { status: 200, data: null, error: "" });
            await assertTokenRejected(s, id, r.data.token, "after logout");
            const twice = await s.request("POST", `${base}/logout`, {
              token: r.data.token,
            });
            assertStatus(twice, 401, "logout twice");
            const ref = await s.request("POST", `${base}/refresh`, {
              token: r.data.token,
            });
            assertStatus(ref, 401, "refresh after logout");
            // Without a token.
            assertStatus(await s.request("POST", `${base}/refresh`), 401);
            assertStatus(await s.request("POST", `${base}/logout`), 401);
          },
        );
      }

      await t.step(
        "logout of one token leaves the user's other tokens alone",
        async () => {
          const a = await issue(s, "users", id);
          const b = await issue(s, "users", id);
          const r = await s.request("POST", "/api/v1/auth/users/logout", {
            token: a,
          });
          assertStatus(r, 200);
          await assertTokenRejected(s, id, a, "logged out");
          await assertTokenWorks(s, id, b, "other session");
        },
      );

      /** Asserts a token of `holder` still works. */
      const stillWorks = async (holder: CrossCase["holder"], token: string) => {
        if (holder === "admin") {
          const r = await s.request("GET", "/api/v1/schemas", { token });
          assertStatus(r, 200, "admin token intact");
        } else {
          await assertTokenWorks(s, id, token, `${holder} token intact`);
        }
      };

      for (const c of CROSS_CASES) {
        await t.step(`401, nothing revoked: ${c.name}`, async () => {
          const token = c.holder === "admin"
            ? await issue(s, "mb_admins", adminId)
            : await issue(s, c.holder, c.holder === "users" ? id : member.id);
          const r = await s.request("POST", c.path, { token });
          assertStatus(r, 401, c.name);
          assertEquals(r.body?.data, null);
          await stillWorks(c.holder, token);
        });
      }

      await t.step("a member's token refreshes on its own entity", async () => {
        const mt = await issue(s, "members", member.id);
        const ok = await s.request("POST", "/api/v1/auth/members/refresh", {
          token: mt,
        });
        assertStatus(ok, 200);
        assertEquals(ok.data.user.id, member.id);
        assertEquals(claimsOf(ok.data.token).entity, "members");
      });

      await t.step(
        "legacy refresh/logout take the entity from the token",
        async () => {
          const mt = await issue(s, "members", member.id);
          const r = await s.request("POST", "/api/v1/auth/refresh", {
            token: mt,
          });
          assertStatus(r, 200);
          assertEquals(r.data.user.id, member.id);
          assertEquals(claimsOf(r.data.token).entity, "members");
          const out = await s.request("POST", "/api/v1/auth/logout", {
            token: r.data.token,
          });
          assertStatus(out, 200);
          const after = await s.request("POST", "/api/v1/auth/refresh", {
            token: r.data.token,
          });
          assertStatus(after, 401);
        },
      );
    }),
);
