/**
 * No secret reaches the log store or the logs API: passwords (right, wrong,
 * new), the setup token, tokens in headers and in `?token=`, token
 * signatures, the JWT secret and password hashes — after real traffic that
 * carries every one of them (admin setup, logins, failed logins, signup,
 * authenticated requests, refused bodies).
 *
 * @module
 */

import {
  assert,
  assertStatus,
  forEachDb,
  startServer,
  TEST_JWT_SECRET,
} from "./_server.ts";
import {
  getLogs,
  login,
  LOGS,
  nextIp,
  ROOT_EMAIL,
  ROOT_PASSWORD,
  storeRows,
  USER_EMAIL,
  USER_PASSWORD,
  walk,
  WRONG_PASSWORD,
} from "./_logs_fixtures.ts";

forEachDb("logs: no secret in any log entry", async (_t, db) => {
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
    r = await login(
      s,
      "/api/v1/sys/admins/login",
      ROOT_EMAIL,
      ROOT_PASSWORD,
      nextIp(),
    );
    assertStatus(r, 200, "admin login");
    const admin: string = r.data.token;
    assert(typeof admin === "string" && admin.length > 20, "admin token");

    // An auth entity, a user created through the API, a real user login.
    r = await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: { name: "users", type: "auth", fields: [] },
    });
    assertStatus(r, 201, "create users");
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

    // Failed logins with a wrong password, on both login routes.
    r = await login(
      s,
      "/api/v1/auth/users/login",
      USER_EMAIL,
      WRONG_PASSWORD,
      nextIp(),
    );
    assertStatus(r, 401, "wrong user password");
    r = await login(
      s,
      "/api/v1/sys/admins/login",
      ROOT_EMAIL,
      WRONG_PASSWORD,
      nextIp(),
    );
    assertStatus(r, 401, "wrong admin password");

    // Authenticated requests with every token in the Authorization header.
    // Admins are let in; a user is refused (403): both kinds are logged.
    const callers: [string, string, number][] = [
      ["admin", admin, 200],
      ["setup admin", setupAdminToken, 200],
      ["user", user, 403],
    ];
    for (const [who, token, status] of callers) {
      for (let i = 0; i < 5; i++) {
        r = await s.request("GET", "/api/v1/schemas", { token });
        assertStatus(r, status, `schemas as ${who}`);
        r = await s.request("GET", LOGS, { token });
        assertStatus(r, status, `logs as ${who}`);
      }
    }
    assertStatus(await getLogs(s, "not-a-token"), 401, "bad token");

    // Tokens in ?token= (file route) and a bogus Authorization header.
    const qToken = `qtok-${crypto.randomUUID()}`;
    r = await s.request("GET", `/api/files/users/nothing.txt?token=${qToken}`);
    assert(r.status >= 400, `file with bad ?token=: ${r.status}`);
    r = await s.request("GET", `/api/files/users/nothing.txt?token=${user}`);
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
      "query token": qToken,
      "bogus authorization": bogus,
      "new password": USER_PASSWORD + "-new",
    };
    const rows = await storeRows(s);
    assert(rows.length > 30, `enough rows to be meaningful: ${rows.length}`);
    const text = JSON.stringify(rows);
    for (const [what, value] of Object.entries(secrets)) {
      assert(!text.includes(value), `the log store contains the ${what}`);
    }
    assert(!text.includes("eyJ"), "no JWT-looking text in the log store");
    // The API view too.
    const api = await walk(s, admin, {}, 1000);
    const apiText = JSON.stringify(api.items);
    for (const [what, value] of Object.entries(secrets)) {
      assert(!apiText.includes(value), `the logs API shows the ${what}`);
    }
    assert(
      api.items.some((e) => e.path === "/api/files/users/nothing.txt"),
      "the ?token= request is logged, without its query",
    );
  } finally {
    await s.close();
  }
});
