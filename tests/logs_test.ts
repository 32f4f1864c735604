/**
 * System logs (trace entries are not stored by default): the admin-only logs
 * API, request and app entries, every filter and the keyset cursor,
 * retention (age and row count), the log level, the separate SQLite file,
 * and that no secret ever reaches the log store.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import type { LogEntry } from "../lib/logs/types.ts";

const LOGS = "/api/v1/sys/logs";
const PAGE_KEYS = ["cursor", "has_more", "items", "items_count", "limit"];
const ENTRY_KEYS = [
  "auth_entity",
  "auth_id",
  "data",
  "duration_ms",
  "id",
  "ip",
  "level",
  "message",
  "method",
  "path",
  "request_id",
  "status",
  "time",
  "type",
];

/** A distinct client IP per login (the limit is 5 logins/min per IP). */
let ipSeq = 0;
function nextIp(): string {
  ipSeq++;
  return `198.51.${Math.floor(ipSeq / 250)}.${(ipSeq % 250) + 1}`;
}

/** GET /api/v1/sys/logs with query parameters. */
function getLogs(
  s: TestServer,
  token: string | undefined,
  params: Record<string, string> = {},
): Promise<Reply> {
  const qs = new URLSearchParams(params).toString();
  return s.request("GET", `${LOGS}${qs ? "?" + qs : ""}`, { token });
}

/** Checks the page shape and returns the items. */
function page(r: Reply, where: string): LogEntry[] {
  assertStatus(r, 200, where);
  assertEquals(r.body?.error, "", `${where}: error`);
  const d = r.data as Record<string, unknown>;
  assertEquals(Object.keys(d).sort(), PAGE_KEYS, `${where}: page keys`);
  const items = d.items as LogEntry[];
  assert(Array.isArray(items), `${where}: items is an array`);
  assertEquals(d.items_count, items.length, `${where}: items_count`);
  assert(typeof d.limit === "number", `${where}: limit is a number`);
  assert(items.length <= (d.limit as number), `${where}: items <= limit`);
  assert(typeof d.has_more === "boolean", `${where}: has_more boolean`);
  if (d.has_more) {
    assertEquals(
      d.cursor,
      items[items.length - 1].id,
      `${where}: cursor = last id`,
    );
  } else {
    assertEquals(d.cursor, null, `${where}: no cursor on the last page`);
  }
  for (const e of items) {
    assertEquals(Object.keys(e).sort(), ENTRY_KEYS, `${where}: entry keys`);
  }
  for (let i = 1; i < items.length; i++) {
    assert(items[i - 1].id > items[i].id, `${where}: newest first (by id)`);
  }
  return items;
}

/** Every entry matching `params`, walking all pages with `after`. */
async function walk(
  s: TestServer,
  token: string,
  params: Record<string, string>,
  limit: number,
): Promise<{ items: LogEntry[]; pages: number }> {
  const out: LogEntry[] = [];
  let after: string | null = null;
  let pages = 0;
  for (;;) {
    const q: Record<string, string> = { ...params, limit: String(limit) };
    if (after) q.after = after;
    const r = await getLogs(s, token, q);
    const items = page(r, `walk page ${pages + 1}`);
    pages++;
    out.push(...items);
    if (!r.data.has_more) break;
    assertEquals(items.length, limit, "a page with has_more is full");
    after = r.data.cursor;
    assert(pages < 1000, "walk terminates");
  }
  return { items: out, pages };
}

/** All rows of the log store (after a flush), as stored. */
async function storeRows(s: TestServer): Promise<Record<string, unknown>[]> {
  await s.app.log.flush();
  return await s.app.logs.storage.query(
    `SELECT * FROM "mb_logs" ORDER BY "id"`,
  );
}

type NewEntry = Omit<LogEntry, "id">;

/** A log entry without an id (the logger assigns ids in its own format). */
function entry(p: Partial<NewEntry>): NewEntry {
  return {
    time: new Date().toISOString(),
    level: "info",
    type: "app",
    message: "",
    method: null,
    path: null,
    status: null,
    duration_ms: null,
    ip: null,
    auth_id: null,
    auth_entity: null,
    request_id: null,
    data: null,
    ...p,
  };
}

/** Writes entries (with their own times) through the logger and the store. */
async function put(s: TestServer, entries: NewEntry[]): Promise<void> {
  for (const e of entries) s.app.log.write(e);
  await s.app.log.flush();
}

function daysAgo(d: number): string {
  return new Date(Date.now() - d * 86_400_000).toISOString();
}

async function countRows(s: TestServer): Promise<number> {
  await s.app.log.flush();
  const rows = await s.app.logs.storage.query(
    `SELECT COUNT(*) AS n FROM "mb_logs"`,
  );
  return Number(rows[0].n);
}

/** Logs in on a login route from a given client IP. */
function login(
  s: TestServer,
  path: string,
  identity: string,
  password: string,
  ip: string,
  extra: Record<string, string> = {},
): Promise<Reply> {
  return s.request("POST", path, {
    body: { identity, password },
    headers: { "x-forwarded-for": ip, ...extra },
  });
}

const ROOT_EMAIL = "root@example.com";
const ROOT_PASSWORD = "Root-Passw0rd-xyzzy-42";
const USER_EMAIL = "alice@example.com";
const USER_PASSWORD = "Alice-Secret-pw-9137";
const WRONG_PASSWORD = "Wrong-Guess-pw-5521";

forEachDb(
  "logs: access, request entries, app entries, no secrets",
  async (t, db) => {
    const s = await startServer(db, { trustProxy: true });
    try {
      const setupToken = s.app.setupToken;
      assert(setupToken, "a fresh server has a setup token");
      // First admin through the setup endpoint (a token and a password in flight).
      let r = await s.request("POST", "/api/v1/sys/admins/setup", {
        token: setupToken,
        body: { email: ROOT_EMAIL, password: ROOT_PASSWORD },
        headers: { "x-forwarded-for": nextIp() },
      });
      assertStatus(r, 201, "admin setup");
      const setupAdminToken: string = r.data.token;
      // Admin login (the app entry "admin login").
      const adminIp = nextIp();
      r = await login(
        s,
        "/api/v1/sys/admins/login",
        ROOT_EMAIL,
        ROOT_PASSWORD,
        adminIp,
      );
      assertStatus(r, 200, "admin login");
      const admin: string = r.data.token;
      const adminId: string = r.data.user.id;
      assert(typeof admin === "string" && admin.length > 20, "admin token");

      // An auth entity, a user, a real user login.
      r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: { name: "users", type: "auth", fields: [] },
      });
      assertStatus(r, 201, "create users");
      const usersId: string = r.data.id;
      r = await s.request("POST", "/api/v1/entities/users", {
        token: admin,
        body: { email: USER_EMAIL, password: USER_PASSWORD },
      });
      assertStatus(r, 201, "create user");
      const userId: string = r.data.id;
      r = await login(
        s,
        "/api/v1/auth/users/login",
        USER_EMAIL,
        USER_PASSWORD,
        nextIp(),
      );
      assertStatus(r, 200, "user login");
      const user: string = r.data.token;

      const secrets: Record<string, string> = {
        "admin password": ROOT_PASSWORD,
        "user password": USER_PASSWORD,
        "wrong password": WRONG_PASSWORD,
        "setup token": setupToken,
        "setup admin token": setupAdminToken,
        "admin token": admin,
        "admin token signature": admin.split(".")[2],
        "user token": user,
        "user token signature": user.split(".")[2],
        "JWT secret": TEST_JWT_SECRET,
        "authorization header": `Bearer ${user}`,
        "hash prefix": "scrypt$",
      };

      await t.step("GET /sys/logs is admin only", async () => {
        let r = await getLogs(s, undefined);
        assertStatus(r, 401, "guest");
        assert(r.error !== "", "guest: error message");
        assertEquals(r.data ?? null, null, "guest: no data");
        r = await getLogs(s, user);
        assertStatus(r, 403, "user");
        assert(!("items" in (r.data ?? {})), "user: no items");
        r = await getLogs(s, "not-a-token");
        assertStatus(r, 401, "bad token");
        r = await getLogs(s, admin);
        page(r, "admin");
        assert(r.data.items.length > 0, "admin sees entries");
      });

      await t.step("request entries", async () => {
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
          headers: {
            "x-request-id": "logtest-echo-404",
            "x-forwarded-for": ip,
          },
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
        let e = byRid(rid);
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

        e = byRid("logtest-echo-404");
        assertEquals(e.status, 404, "404 status");
        assertEquals(e.level, "warn", "4xx is warn");
        assertEquals(e.path, "/api/v1/entities/NoSuchEntityZq", "404 path");

        e = byRid("logtest-admin-req");
        assertEquals(e.auth_id, adminId, "admin auth_id");
        assertEquals(e.auth_entity, "mb_admins", "admin auth_entity");
        assertEquals(e.ip, "127.0.0.1", "socket peer without X-Forwarded-For");

        e = byRid("logtest-user-req");
        assertEquals(e.status, 403, "user 403");
        assertEquals(e.auth_id, userId, "user auth_id");
        assertEquals(e.auth_entity, "users", "user auth_entity");

        e = byRid("logtest-post");
        assertEquals([e.method, e.path, e.status], [
          "POST",
          "/api/v1/entities/users",
          201,
        ], "POST entry");
        assertEquals(e.data, null, "no body in a request entry");
        assertEquals(e.message, "POST /api/v1/entities/users 201", "message");
        assertEquals(e.level, "info", "level");

        assert(
          !items.some((x) => (x.path ?? "").includes("?")),
          "no path has a query string",
        );

        // Search and level filters reach a request's message and level,
        // which are made from its method, path and status when read.
        const found = page(
          await getLogs(s, admin, {
            search: "GET /api/v1/entities/nosuchentityzq 404",
            level: "warn",
          }),
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
          page(
            await getLogs(s, admin, {
              search: "GET /api/v1/entities/nosuchentityzq 404",
              level: "info",
            }),
            "level info",
          ),
          [],
          "a warn entry is not level=info",
        );
      });

      await t.step("app entries: schema created/changed/deleted", async () => {
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

      await t.step(
        "app entries: logins, failed login, rate limit",
        async () => {
          let items = page(
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

          // One failed login from its own IP.
          const failIp = nextIp();
          let r = await login(
            s,
            "/api/v1/auth/users/login",
            USER_EMAIL,
            WRONG_PASSWORD,
            failIp,
          );
          assertStatus(r, 401, "wrong password");
          items = page(
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

          // Six attempts from one IP: the sixth is limited and logged.
          const floodIp = nextIp();
          const statuses: number[] = [];
          for (let i = 0; i < 6; i++) {
            r = await login(
              s,
              "/api/v1/sys/admins/login",
              ROOT_EMAIL,
              WRONG_PASSWORD,
              floodIp,
            );
            statuses.push(r.status);
          }
          assertEquals(statuses, [401, 401, 401, 401, 401, 429], "statuses");
          items = page(
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
            r.headers.get("x-request-id"),
            "the rate-limit entry names the 429 request",
          );
          const floodFailed = page(
            await getLogs(s, admin, { search: "failed login", limit: "1000" }),
            "failed logins",
          ).filter((e) => (e.data as Record<string, unknown>)?.ip === floodIp);
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

      await t.step("app entries: a rule expression error", async () => {
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

      await t.step(
        "entries reach the store within a second, no flush",
        async () => {
          const r = await s.request("GET", "/api/v1/health", {
            headers: { "x-request-id": "logtest-batched" },
          });
          assertStatus(r, 200, "health");
          const t0 = Date.now();
          let found = false;
          while (!found && Date.now() - t0 < 1500) {
            await new Promise((res) => setTimeout(res, 100));
            const rows = await s.app.logs.storage.query(
              `SELECT "id" FROM "mb_logs" WHERE "request_id" = ?`,
              ["logtest-batched"],
            );
            found = rows.length === 1;
          }
          assert(found, "the entry was written by the background flush");
          assert(Date.now() - t0 < 1200, `written in ${Date.now() - t0} ms`);
        },
      );

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

      await t.step("no secret in any log entry", async () => {
        // Tokens in ?token= (file route) and an Authorization header.
        const qToken = `qtok-${crypto.randomUUID()}`;
        let r = await s.request(
          "GET",
          `/api/files/users/nothing.txt?token=${qToken}`,
        );
        assert(r.status >= 400, `file with bad ?token=: ${r.status}`);
        r = await s.request(
          "GET",
          `/api/files/users/nothing.txt?token=${user}`,
        );
        assert(r.status >= 400, `missing file: ${r.status}`);
        const bogus = `Bearer bogus-${crypto.randomUUID()}`;
        r = await s.request("GET", "/api/v1/schemas", {
          headers: { authorization: bogus },
        });
        assertStatus(r, 401, "bogus bearer");
        // A password in a refused body.
        r = await s.request("PATCH", `/api/v1/entities/users/${userId}`, {
          token: user,
          body: { password: USER_PASSWORD + "-new", nosuchfield: 1 },
        });
        assert(r.status >= 400, `refused patch: ${r.status}`);
        const all: Record<string, string> = {
          ...secrets,
          "query token": qToken,
          "bogus authorization": bogus,
          "new password": USER_PASSWORD + "-new",
        };
        const rows = await storeRows(s);
        assert(
          rows.length > 30,
          `enough rows to be meaningful: ${rows.length}`,
        );
        const text = JSON.stringify(rows);
        for (const [what, value] of Object.entries(all)) {
          assert(!text.includes(value), `the log store contains the ${what}`);
        }
        assert(!text.includes("eyJ"), "no JWT-looking text in the log store");
        // The API view too.
        const api = await walk(s, admin, {}, 1000);
        const apiText = JSON.stringify(api.items);
        for (const [what, value] of Object.entries(all)) {
          assert(!apiText.includes(value), `the logs API shows the ${what}`);
        }
        assert(
          api.items.some((e) => e.path === "/api/files/users/nothing.txt"),
          "the ?token= request is logged, without its query",
        );
      });

      await t.step("where the log store lives", async () => {
        if (db === "sqlite") {
          const logsDb = join(s.dataDir, "logs.db");
          assert((await Deno.stat(logsDb)).isFile, "<dataDir>/logs.db exists");
          assert(
            s.app.logs.storage !== s.app.storage,
            "log storage is not the data storage",
          );
          const data = await s.app.storage.query(
            `SELECT name FROM sqlite_master WHERE name = 'mb_logs'`,
          );
          assertEquals(data.length, 0, "moonbase.db has no mb_logs table");
          await s.app.log.flush();
          const raw = new DatabaseSync(logsDb, { readOnly: true });
          try {
            const row = raw.prepare(`SELECT COUNT(*) AS n FROM "mb_logs"`)
              .get() as { n: number };
            assert(Number(row.n) > 10, `logs.db holds the entries: ${row.n}`);
          } finally {
            raw.close();
          }
          const main = new DatabaseSync(join(s.dataDir, "moonbase.db"), {
            readOnly: true,
          });
          try {
            const tables = main.prepare(
              `SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'mb_logs'`,
            ).all();
            assertEquals(tables.length, 0, "no mb_logs in moonbase.db (file)");
          } finally {
            main.close();
          }
        } else {
          const rows = await s.app.storage.query(
            `SELECT COUNT(*) AS n FROM "mb_logs"`,
          );
          assert(Number(rows[0].n) > 10, "mb_logs holds entries on PostgreSQL");
        }
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb("logs: filters, limit, cursor", async (t, db) => {
  const s = await startServer(db, { logLevel: "trace" });
  try {
    const admin = await s.adminToken();
    // Real traffic: 2xx and 4xx request entries.
    for (let i = 0; i < 3; i++) {
      assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
    }
    assertStatus(
      await s.request("GET", "/api/v1/entities/nothing_here"),
      404,
      "404",
    );
    const now = Date.now();
    const entries: NewEntry[] = [
      ...(["trace", "debug", "info", "warn", "error"] as const).map((level) =>
        entry({ level, message: `fxlvl ${level}` })
      ),
      entry({ message: "fxs 100% done" }),
      entry({ message: "fxs 100 percent" }),
      entry({ message: "fxs a_b" }),
      entry({ message: "fxs axb" }),
      entry({ message: "fxs back\\slash" }),
      entry({ message: "fxs backslash" }),
      entry({ message: "FXS MiXeD CaSe" }),
      entry({
        type: "request",
        level: "warn",
        message: "unrelated",
        method: "GET",
        path: "/zz/FxOnlyInPath",
        status: 404,
        duration_ms: 1.5,
      }),
      entry({
        message: "fxdate old",
        time: new Date(now - 3 * 86_400_000).toISOString(),
      }),
      entry({
        message: "fxdate mid",
        time: new Date(now - 1 * 86_400_000).toISOString(),
      }),
      entry({ message: "fxdate new", time: new Date(now).toISOString() }),
    ];
    for (let i = 0; i < 120; i++) {
      entries.push(entry({
        message: `fxbulk ${i}`,
        level: i % 3 === 0 ? "warn" : "info",
      }));
    }
    await put(s, entries);
    const messages = (items: LogEntry[]) => items.map((e) => e.message);

    await t.step("limit: default 50, bounds, 400s", async () => {
      let items = page(await getLogs(s, admin), "default");
      let r = await getLogs(s, admin);
      assertEquals(r.data.limit, 50, "default limit");
      assertEquals(items.length, 50, "default page is full");
      assertEquals(r.data.has_more, true, "more than 50 entries");
      r = await getLogs(s, admin, { limit: "1" });
      items = page(r, "limit 1");
      assertEquals([items.length, r.data.limit], [1, 1], "limit 1");
      r = await getLogs(s, admin, { limit: "1000" });
      items = page(r, "limit 1000");
      assertEquals(r.data.limit, 1000, "limit 1000");
      assert(items.length > 140, `all entries: ${items.length}`);
      assertEquals(r.data.has_more, false, "all fit");
      for (const bad of ["0", "1001", "abc", "-1", "1.5", "10abc", "99999"]) {
        r = await getLogs(s, admin, { limit: bad });
        assertStatus(r, 400, `limit=${bad}`);
        assert(r.error !== "", `limit=${bad}: error message`);
      }
    });

    await t.step("unknown parameters are 400", async () => {
      for (const p of ["foo", "page", "sort", "offset", "filter"]) {
        const r = await getLogs(s, admin, { [p]: "1" });
        assertStatus(r, 400, `unknown parameter ${p}`);
        assert(r.error.length > 0, "error message");
      }
    });

    await t.step("level and min_level", async () => {
      const lv = (p: Record<string, string>) =>
        getLogs(s, admin, { search: "fxlvl", ...p }).then((r) =>
          messages(page(r, JSON.stringify(p)))
        );
      assertEquals(await lv({}), [
        "fxlvl error",
        "fxlvl warn",
        "fxlvl info",
        "fxlvl debug",
        "fxlvl trace",
      ], "all levels, newest first");
      assertEquals(await lv({ level: "warn" }), ["fxlvl warn"], "level=warn");
      assertEquals(await lv({ level: "trace" }), ["fxlvl trace"], "trace");
      assertEquals(
        await lv({ min_level: "warn" }),
        ["fxlvl error", "fxlvl warn"],
        "min_level=warn",
      );
      assertEquals(
        await lv({ min_level: "debug" }),
        ["fxlvl error", "fxlvl warn", "fxlvl info", "fxlvl debug"],
        "min_level=debug",
      );
      assertEquals((await lv({ min_level: "trace" })).length, 5, "trace+");
      assertEquals(await lv({ min_level: "error" }), ["fxlvl error"], "error");
      assertEquals(
        await lv({ level: "info", min_level: "warn" }),
        [],
        "level and min_level combine",
      );
      // Unfiltered by search: every item has the level asked for.
      let items = page(
        await getLogs(s, admin, { level: "warn", limit: "1000" }),
        "all warn",
      );
      assert(items.length >= 42, `warn entries: ${items.length}`);
      assert(items.every((e) => e.level === "warn"), "only warn");
      assert(
        items.some((e) =>
          e.type === "request" && e.path === "/api/v1/entities/nothing_here"
        ),
        "the real 404 is a warn entry",
      );
      items = page(
        await getLogs(s, admin, { min_level: "warn", limit: "1000" }),
        "warn+",
      );
      assert(
        items.every((e) => e.level === "warn" || e.level === "error"),
        "only warn and error",
      );
      assert(items.some((e) => e.level === "error"), "error included");
      for (const bad of ["WARN", "fatal", "4", "warning"]) {
        assertStatus(
          await getLogs(s, admin, { level: bad }),
          400,
          `level=${bad}`,
        );
        assertStatus(
          await getLogs(s, admin, { min_level: bad }),
          400,
          `min_level=${bad}`,
        );
      }
    });

    await t.step("type", async () => {
      let items = page(
        await getLogs(s, admin, { type: "request", limit: "1000" }),
        "request",
      );
      assert(items.length >= 5, `request entries: ${items.length}`);
      assert(items.every((e) => e.type === "request"), "only request");
      assert(
        items.some((e) => e.path === "/api/v1/health" && e.status === 200),
        "a health request",
      );
      items = page(
        await getLogs(s, admin, { type: "app", limit: "1000" }),
        "app",
      );
      assert(items.length >= 135, `app entries: ${items.length}`);
      assert(items.every((e) => e.type === "app"), "only app");
      assertEquals(
        messages(page(
          await getLogs(s, admin, { type: "request", search: "fxlvl" }),
          "request fxlvl",
        )),
        [],
        "no request entry among fxlvl",
      );
      for (const bad of ["other", "REQUEST", "apps", "all"]) {
        assertStatus(await getLogs(s, admin, { type: bad }), 400, bad);
      }
    });

    await t.step("search: case-insensitive, % and _ literal", async () => {
      const se = (search: string) =>
        getLogs(s, admin, { search, limit: "1000" }).then((r) =>
          messages(page(r, `search ${search}`))
        );
      assertEquals(await se("fxs 100%"), ["fxs 100% done"], "% is literal");
      assertEquals(await se("fxs a_b"), ["fxs a_b"], "_ is literal");
      assertEquals(await se("k\\s"), ["fxs back\\slash"], "\\ is literal");
      assertEquals(
        await se("fxs mixed case"),
        ["FXS MiXeD CaSe"],
        "lower query, mixed entry",
      );
      assertEquals(
        await se("FXS MIXED CASE"),
        ["FXS MiXeD CaSe"],
        "upper query",
      );
      assertEquals(await se("fxonlyinpath"), ["unrelated"], "path matched");
      assertEquals(await se("no such text qq"), [], "no match");
      const pct = await se("%");
      assert(pct.includes("fxs 100% done"), "% finds the % entry");
      assert(pct.every((m) => m.includes("%")), `only % entries: ${pct}`);
      const us = page(
        await getLogs(s, admin, { search: "_", limit: "1000" }),
        "_",
      );
      assert(
        us.every((e) =>
          e.message.includes("_") || (e.path ?? "").includes("_")
        ),
        "only entries with _",
      );
      assert(us.some((e) => e.message === "fxs a_b"), "_ finds a_b");
      assert(!us.some((e) => e.message === "fxs axb"), "_ is no wildcard");
      assertEquals(
        (await se("fxs")).length,
        7,
        "seven fxs entries (search on the message)",
      );
      assertStatus(
        await getLogs(s, admin, { search: "x".repeat(201) }),
        400,
        "search too long",
      );
    });

    await t.step("start_date / end_date", async () => {
      const de = (p: Record<string, string>) =>
        getLogs(s, admin, { search: "fxdate", ...p }).then((r) =>
          messages(page(r, JSON.stringify(p)))
        );
      const iso = (ms: number) => new Date(now + ms).toISOString();
      const day = 86_400_000;
      assertEquals(
        await de({}),
        ["fxdate new", "fxdate mid", "fxdate old"],
        "all",
      );
      assertEquals(
        await de({ start_date: iso(-2 * day) }),
        ["fxdate new", "fxdate mid"],
        "start_date",
      );
      assertEquals(
        await de({ end_date: iso(-2 * day) }),
        ["fxdate old"],
        "end_date",
      );
      assertEquals(
        await de({ start_date: iso(-2.5 * day), end_date: iso(-0.5 * day) }),
        ["fxdate mid"],
        "both",
      );
      assertEquals(
        await de({ start_date: iso(day) }),
        [],
        "start in the future",
      );
      const dateOnly = new Date(now - 2 * day).toISOString().slice(0, 10);
      assertEquals(
        await de({ start_date: dateOnly }),
        ["fxdate new", "fxdate mid"],
        `date only ${dateOnly}`,
      );
      const offset = new Date(now - 2 * day).toISOString().replace(
        "Z",
        "+00:00",
      );
      assertEquals(
        await de({ start_date: offset }),
        ["fxdate new", "fxdate mid"],
        "explicit offset",
      );
      for (
        const bad of [
          "yesterday",
          "abc",
          "2024-13-45",
          "12/31/2024",
          "1700000000",
          "2024-02-30T25:00:00Z",
        ]
      ) {
        assertStatus(
          await getLogs(s, admin, { start_date: bad }),
          400,
          `start_date=${bad}`,
        );
        assertStatus(
          await getLogs(s, admin, { end_date: bad }),
          400,
          `end_date=${bad}`,
        );
      }
    });

    await t.step("after: all pages, newest first, no gaps", async () => {
      const { items, pages } = await walk(s, admin, { search: "fxbulk" }, 7);
      assertEquals(pages, 18, "ceil(120 / 7) pages");
      assertEquals(items.length, 120, "all bulk entries");
      assertEquals(
        messages(items),
        Array.from({ length: 120 }, (_, i) => `fxbulk ${119 - i}`),
        "every entry once, newest first",
      );
      // With another filter.
      const warn = await walk(s, admin, { search: "fxbulk", level: "warn" }, 9);
      assertEquals(
        messages(warn.items),
        Array.from({ length: 40 }, (_, i) => `fxbulk ${117 - 3 * i}`),
        "filtered walk",
      );
      // Unfiltered: every entry that existed before the walk is seen once.
      const before = page(
        await getLogs(s, admin, { limit: "1000" }),
        "snapshot",
      );
      const all = await walk(s, admin, {}, 13);
      const ids = all.items.map((e) => e.id);
      assertEquals(new Set(ids).size, ids.length, "no duplicates");
      const seen = new Set(ids);
      const missing = before.filter((e) => !seen.has(e.id));
      assertEquals(missing.map((e) => e.message), [], "no gaps");
      // A cursor from a page keeps filters independent.
      const first = await getLogs(s, admin, { search: "fxbulk", limit: "5" });
      const next = page(
        await getLogs(s, admin, {
          search: "fxbulk",
          limit: "5",
          after: first.data.cursor,
        }),
        "page 2",
      );
      assertEquals(
        messages(next),
        ["fxbulk 114", "fxbulk 113", "fxbulk 112", "fxbulk 111", "fxbulk 110"],
        "second page",
      );
      for (const bad of ["xyz", "1", "'; DROP TABLE mb_logs; --"]) {
        assertStatus(
          await getLogs(s, admin, { after: bad }),
          400,
          `after=${bad}`,
        );
      }
      // The oldest entry's cursor: an empty last page.
      const last = all.items[all.items.length - 1];
      const empty = await getLogs(s, admin, { after: last.id });
      assertEquals(page(empty, "after oldest").length, 0, "nothing older");
      assertEquals(empty.data.has_more, false, "no more");
    });
  } finally {
    await s.close();
  }
});

forEachDb("logs: retention by rows and by age", async (t, db) => {
  const s = await startServer(db, { logMaxRows: 100 });
  let reopened: TestServer | undefined;
  try {
    await t.step("logMaxRows keeps the newest ~100", async () => {
      for (let i = 0; i < 4; i++) {
        await Promise.all(
          Array.from({ length: 10 }, () => s.request("GET", "/api/v1/health")),
        );
      }
      const bulk = Array.from(
        { length: 120 },
        (_, i) => entry({ message: `rt bulk ${i}` }),
      );
      await put(s, bulk);
      await s.app.log.flush();
      const before = await countRows(s);
      assert(before >= 160, `more than 100 entries before pruning: ${before}`);
      await s.app.logs.prune(7, 100);
      const after = await countRows(s);
      assert(after <= 100 && after >= 90, `about 100 remain: ${after}`);
      const rows = await storeRows(s);
      const msgs = new Set(rows.map((r) => String(r.message)));
      assert(msgs.has("rt bulk 119"), "the newest entry is kept");
      assert(msgs.has("rt bulk 30"), "the newest 90 bulk entries are kept");
      assert(!msgs.has("rt bulk 0"), "the oldest bulk entry is pruned");
      assert(
        !rows.some((r) => r.type === "request"),
        "the older request entries are pruned",
      );
    });

    await t.step("entries older than the retention are pruned", async () => {
      await put(s, [
        entry({ message: "rt old 1", time: daysAgo(10) }),
        entry({ message: "rt old 2", time: daysAgo(30), level: "error" }),
        entry({ message: "rt recent 6d", time: daysAgo(6) }),
        entry({ message: "rt now" }),
      ]);
      let msgs = (await storeRows(s)).map((r) => String(r.message));
      assert(msgs.includes("rt old 1"), "old entry inserted");
      // Age only here: the row cap keeps the newest entries by time, which
      // would also drop the 6-day-old one among 100+ newer rows.
      await s.app.logs.prune(7, 100_000);
      msgs = (await storeRows(s)).map((r) => String(r.message));
      assert(!msgs.includes("rt old 1"), "10 days old: pruned");
      assert(!msgs.includes("rt old 2"), "30 days old: pruned");
      assert(msgs.includes("rt recent 6d"), "6 days old: kept");
      assert(msgs.includes("rt now"), "new: kept");
      // Through the API as well.
      const r = await getLogs(s, await s.adminToken(), {
        search: "rt old",
      });
      assertEquals(page(r, "api").length, 0, "the API shows no pruned entry");
    });

    await t.step("a restart prunes old entries", async () => {
      await put(s, [
        entry({ message: "rt stale", time: daysAgo(9) }),
      ]);
      assert(
        (await storeRows(s)).some((r) => r.message === "rt stale"),
        "stale entry inserted",
      );
      const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
      reopened = await startServer(db, {
        logMaxRows: 100_000,
        ...(db === "sqlite"
          ? { dataDir: s.dataDir }
          : { connection: s.connection, dataDir }),
      });
      // Both instances now share the store (PostgreSQL) or the file (SQLite).
      const rows = await storeRows(reopened);
      assert(
        !rows.some((r) => r.message === "rt stale"),
        "start-up prune removed the stale entry",
      );
      assert(
        rows.some((r) => r.message === "rt recent 6d"),
        "start-up prune kept the recent entry",
      );
    });
  } finally {
    if (reopened) {
      await reopened.close();
      if (db === "postgres") {
        await Deno.remove(reopened.dataDir, { recursive: true }).catch(
          () => {},
        );
      }
    }
    await s.close();
  }
});

forEachDb("logs: logLevel warn keeps 2xx requests out", async (_t, db) => {
  const s = await startServer(db, { logLevel: "warn", trustProxy: true });
  try {
    const admin = await s.adminToken();
    for (let i = 0; i < 5; i++) {
      assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
    }
    let r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: { name: "lvl_posts", type: "base", fields: [] },
    });
    assertStatus(r, 201, "schema created");
    r = await s.request("GET", "/api/v1/entities/lvl_missing", {
      headers: { "x-request-id": "lvl-404" },
    });
    assertStatus(r, 404, "404");
    r = await login(
      s,
      "/api/v1/sys/admins/login",
      "admin@example.com",
      WRONG_PASSWORD,
      nextIp(),
    );
    assertStatus(r, 401, "failed login");
    r = await getLogs(s, admin, { limit: "1000" });
    const items = page(r, "warn server");
    const rows = await storeRows(s);
    assertEquals(rows.length, items.length, "API shows the whole store");
    assert(
      !rows.some((x) => x.status !== null && Number(x.status) < 400),
      "no 2xx/3xx request entry stored",
    );
    assert(
      // Stored ranks (request rows store no level name): warn 3, error 4.
      rows.every((x) => Number(x.level_n) >= 3),
      `only warn/error: ${rows.map((x) => x.level_n)}`,
    );
    assert(
      !rows.some((x) => x.message === "schema created"),
      "info app entries are not stored",
    );
    const e404 = items.find((e) => e.request_id === "lvl-404");
    assert(e404, "the 404 is stored");
    assertEquals([e404.level, e404.status], ["warn", 404], "404 entry");
    assert(
      items.some((e) => e.message === "failed login"),
      "a failed login (warn) is stored",
    );
  } finally {
    await s.close();
  }
});
