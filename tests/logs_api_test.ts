/**
 * The logs API and request entries: `GET /api/v1/sys/logs` is for admins
 * only, and every request leaves one entry with its method, path (without
 * the query), status, level, duration, client IP, request id and caller;
 * search and level filters reach a request's message.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
} from "./_server.ts";
import {
  getLogs,
  harnessAdmin,
  LOGS,
  page,
  USER_PASSWORD,
  withUser,
} from "./_logs_fixtures.ts";

forEachDb("logs API: admin only", async (t, db) => {
  // One server for the table: each row only reads the logs, and the admin
  // row needs no more than the entries the fixture's requests left.
  const s = await startServer(db);
  try {
    const { admin, user } = await withUser(s);
    const cases: {
      name: string;
      token?: string;
      status: number;
      check?: (r: Reply) => void;
    }[] = [
      {
        name: "guest: 401, an error, no data",
        status: 401,
        check: (r) => {
          assert(r.error !== "", "guest: error message");
          assertEquals(r.data ?? null, null, "guest: no data");
        },
      },
      {
        name: "user: 403, no items",
        token: user,
        status: 403,
        check: (r) => assert(!("items" in (r.data ?? {})), "user: no items"),
      },
      { name: "bad token: 401", token: "not-a-token", status: 401 },
      {
        name: "admin: a page with entries",
        token: admin,
        status: 200,
        check: (r) => {
          page(r, "admin");
          assert(r.data.items.length > 0, "admin sees entries");
        },
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        const r = await getLogs(s, c.token);
        assertStatus(r, c.status, c.name);
        c.check?.(r);
      });
    }
  } finally {
    await s.close();
  }
});

forEachDb("logs API: request entries", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const { id: adminId } = await harnessAdmin(s);
    const { admin, user, userId } = await withUser(s);
    const ip = "203.0.113.7";
    // A generated request id, a query string that must not be logged.
    let r = await s.request("GET", "/api/v1/health?probe=zz-query-marker", {
      headers: { "x-forwarded-for": ip },
    });
    assertStatus(r, 200, "health");
    const rid = r.headers.get("x-request-id");
    assert(rid, "X-Request-Id");
    // An echoed request id, a 404.
    r = await s.request("GET", "/api/v1/entities/NoSuchEntityZq", {
      headers: { "x-request-id": "logtest-echo-404", "x-forwarded-for": ip },
    });
    assertStatus(r, 404, "missing entity");
    assertEquals(r.headers.get("x-request-id"), "logtest-echo-404", "echo");
    // Authenticated requests (admin and user).
    r = await s.request("GET", "/api/v1/schemas", {
      token: admin,
      headers: { "x-request-id": "logtest-admin-req" },
    });
    assertStatus(r, 200, "schemas as admin");
    r = await s.request("GET", LOGS, {
      token: user,
      headers: { "x-request-id": "logtest-user-req" },
    });
    assertStatus(r, 403, "logs as user");
    // POST with a body.
    r = await s.request("POST", "/api/v1/entities/users", {
      token: admin,
      body: { email: "bob@example.com", password: USER_PASSWORD },
      headers: { "x-request-id": "logtest-post" },
    });
    assertStatus(r, 201, "create bob");

    const items = page(
      await getLogs(s, admin, { type: "request", limit: "1000" }),
      "request entries",
    );
    const byRid = (id: string) => {
      const found = items.filter((e) => e.request_id === id);
      assertEquals(found.length, 1, `one entry for request ${id}`);
      return found[0];
    };

    await t.step("a guest's 200: every field", () => {
      const e = byRid(rid);
      assertEquals(e.type, "request", "type");
      assertEquals(e.level, "info", "2xx is info");
      assertEquals(e.method, "GET", "method");
      assertEquals(e.path, "/api/v1/health", "path without query");
      assertEquals(e.status, 200, "status");
      assert(
        typeof e.duration_ms === "number" && e.duration_ms >= 0,
        `duration_ms >= 0: ${e.duration_ms}`,
      );
      assertEquals(e.ip, ip, "ip from X-Forwarded-For (trustProxy)");
      assertEquals(e.auth_id, null, "guest: no auth_id");
      assertEquals(e.auth_entity, null, "guest: no auth_entity");
      assert(!e.message.includes("zz-query-marker"), "message without query");
      assert(Date.parse(e.time) > Date.now() - 60_000, "time is recent");
      assert(typeof e.id === "string" && e.id.length > 0, `id ${e.id}`);
    });

    await t.step("a 404 is warn, with its request id echoed", () => {
      const e = byRid("logtest-echo-404");
      assertEquals(e.status, 404, "404 status");
      assertEquals(e.level, "warn", "4xx is warn");
      assertEquals(e.path, "/api/v1/entities/NoSuchEntityZq", "404 path");
    });

    await t.step("the caller: admin and user", () => {
      let e = byRid("logtest-admin-req");
      assertEquals(e.auth_id, adminId, "admin auth_id");
      assertEquals(e.auth_entity, "mb_admins", "admin auth_entity");
      assertEquals(e.ip, "127.0.0.1", "socket peer without X-Forwarded-For");
      e = byRid("logtest-user-req");
      assertEquals(e.status, 403, "user 403");
      assertEquals(e.auth_id, userId, "user auth_id");
      assertEquals(e.auth_entity, "users", "user auth_entity");
    });

    await t.step("a POST: no body, message from method/path/status", () => {
      const e = byRid("logtest-post");
      assertEquals([e.method, e.path, e.status], [
        "POST",
        "/api/v1/entities/users",
        201,
      ], "POST entry");
      assertEquals(e.data, null, "no body in a request entry");
      assertEquals(e.message, "POST /api/v1/entities/users 201", "message");
      assertEquals(e.level, "info", "level");
    });

    await t.step("no path has a query string", () => {
      assert(
        !items.some((x) => (x.path ?? "").includes("?")),
        "no path has a query string",
      );
    });

    await t.step("search and level reach a request's message", async () => {
      // A request's message and level are made from its method, path and
      // status when read.
      const search = "GET /api/v1/entities/nosuchentityzq 404";
      const found = page(
        await getLogs(s, admin, { search, level: "warn" }),
        "search on a request message",
      );
      assertEquals(
        found.map((x) => [x.request_id, x.message, x.level]),
        [[
          "logtest-echo-404",
          "GET /api/v1/entities/NoSuchEntityZq 404",
          "warn",
        ]],
        "found by method, path and status",
      );
      assertEquals(
        page(await getLogs(s, admin, { search, level: "info" }), "level info"),
        [],
        "a warn entry is not level=info",
      );
    });
  } finally {
    await s.close();
  }
});
