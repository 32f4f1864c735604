/**
 * No secret leaks: a realistic flow on every
 * database (first-admin setup, signups, logins and failed logins, a unique
 * violation with a password in the body, password changes, schema changes,
 * reads), collecting every response (body and headers) and every log entry
 * (through `GET /api/v1/sys/logs`), then asserting none carries a password,
 * a password hash, the JWT secret, the setup token or an issued token.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  type Call,
  forEachDb,
  type Reply,
  startServer,
  TEST_JWT_SECRET,
} from "./_server.ts";

/** Every password the flow sends (valid or not). */
const PW = {
  admin: "Adm1n-Secret-Pw-42",
  adminWrong: "Adm1n-Wr0ng-Pw-43",
  admin2: "Sec0nd-Admin-Pw-44",
  admin2Dup: "Dup-Admin-Pw-45x",
  admin2New: "Sec0nd-Changed-Pw-46",
  user: "Us3r-First-Pw-77",
  userWrong: "Wr0ng-Guess-Pw-13",
  userWrong2: "An0ther-Guess-Pw-14",
  dup: "Dup1icate-Pw-55",
  short: "Sh0rt7!",
  userNew: "N3w-Changed-Pw-99",
  unknownField: "Unkn0wn-Field-Pw-31",
  rawBody: "RawB0dy-Broken-Pw-32",
  legacy: "Leg4cy-Wrong-Pw-33",
};

interface Seen {
  label: string;
  text: string;
  headers: string;
  /** The token this very reply issued (allowed in its own body). */
  issued?: string;
}

forEachDb(
  "secrets: no password, hash, secret or token in replies or logs",
  async (t, db) => {
    const s = await startServer(db, { trustProxy: true });
    const seen: Seen[] = [];
    const tokens = new Set<string>();
    let ip = 0;
    const call = async (
      label: string,
      method: string,
      path: string,
      c: Call = {},
    ): Promise<Reply> => {
      const r = await s.request(method, path, {
        ...c,
        headers: { "x-forwarded-for": `10.9.0.${++ip}`, ...c.headers },
      });
      const issued = typeof r.data?.token === "string"
        ? r.data.token
        : undefined;
      if (issued) tokens.add(issued);
      seen.push({
        label: `${label} (${method} ${path.split("?")[0]} → ${r.status})`,
        text: r.text,
        headers: JSON.stringify([...r.headers]),
        issued,
      });
      return r;
    };
    try {
      const setupToken = s.app.setupToken;
      assert(setupToken, "a fresh server has a setup token");
      let admin = "", user = "", userId = "";

      await t.step("run the flow", async () => {
        // First admin through the setup token, then login and a failed login.
        let r = await call("setup", "POST", "/api/v1/sys/admins/setup", {
          token: setupToken,
          body: { email: "root@example.com", password: PW.admin },
        });
        assertStatus(r, 201);
        r = await call("setup again", "POST", "/api/v1/sys/admins/setup", {
          token: setupToken,
          body: { email: "root2@example.com", password: PW.admin },
        });
        assertStatus(r, 403);
        r = await call("admin login", "POST", "/api/v1/sys/admins/login", {
          body: { identity: "root@example.com", password: PW.admin },
        });
        assertStatus(r, 200);
        admin = r.data.token;
        r = await call(
          "admin login wrong",
          "POST",
          "/api/v1/sys/admins/login",
          {
            body: { identity: "root@example.com", password: PW.adminWrong },
          },
        );
        assertStatus(r, 401);

        // Schema.
        r = await call("create users", "POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "users",
            type: "auth",
            fields: [{ name: "name", type: "string" }],
            rules: {
              add: { mode: "public", expr: "" },
              get: { mode: "auth", expr: "" },
              list: { mode: "auth", expr: "" },
              update: { mode: "custom", expr: "record.id == auth.id" },
            },
          },
        });
        assertStatus(r, 201);

        // Signups: good, short password, unique violation, unknown field.
        r = await call("signup", "POST", "/api/v1/entities/users", {
          body: { email: "ada@example.com", password: PW.user, name: "Ada" },
        });
        assertStatus(r, 201);
        userId = r.data.id;
        r = await call("signup short", "POST", "/api/v1/entities/users", {
          body: { email: "short@example.com", password: PW.short },
        });
        assertStatus(r, 400);
        r = await call("signup duplicate", "POST", "/api/v1/entities/users", {
          body: { email: "ADA@example.com", password: PW.dup, name: "Dup" },
        });
        assertStatus(r, 409);
        r = await call(
          "signup unknown field",
          "POST",
          "/api/v1/entities/users",
          {
            body: {
              email: "unk@example.com",
              password: PW.unknownField,
              nope: PW.unknownField,
            },
          },
        );
        assertStatus(r, 400);
        r = await call("broken JSON", "POST", "/api/v1/entities/users", {
          raw: `{"email":"raw@example.com","password":"${PW.rawBody}",`,
          headers: { "content-type": "application/json" },
        });
        assertStatus(r, 400);
        r = await call("wrong type", "POST", "/api/v1/entities/users", {
          body: { email: "typ@example.com", password: PW.rawBody, name: 5 },
        });
        assertStatus(r, 400);

        // Logins: good, wrong (twice), legacy good and wrong, unknown user.
        r = await call("login", "POST", "/api/v1/auth/users/login", {
          body: { identity: "ada@example.com", password: PW.user },
        });
        assertStatus(r, 200);
        user = r.data.token;
        for (const pw of [PW.userWrong, PW.userWrong2]) {
          r = await call("login wrong", "POST", "/api/v1/auth/users/login", {
            body: { identity: "ada@example.com", password: pw },
          });
          assertStatus(r, 401);
        }
        r = await call("login unknown", "POST", "/api/v1/auth/users/login", {
          body: { identity: "ghost@example.com", password: PW.userWrong },
        });
        assertStatus(r, 401);
        r = await call("legacy login", "POST", "/api/v1/auth/login", {
          body: { entity: "users", identity: userId, password: PW.user },
        });
        assertStatus(r, 200);
        r = await call("legacy wrong", "POST", "/api/v1/auth/login", {
          body: { entity: "users", identity: userId, password: PW.legacy },
        });
        assertStatus(r, 401);
        r = await call("login 404", "POST", "/api/v1/auth/nope/login", {
          body: { identity: "ada@example.com", password: PW.user },
        });
        assertStatus(r, 404);

        // Reads.
        r = await call("list", "GET", "/api/v1/entities/users?count=true", {
          token: user,
        });
        assertStatus(r, 200);
        assertEquals(r.data.total, 1);
        r = await call("get", "GET", `/api/v1/entities/users/${userId}`, {
          token: user,
        });
        assertStatus(r, 200);
        r = await call("admin list", "GET", "/api/v1/entities/users", {
          token: admin,
        });
        assertStatus(r, 200);
        r = await call(
          "filter on password",
          "GET",
          `/api/v1/entities/users?filter=${
            encodeURIComponent(`password == "${PW.user}"`)
          }`,
          { token: admin },
        );
        assertStatus(r, 400);
        r = await call(
          "sort on password",
          "GET",
          "/api/v1/entities/users?sort=password",
          {
            token: admin,
          },
        );
        assertStatus(r, 400);
        r = await call(
          "file with ?token=",
          "GET",
          `/api/files/users/nothing.png?token=${user}`,
        );
        assertStatus(r, 404);

        // Password changes.
        r = await call(
          "patch short",
          "PATCH",
          `/api/v1/entities/users/${userId}`,
          {
            token: user,
            body: { password: PW.short, oldPassword: PW.user },
          },
        );
        assertStatus(r, 400);
        r = await call(
          "patch password",
          "PATCH",
          `/api/v1/entities/users/${userId}`,
          {
            token: user,
            body: {
              password: PW.userNew,
              name: "Ada L.",
              oldPassword: PW.user,
            },
          },
        );
        assertStatus(r, 200);
        r = await call("login new", "POST", "/api/v1/auth/users/login", {
          body: { identity: "ada@example.com", password: PW.userNew },
        });
        assertStatus(r, 200);
        const newer = r.data.token;
        r = await call("login old", "POST", "/api/v1/auth/users/login", {
          body: { identity: "ada@example.com", password: PW.user },
        });
        assertStatus(r, 401);

        // Refresh, logout, a revoked token.
        r = await call("refresh", "POST", "/api/v1/auth/users/refresh", {
          token: newer,
        });
        assertStatus(r, 200);
        const refreshed = r.data.token;
        r = await call(
          "revoked use",
          "GET",
          `/api/v1/entities/users/${userId}`,
          {
            token: newer,
          },
        );
        assertStatus(r, 401);
        r = await call("logout", "POST", "/api/v1/auth/users/logout", {
          token: refreshed,
        });
        assertStatus(r, 200);
        r = await call("after logout", "POST", "/api/v1/auth/users/logout", {
          token: refreshed,
        });
        assertStatus(r, 401);
        r = await call("bad token", "GET", `/api/v1/entities/users/${userId}`, {
          token: `${refreshed.slice(0, -4)}AAAA`,
        });
        assertStatus(r, 401);

        // Schema changes.
        r = await call("add field", "PATCH", "/api/v1/schemas/users", {
          token: admin,
          body: { fields: [{ name: "bio", type: "text" }] },
        });
        assertStatus(r, 200);
        r = await call("schemas", "GET", "/api/v1/schemas", { token: admin });
        assertStatus(r, 200);
        r = await call("admins schema", "GET", "/api/v1/schemas/mb_admins", {
          token: admin,
        });
        assertStatus(r, 200);
        r = await call("bad rule", "PATCH", "/api/v1/schemas/users", {
          token: admin,
          body: { rules: { list: { mode: "custom", expr: "auth.id = 1" } } },
        });
        assertStatus(r, 400);

        // Admin management.
        r = await call("admin create", "POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "second@example.com", password: PW.admin2 },
        });
        assertStatus(r, 201);
        const second = r.data.id;
        r = await call("admin duplicate", "POST", "/api/v1/sys/admins", {
          token: admin,
          body: { email: "SECOND@example.com", password: PW.admin2Dup },
        });
        assertStatus(r, 409);
        r = await call(
          "admin patch password",
          "PATCH",
          `/api/v1/sys/admins/${second}`,
          {
            token: admin,
            body: { password: PW.admin2New },
          },
        );
        assertStatus(r, 200);
        r = await call("admins list", "GET", "/api/v1/sys/admins", {
          token: admin,
        });
        assertStatus(r, 200);
        r = await call("admin get", "GET", `/api/v1/sys/admins/${second}`, {
          token: admin,
        });
        assertStatus(r, 200);
        r = await call("admin login 2", "POST", "/api/v1/sys/admins/login", {
          body: { identity: "second@example.com", password: PW.admin2New },
        });
        assertStatus(r, 200);
        r = await call("admin refresh", "POST", "/api/v1/sys/admins/refresh", {
          token: r.data.token,
        });
        assertStatus(r, 200);
      });

      await t.step("nothing secret in any reply or log entry", async () => {
        const r = await s.request("GET", "/api/v1/sys/logs?limit=1000", {
          token: admin,
        });
        assertStatus(r, 200);
        const items: Record<string, unknown>[] = r.data.items;
        assertEquals(r.data.has_more, false, "every entry in one page");
        // The logs are not empty: the flow is in them.
        const messages = items.map((e) => String(e.message));
        assert(
          messages.some((m) => m.includes("failed login")),
          "failed logins are logged",
        );
        assert(
          items.filter((e) => e.type === "request").length >= seen.length - 2,
          `request entries: ${items.length} for ${seen.length} requests`,
        );
        assert(
          items.some((e) => String(e.path) === "/api/files/users/nothing.png"),
          "the file request is logged (without its query string)",
        );
        // The stored hashes, without their "scrypt$" prefix.
        const hashes: string[] = [];
        for (const table of ["users", "mb_admins"]) {
          for (
            const row of await s.app.storage.query(
              `SELECT "password" FROM "${table}"`,
            )
          ) {
            const h = String(row.password);
            assert(h.startsWith("scrypt$"), `stored hash format in ${table}`);
            hashes.push(...h.split("$").slice(4));
          }
        }
        assert(hashes.length >= 6, "hash parts collected");
        assert(tokens.size >= 8, `tokens collected: ${tokens.size}`);
        const always = [
          ...Object.values(PW),
          "scrypt$",
          TEST_JWT_SECRET,
          setupToken,
          ...hashes,
        ];
        const leaks: string[] = [];
        for (const x of seen) {
          const forbidden = [
            ...always,
            ...[...tokens].filter((tok) => tok !== x.issued),
          ];
          for (const secret of forbidden) {
            if (x.text.includes(secret)) {
              leaks.push(`${x.label} body: ${secret.slice(0, 24)}…`);
            }
            if (x.headers.includes(secret)) {
              leaks.push(`${x.label} headers: ${secret.slice(0, 24)}…`);
            }
          }
        }
        const forbiddenInLogs = [...always, ...tokens];
        for (const e of items) {
          const text = JSON.stringify(e);
          for (const secret of forbiddenInLogs) {
            if (text.includes(secret)) {
              leaks.push(`log ${text.slice(0, 160)}: ${secret.slice(0, 24)}…`);
            }
          }
        }
        // The logs API reply itself (the body we just scanned entry by entry).
        for (const secret of forbiddenInLogs) {
          if (r.text.includes(secret)) {
            leaks.push(`logs reply: ${secret.slice(0, 24)}…`);
          }
        }
        assertEquals(leaks, [], "leaks");
      });
    } finally {
      await s.close();
    }
  },
);
