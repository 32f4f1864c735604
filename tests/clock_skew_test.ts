/**
 * Instances whose clocks disagree, on one PostgreSQL database: B runs 30 s
 * fast, C 30 s slow (the internal `clock` seam; A keeps this machine's
 * clock). A password change made on A ends every token issued before it,
 * whichever instance issued it, and a login right after the change works
 * everywhere. Tokens carry times of one time base: the database's clock.
 * PostgreSQL only (SQLite has a single process, so a single clock).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  DATABASES,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { poll } from "./_wait.ts";

const SKEW = 30_000;

/** The payload of a JWT (not verified: the servers do that). */
function payload(token: string): { iat: number; exp: number } {
  const part = token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
  return JSON.parse(atob(part));
}

Deno.test({
  name: "clock skew between instances neither revives nor refuses tokens",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const url = await (await startPostgres()).createDatabase();
    const common = { connection: url, trustProxy: true };
    const a = await startServer("postgres", common);
    const b = await startServer("postgres", {
      ...common,
      clock: () => Date.now() + SKEW,
    });
    const c = await startServer("postgres", {
      ...common,
      clock: () => Date.now() - SKEW,
    });
    const all = [["A", a], ["B", b], ["C", c]] as const;
    try {
      const admin = await a.adminToken();
      const r = await a.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name: "users",
          type: "auth",
          fields: [],
          rules: { get: { mode: "auth", expr: "" } },
        },
      });
      assert.equal(r.status, 201, r.text);
      for (const [name, s] of all) {
        await poll(
          `${name} serves users`,
          async () =>
            (await s.request("GET", "/api/v1/entities/users", { token: admin }))
              .status === 200,
        );
      }
      let ip = 0;
      let password = "first-password-1";
      const user = await seedUser(
        a,
        "users",
        { email: "skew@example.com" },
        password,
      );
      const path = `/api/v1/entities/users/${user.id}`;
      const status = async (s: TestServer, token: string) =>
        (await s.request("GET", path, { token })).status;
      const login = async (s: TestServer) => {
        const res = await s.request("POST", "/api/v1/auth/users/login", {
          body: { identity: "skew@example.com", password },
          headers: { "x-forwarded-for": `192.0.2.${++ip}` },
        });
        assert.equal(res.status, 200, res.text);
        return res.data.token as string;
      };
      /** Changes the password on A (an admin needs no oldPassword). */
      const change = async () => {
        password = `changed-password-${++ip}`;
        const res = await a.request("PATCH", path, {
          token: admin,
          body: { password },
        });
        assert.equal(res.status, 200, res.text);
      };

      await t.step(
        "a token issued on a fast or slow instance just before a password change on A is rejected everywhere",
        async () => {
          const fromB = await login(b), fromC = await login(c);
          for (const [name, s] of all) {
            assert.equal(await status(s, fromB), 200, `B's token on ${name}`);
            assert.equal(await status(s, fromC), 200, `C's token on ${name}`);
          }
          await change();
          for (const [name, s] of all) {
            for (const [tok, from] of [[fromB, "B"], [fromC, "C"]]) {
              await poll(
                `${name} rejects ${from}'s token`,
                async () => (await status(s, tok)) === 401,
              );
            }
          }
          // Nor can they be refreshed into new tokens.
          for (const [name, s] of all) {
            const ref = await s.request("POST", "/api/v1/auth/users/refresh", {
              token: fromB,
            });
            assert.equal(ref.status, 401, `refresh on ${name}`);
          }
        },
      );

      await t.step(
        "a login on a fast or slow instance right after a password change on A is accepted everywhere",
        async () => {
          const before = await login(a);
          await change();
          const onB = await login(b), onC = await login(c);
          // Every instance has learned of the change (the older token is
          // refused), and still accepts the fresh ones.
          for (const [name, s] of all) {
            await poll(
              `${name} rejects the token from before`,
              async () => (await status(s, before)) === 401,
            );
            assert.equal(await status(s, onB), 200, `B's new token on ${name}`);
            assert.equal(await status(s, onC), 200, `C's new token on ${name}`);
          }
          // A refresh on a skewed instance gives a token that works everywhere.
          const ref = await c.request("POST", "/api/v1/auth/users/refresh", {
            token: onB,
          });
          assert.equal(ref.status, 200, ref.text);
          for (const [name, s] of all) {
            assert.equal(await status(s, ref.data.token), 200, `on ${name}`);
          }
        },
      );

      await t.step(
        "tokens carry the database's time, whatever the issuing instance's clock says",
        async () => {
          for (const [name, s] of all) {
            const { iat, exp } = payload(await login(s));
            const drift = Math.abs(iat - Date.now() / 1000);
            assert.ok(drift < 5, `${name}: iat is ${drift} s off`);
            assert.equal(exp - iat, 3600, name);
          }
        },
      );
    } finally {
      await c.close();
      await b.close();
      await a.close();
    }
  },
});
