/**
 * App entries of the system log: schema created/changed/deleted, admin
 * logins, failed logins, rate-limit hits, rule expression errors (without
 * the body's values), and that debug/trace entries are not stored at the
 * default level.
 *
 * @module
 */

import {
  ADMIN_PASSWORD,
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
} from "./_server.ts";
import {
  ADMIN_EMAIL,
  getLogs,
  harnessAdmin,
  login,
  nextIp,
  page,
  storeRows,
  USER_EMAIL,
  withUser,
  WRONG_PASSWORD,
} from "./_logs_fixtures.ts";

forEachDb(
  "logs app entries: schema changes, rule errors, default level",
  async (t, db) => {
    // One server: each step creates its own entity and reads only the
    // entries about it.
    const s = await startServer(db);
    try {
      const { admin, user, usersId } = await withUser(s);

      await t.step("schema created/changed/deleted", async () => {
        let r = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "zqnotes",
            type: "base",
            fields: [{ name: "title", type: "string" }],
          },
        });
        assertStatus(r, 201, "create zqnotes");
        const id: string = r.data.id;
        r = await s.request("PATCH", `/api/v1/schemas/${id}`, {
          token: admin,
          body: { rules: { list: { mode: "public", expr: "" } } },
        });
        assertStatus(r, 200, "change zqnotes");
        r = await s.request("DELETE", `/api/v1/schemas/${id}`, {
          token: admin,
        });
        assertStatus(r, 204, "delete zqnotes");
        const items = page(
          await getLogs(s, admin, { type: "app", limit: "1000" }),
          "app entries",
        );
        const one = (message: string) => {
          const found = items.filter((e) => {
            const d = (e.data ?? {}) as Record<string, unknown>;
            return e.message === message &&
              (d.id === id || d.entity === "zqnotes" || d.entity === id);
          });
          assert(found.length >= 1, `an entry "${message}" for zqnotes`);
          const e = found[0];
          assertEquals(e.type, "app", "app type");
          assertEquals(e.level, "info", `${message} level`);
          assertEquals(e.method, null, "app entry: no method");
          assertEquals(e.status, null, "app entry: no status");
          return e;
        };
        assertEquals(
          one("schema created").data,
          { entity: "zqnotes", id },
          "schema created data",
        );
        assertEquals(
          one("schema changed").data,
          { entity: "zqnotes", id },
          "schema changed data",
        );
        one("schema deleted");
        const created = items.find((e) =>
          e.message === "schema created" &&
          (e.data as Record<string, unknown>)?.id === usersId
        );
        assert(created, "schema created for users");
      });

      await t.step("a rule expression error", async () => {
        let r = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "zqrule",
            type: "base",
            fields: [{ name: "title", type: "string" }],
            rules: {
              add: {
                mode: "custom",
                expr: 'req.body.title + req.body.title != ""',
              },
            },
          },
        });
        assertStatus(r, 201, "create zqrule");
        // Two 40 000-character strings exceed the evaluator's string cap.
        r = await s.request("POST", "/api/v1/entities/zqrule", {
          token: user,
          body: { title: "x".repeat(40_000) },
        });
        assertStatus(r, 403, "a failing rule denies");
        const items = page(
          await getLogs(s, admin, { type: "app", search: "rule expression" }),
          "rule error",
        );
        assert(items.length >= 1, "a rule expression error is logged");
        assertEquals(items[0].level, "warn", "rule error is warn");
        assert(
          /too long/i.test(JSON.stringify(items[0].data)),
          `error detail: ${JSON.stringify(items[0].data)}`,
        );
        assert(
          !JSON.stringify(items[0]).includes("x".repeat(100)),
          "the body value is not logged",
        );
      });

      await t.step("default level: debug entries are not stored", async () => {
        assert(!s.app.log.enabled("debug"), "debug off by default");
        assert(!s.app.log.enabled("trace"), "trace off by default");
        assert(s.app.log.enabled("info"), "info on by default");
        s.app.log.app("debug", "zq debug marker");
        s.app.log.app("trace", "zq trace marker");
        const rows = await storeRows(s);
        assert(
          !rows.some((x) => String(x.message).startsWith("zq debug")) &&
            !rows.some((x) => String(x.message).startsWith("zq trace")),
          "debug/trace entries are not written",
        );
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb(
  "logs app entries: admin login, failed login, rate limit",
  async (t, db) => {
    // One server: each step logs in from client IPs of its own and reads
    // only the entries of those IPs.
    const s = await startServer(db, { trustProxy: true });
    try {
      // The harness admin (its hash is computed once per file) logs in.
      const { token: admin, id: adminId } = await harnessAdmin(s);
      await withUser(s);

      await t.step("an admin login is an info entry", async () => {
        const adminIp = nextIp();
        const r = await login(
          s,
          "/api/v1/sys/admins/login",
          ADMIN_EMAIL,
          ADMIN_PASSWORD,
          adminIp,
        );
        assertStatus(r, 200, "admin login");
        assertEquals(r.data.user.id, adminId, "the harness admin");
        const items = page(
          await getLogs(s, admin, { type: "app", search: "admin login" }),
          "admin login",
        );
        const adminLogin = items.find((e) =>
          (e.data as Record<string, unknown>)?.ip === adminIp
        );
        assert(adminLogin, `an "admin login" entry from ${adminIp}`);
        assertEquals(adminLogin.message, "admin login", "message");
        assertEquals(adminLogin.level, "info", "admin login is info");
        assertEquals(
          (adminLogin.data as Record<string, unknown>).user,
          adminId,
          "admin login user",
        );
      });

      await t.step("a failed user login is a warn entry", async () => {
        const failIp = nextIp();
        const r = await login(
          s,
          "/api/v1/auth/users/login",
          USER_EMAIL,
          WRONG_PASSWORD,
          failIp,
        );
        assertStatus(r, 401, "wrong password");
        const items = page(
          await getLogs(s, admin, { search: "failed login", type: "app" }),
          "failed login",
        );
        const failed = items.filter((e) =>
          (e.data as Record<string, unknown>)?.ip === failIp
        );
        assertEquals(failed.length, 1, "one failed-login entry for that IP");
        assertEquals(failed[0].level, "warn", "failed login is warn");
        assertEquals(failed[0].message, "failed login", "message");
        assertEquals(
          (failed[0].data as Record<string, unknown>).entity,
          "users",
          "failed login entity",
        );
      });

      await t.step(
        "six attempts: the sixth is limited and logged",
        async () => {
          const floodIp = nextIp();
          const replies: Reply[] = [];
          for (let i = 0; i < 6; i++) {
            replies.push(
              await login(
                s,
                "/api/v1/sys/admins/login",
                ADMIN_EMAIL,
                WRONG_PASSWORD,
                floodIp,
              ),
            );
          }
          assertEquals(
            replies.map((r) => r.status),
            [401, 401, 401, 401, 401, 429],
            "statuses",
          );
          const limited = replies[5];
          let items = page(
            await getLogs(s, admin, { search: "rate limit", type: "app" }),
            "rate limit",
          );
          const hits = items.filter((e) =>
            (e.data as Record<string, unknown>)?.ip === floodIp
          );
          assertEquals(hits.length, 1, "one rate-limit entry for the flood IP");
          assertEquals(hits[0].level, "warn", "rate limit hit is warn");
          assert(/rate.?limit/i.test(hits[0].message), hits[0].message);
          assertEquals(
            (hits[0].data as Record<string, unknown>).request_id,
            limited.headers.get("x-request-id"),
            "the rate-limit entry names the 429 request",
          );
          items = page(
            await getLogs(s, admin, { search: "failed login", limit: "1000" }),
            "failed logins",
          );
          const floodFailed = items.filter((e) =>
            (e.data as Record<string, unknown>)?.ip === floodIp
          );
          assertEquals(floodFailed.length, 5, "five failed admin logins");
          // The 429 request itself is a warn request entry.
          const reqs = page(
            await getLogs(s, admin, {
              type: "request",
              search: "/api/v1/sys/admins/login",
              limit: "1000",
            }),
            "login requests",
          ).filter((e) => e.ip === floodIp);
          assertEquals(
            reqs.map((e) => e.status),
            [429, 401, 401, 401, 401, 401],
            "login request entries (newest first)",
          );
        },
      );
    } finally {
      await s.close();
    }
  },
);
