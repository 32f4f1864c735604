/**
 * Login limits count an IPv6 client by its /64 network: rotating through the
 * addresses of one /64 gets no fresh allowance (review finding).
 *
 * @module
 */

import assert from "node:assert/strict";
import { forEachDb, startServer } from "./_server.ts";

forEachDb("ratelimit: an IPv6 /64 counts as one client", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const login = (ip: string) =>
      s.request("POST", "/api/v1/sys/admins/login", {
        body: { identity: "nobody@example.com", password: "wrong-password" },
        headers: { "x-forwarded-for": ip },
      });
    await t.step("six addresses of one /64: the sixth is limited", async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 6; i++) {
        statuses.push((await login(`2001:db8:7:7::${i.toString(16)}`)).status);
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    });
    await t.step("another /64 has its own allowance", async () => {
      assert.equal((await login("2001:db8:7:8::1")).status, 401);
    });
  } finally {
    await s.close();
  }
});
