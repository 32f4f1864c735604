/**
 * An API key deleted through one instance fails at once on every other:
 * two instances on one PostgreSQL database (no waiting for a
 * notification: the very next request on the other instance is refused),
 * and the two isolates of `serve --workers 2` on SQLite. Impersonation
 * tokens cross instances too, and stay unrefreshable there.
 *
 * @module
 */

import {
  assert,
  assertStatus,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { claimsOf, fastUser } from "./_auth_fixtures.ts";
import { startCluster, workersOf } from "./_workers_fixtures.ts";

const KEYS = "/api/v1/sys/api-keys";

Deno.test({
  name: "api keys: two instances on one PostgreSQL database",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const url = await (await startPostgres()).createDatabase();
    const a = await startServer("postgres", { connection: url });
    let b: TestServer | undefined;
    try {
      const admin = await a.adminToken();
      const adminId = claimsOf(admin).sub;
      const r = await a.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "members",
          type: "auth",
          fields: [],
          rules: { list: { mode: "auth", expr: "" } },
        },
      });
      assertStatus(r, 201);
      const alice = await fastUser(a, "members", {
        email: "alice@example.com",
      });
      // B starts after the schema exists: no wait for it to arrive.
      b = await startServer("postgres", { connection: url });
      const other = b;

      await t.step(
        "deleted on A, refused by B on the next request",
        async () => {
          for (
            const [entity, user, path] of [
              ["members", alice.id, "/api/v1/entities/members"],
              ["mb_admins", adminId, "/api/v1/schemas"],
            ]
          ) {
            const made = await a.request("POST", KEYS, {
              token: admin,
              body: { name: "job", entity, user_id: user },
            });
            assertStatus(made, 201);
            const key = made.data.key as string;
            // Used on B (and again, so nothing B keeps could outlive the row).
            assertStatus(await other.request("GET", path, { token: key }), 200);
            assertStatus(await other.request("GET", path, { token: key }), 200);
            assertStatus(
              await a.request("DELETE", `${KEYS}/${made.data.id}`, {
                token: admin,
              }),
              204,
            );
            const after = await other.request("GET", path, { token: key });
            assertStatus(after, 401, `${entity} key on B after the delete`);
          }
        },
      );

      await t.step("B lists the keys A made, never the key", async () => {
        const made = await a.request("POST", KEYS, {
          token: admin,
          body: { name: "listed", entity: "members", user_id: alice.id },
        });
        assertStatus(made, 201);
        const list = await other.request("GET", KEYS, { token: admin });
        assertStatus(list, 200);
        assert(
          (list.data as { id: string }[]).some((k) => k.id === made.data.id),
          "listed on B",
        );
        assert(!list.text.includes(made.data.key), "no key");
      });

      await t.step(
        "an impersonation token from A works on B and cannot be refreshed there",
        async () => {
          const imp = await a.request(
            "POST",
            `/api/v1/auth/members/impersonate/${alice.id}`,
            { token: admin, body: { duration: 120 } },
          );
          assertStatus(imp, 200);
          const token = imp.data.token as string;
          assertStatus(
            await other.request("GET", "/api/v1/entities/members", { token }),
            200,
          );
          assertStatus(
            await other.request("POST", "/api/v1/auth/members/refresh", {
              token,
            }),
            403,
          );
        },
      );
    } finally {
      await b?.close();
      await a.close();
    }
  },
});

Deno.test({
  name: "api keys: the isolates of serve --workers 2 [sqlite]",
  ignore: !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const c = await startCluster("sqlite");
    try {
      const admins = await c.call("GET", "/api/v1/sys/admins", {
        token: c.admin,
      });
      const adminId = admins.data.items[0].id as string;
      const made = await c.call("POST", KEYS, {
        token: c.admin,
        body: { name: "job", entity: "mb_admins", user_id: adminId },
      });
      assert(made.status === 201, made.text);
      const key = made.data.key as string;
      // Each call opens a connection of its own: both isolates answer.
      const before = [];
      for (let i = 0; i < 40 && workersOf(before).length < 2; i++) {
        before.push(await c.call("GET", "/api/v1/schemas", { token: key }));
      }
      assert(before.every((r) => r.status === 200), "the key works");
      assert(workersOf(before).length === 2, "both isolates answered");
      const del = await c.call("DELETE", `${KEYS}/${made.data.id}`, {
        token: c.admin,
      });
      assert(del.status === 204, del.text);
      const after = [];
      for (let i = 0; i < 40 && workersOf(after).length < 2; i++) {
        after.push(await c.call("GET", "/api/v1/schemas", { token: key }));
      }
      assert(
        after.every((r) => r.status === 401),
        `refused everywhere: ${after.map((r) => r.status)}`,
      );
      assert(workersOf(after).length === 2, "both isolates refused");
    } finally {
      await c.kill();
    }
  },
});
