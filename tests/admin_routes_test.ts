/**
 * Every admin-only route refuses guests (401) and users (403) before its
 * handler runs, and no route under the admin prefixes escapes that list:
 * the router's own route list is audited, so a new route must be declared
 * public here on purpose.
 */
import assert from "node:assert/strict";
import { buildRouter } from "../routes/mod.ts";
import { forEachDb, seedUser, startServer } from "./_server.ts";

/** Routes under the admin prefixes that are public by design. */
const PUBLIC = new Set([
  "POST /api/v1/sys/admins/setup",
  "GET /api/v1/sys/admins/setup",
  "POST /api/v1/sys/admins/login",
  "POST /api/v1/sys/admins/refresh",
  "POST /api/v1/sys/admins/logout",
]);

const ADMIN_PREFIXES = ["/api/v1/sys/", "/api/v1/schemas"];

forEachDb("admin-only routes", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();
    await s.request("POST", "/api/v1/schemas", {
      token: admin,
      body: { name: "members", type: "auth", fields: [] },
    });
    await seedUser(s, "members", { email: "m@example.com" }, "member-pass-1");
    const login = await s.request("POST", "/api/v1/auth/members/login", {
      body: { identity: "m@example.com", password: "member-pass-1" },
    });
    const user = login.data.token as string;
    const guarded = [...buildRouter(s.app).routes()]
      .filter(([m, p]) =>
        ADMIN_PREFIXES.some((x) => p.startsWith(x)) && !PUBLIC.has(`${m} ${p}`)
      )
      .map(([m, p]) => [m, p.replaceAll(/:\w+/g, "x")] as const);
    assert.ok(guarded.length >= 17, `found ${guarded.length}`);
    for (const [method, path] of guarded) {
      await t.step(`${method} ${path}`, async () => {
        // A body the handler would reject: the guard must answer first.
        const body = method === "GET" || method === "DELETE" ? undefined : {};
        const guest = await s.request(method, path, { body });
        assert.equal(guest.status, 401, `guest: ${guest.text}`);
        const asUser = await s.request(method, path, { body, token: user });
        assert.equal(asUser.status, 403, `user: ${asUser.text}`);
      });
    }
  } finally {
    await s.close();
  }
});
