/**
 * Two Moonbase instances on one PostgreSQL database (same MB_JWT_SECRET)
 * share revocations, password-change cutoffs, rate-limit counters and
 * schemas. PostgreSQL only: skipped when no PostgreSQL binaries exist or
 * MB_TEST_DB=sqlite.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { poll } from "./_wait.ts";

const USER_PW = "user-password-1";

function post(
  s: TestServer,
  path: string,
  body: unknown,
  xff: string,
): Promise<Reply> {
  return s.request("POST", path, {
    body,
    headers: { "x-forwarded-for": xff },
  });
}

Deno.test({
  name: "multi-instance: two instances on one PostgreSQL database",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const url = await (await startPostgres()).createDatabase();
    const a = await startServer("postgres", {
      connection: url,
      trustProxy: true,
    });
    const b = await startServer("postgres", {
      connection: url,
      trustProxy: true,
    });
    try {
      const adminA = await a.adminToken();
      let userId = "";

      await t.step(
        "a token from A is accepted by B (shared secret)",
        async () => {
          const r = await b.request("GET", "/api/v1/schemas", {
            token: adminA,
          });
          assertStatus(r, 200);
        },
      );

      await t.step("an admin created through A closes setup on B", async () => {
        // B started while no admin existed, so it holds a setup token.
        const setup = b.app.setupToken;
        assert(setup, "B has a setup token");
        const r = await b.request("POST", "/api/v1/sys/admins/setup", {
          token: setup,
          body: { email: "late@example.com", password: "late-password-1" },
        });
        assertStatus(r, 403);
        const list = await b.request("GET", "/api/v1/sys/admins", {
          token: adminA,
        });
        assertEquals(
          list.data.items.map((x: { email: string }) => x.email),
          ["admin@example.com"],
        );
      });

      await t.step("a schema created on A becomes usable on B", async () => {
        let r = await b.request("GET", "/api/v1/entities/users", {
          token: adminA,
        });
        assertStatus(r, 404, "no users entity yet");
        r = await a.request("POST", "/api/v1/schemas", {
          token: adminA,
          body: {
            name: "users",
            type: "auth",
            fields: [{ name: "name", type: "string" }],
            rules: {
              add: { mode: "public", expr: "" },
              get: { mode: "auth", expr: "" },
              list: { mode: "auth", expr: "" },
            },
          },
        });
        assertStatus(r, 201);
        await poll("B sees users", async () => {
          const x = await b.request("GET", "/api/v1/entities/users", {
            token: adminA,
          });
          return x.status === 200;
        });
        // Usable: a signup on B, visible on A.
        r = await b.request("POST", "/api/v1/entities/users", {
          body: { email: "ada@example.com", password: USER_PW, name: "Ada" },
        });
        assertStatus(r, 201, "signup on B");
        userId = r.data.id;
        r = await a.request("GET", `/api/v1/entities/users/${userId}`, {
          token: adminA,
        });
        assertStatus(r, 200);
        assertEquals(r.data.name, "Ada");
        // Login on B's auth route for the entity created on A.
        r = await post(b, "/api/v1/auth/users/login", {
          identity: "ada@example.com",
          password: USER_PW,
        }, "10.0.0.1");
        assertStatus(r, 200, "login on B");
        assertEquals(r.data.user.id, userId);
      });

      const probe = (s: TestServer, token: string) =>
        s.request("GET", `/api/v1/entities/users/${userId}`, { token });

      await t.step(
        "logout on A: rejected on A at once, then on B",
        async () => {
          const tok = await a.app.sessions.issue(
            a.app.schemas.get("users")!,
            (await a.app.schemas.get("users")!.read(userId))!,
          );
          assertStatus(await probe(a, tok.token), 200, "on A before");
          assertStatus(await probe(b, tok.token), 200, "on B before");
          const r = await a.request("POST", "/api/v1/auth/users/logout", {
            token: tok.token,
          });
          assertStatus(r, 200);
          assertStatus(await probe(a, tok.token), 401, "on A right after");
          await poll(
            "B rejects the logged-out token",
            async () => (await probe(b, tok.token)).status === 401,
          );
          // And B cannot refresh it either.
          const ref = await b.request("POST", "/api/v1/auth/users/refresh", {
            token: tok.token,
          });
          assertStatus(ref, 401);
        },
      );

      await t.step("refresh on A revokes the old token on B too", async () => {
        const login = await post(b, "/api/v1/auth/users/login", {
          identity: "ada@example.com",
          password: USER_PW,
        }, "10.0.0.2");
        assertStatus(login, 200);
        const old = login.data.token;
        assertStatus(await probe(a, old), 200, "B's token works on A");
        const r = await a.request("POST", "/api/v1/auth/users/refresh", {
          token: old,
        });
        assertStatus(r, 200);
        const fresh = r.data.token;
        assertStatus(await probe(a, old), 401, "old token on A");
        await poll(
          "B rejects the refreshed-away token",
          async () => (await probe(b, old)).status === 401,
        );
        const ok = await probe(b, fresh);
        assertStatus(ok, 200, "new token on B");
        assertEquals(ok.data.id, userId);
      });

      await t.step("an admin password change on A revokes on B", async () => {
        let r = await a.request("POST", "/api/v1/sys/admins", {
          token: adminA,
          body: { email: "second@example.com", password: "second-pass-1" },
        });
        assertStatus(r, 201);
        const second = r.data.id;
        const admins = b.app.schemas.get("mb_admins")!;
        const onB = (await b.app.sessions.issue(
          admins,
          (await admins.read(second))!,
        )).token;
        assertStatus(
          await b.request("GET", "/api/v1/schemas", { token: onB }),
          200,
        );
        r = await a.request("PATCH", `/api/v1/sys/admins/${second}`, {
          token: adminA,
          body: { password: "second-pass-2" },
        });
        assertStatus(r, 200);
        await poll(
          "B rejects the other admin's old token",
          async () =>
            (await b.request("GET", "/api/v1/schemas", { token: onB }))
              .status === 401,
        );
        r = await b.request("GET", "/api/v1/schemas", { token: adminA });
        assertStatus(r, 200, "the changing admin's token stays");
      });

      await t.step("rate-limit counters are shared", async () => {
        const ip = "198.51.100.9";
        const path = "/api/v1/auth/nope/login";
        const order = [a, b, a, b, b];
        for (let i = 0; i < order.length; i++) {
          const r = await post(order[i], path, {}, ip);
          assertStatus(r, 404);
          assertEquals(
            r.headers.get("x-ratelimit-remaining"),
            String(4 - i),
            `attempt ${i + 1} on ${order[i] === a ? "A" : "B"}`,
          );
        }
        for (const [name, s] of [["A", a], ["B", b]] as const) {
          const r = await post(s, "/api/v1/auth/users/login", {
            identity: "ada@example.com",
            password: USER_PW,
          }, ip);
          assertStatus(r, 429, `6th+ attempt on ${name}`);
          assertEquals(r.headers.get("x-ratelimit-remaining"), "0");
          assert(r.headers.get("retry-after"), "Retry-After");
        }
        // Another IP is fresh on both.
        const r = await post(b, path, {}, "198.51.100.10");
        assertEquals(r.headers.get("x-ratelimit-remaining"), "4");
      });

      await t.step(
        "schema changes on A reach B (has_api false, delete)",
        async () => {
          let r = await a.request("POST", "/api/v1/schemas", {
            token: adminA,
            body: {
              name: "posts",
              type: "base",
              fields: [{ name: "title", type: "string" }],
              rules: { list: { mode: "public", expr: "" } },
            },
          });
          assertStatus(r, 201);
          await poll(
            "B serves posts",
            async () =>
              (await b.request("GET", "/api/v1/entities/posts")).status === 200,
          );
          let n = 0; // one client address per poll: polls must not hit the limit
          r = await a.request("PATCH", "/api/v1/schemas/users", {
            token: adminA,
            body: { has_api: false },
          });
          assertStatus(r, 200);
          await poll(
            "B hides users' auth routes",
            async () =>
              (await post(b, "/api/v1/auth/users/login", {}, `10.1.0.${++n}`))
                .status === 404,
          );
          r = await a.request("DELETE", "/api/v1/schemas/posts", {
            token: adminA,
          });
          assertStatus(r, 204);
          await poll(
            "B drops posts",
            async () =>
              (await b.request("GET", "/api/v1/entities/posts")).status === 404,
          );
        },
      );
    } finally {
      await b.close();
      await a.close();
    }
  },
});
