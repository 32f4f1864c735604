/**
 * A client hammering a throttled route gets one application log line per
 * window, not one per refused request (each refusal is in the request log
 * already): the application log cannot be flooded through a 429.
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";
import { createEntity } from "./_scenarios.ts";

forEachDb("ratelimit: one log line per throttled window", async (t, db) => {
  const s = await startServer(db, { logLevel: "info" });
  try {
    const admin = await s.adminToken();
    const lines = async (search: string) => {
      await s.app.log.flush();
      const r = await s.request(
        "GET",
        `/api/v1/sys/logs?type=app&search=${encodeURIComponent(search)}`,
        { token: admin },
      );
      assert.equal(r.status, 200, r.text);
      return r.data.items.length as number;
    };
    await t.step("logins", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const r = await s.request("POST", "/api/v1/sys/admins/login", {
          body: { identity: "nobody@example.com", password: "wrong-password" },
        });
        statuses.push(r.status);
      }
      assert.equal(statuses.filter((x) => x === 429).length, 7);
      assert.equal(await lines("login rate limit hit"), 1);
    });
    await t.step("sign-ups", async () => {
      await createEntity(s, {
        name: "fans",
        type: "auth",
        rules: { add: { mode: "public", expr: "" } },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 14; i++) {
        const r = await s.request("POST", "/api/v1/entities/fans", {
          body: { email: `fan${i}@example.com`, password: "fan-password-1" },
        });
        statuses.push(r.status);
      }
      assert.equal(statuses.filter((x) => x === 429).length, 4);
      assert.equal(await lines("sign-up rate limit hit"), 1);
    });
  } finally {
    await s.close();
  }
});
