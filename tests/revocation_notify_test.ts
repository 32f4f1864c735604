/**
 * Two instances on one PostgreSQL database learn of each other's
 * revocations and schema changes by LISTEN/NOTIFY, at once, with their
 * polls switched off; the poll (by sequence, not by time) still catches a
 * revocation whose notification was missed and whose row carries a clock
 * far in the past; a dropped listening connection comes back and catches
 * up. PostgreSQL only.
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
import { PostgresStorage } from "../lib/db/postgres.ts";
import type { Queryable, Storage } from "../lib/db/storage.ts";
import { Revocations } from "../lib/auth/revocation.ts";
import { poll } from "./_wait.ts";

const PW = "user-password-1";
const OFF = { revocations: 0, schemas: 0 };

/**
 * The writes of an instance whose clock is far behind and whose
 * notifications nobody hears: rows say `created = 0`, no NOTIFY is sent.
 */
function skewedSilent(db: Storage): Storage {
  const wrap = (q: Queryable): Queryable => ({
    query: (sql, params) =>
      sql.includes("pg_notify") ? Promise.resolve([]) : q.query(sql, params),
    run: (sql, params = []) =>
      q.run(
        sql,
        sql.includes(`INSERT INTO "mb_revoked"`)
          ? [params[0], params[1], 0, params[3]]
          : params,
      ),
    exec: (sql) => q.exec(sql),
  });
  return {
    ...wrap(db),
    dialect: db.dialect,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    snapshot: (fn) => db.snapshot((q) => fn(wrap(q))),
    ping: () => db.ping(),
    state: () => db.state(),
    close: () => db.close(),
  };
}

Deno.test({
  name: "revocations and schemas reach another instance by NOTIFY",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const url = await (await startPostgres()).createDatabase();
    const a = await startServer("postgres", { connection: url });
    const b = await startServer("postgres", { connection: url });
    try {
      assert.ok(a.app.sync.listening && b.app.sync.listening, "listening");
      b.app.sync.setPolling(OFF);
      const admin = await a.adminToken();
      const users = async (s: TestServer) =>
        (await s.request("GET", "/api/v1/entities/users", { token: admin }))
          .status;

      await t.step(
        "a schema created on A is served by B (polls off)",
        async () => {
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
          await poll("B serves users", async () => (await users(b)) === 200);
        },
      );

      const user = await seedUser(a, "users", { email: "n@example.com" }, PW);
      const path = `/api/v1/entities/users/${user.id}`;
      const tokenFor = async () =>
        (await a.app.sessions.issue(a.app.schemas.get("users")!, user)).token;
      const status = async (s: TestServer, token: string) =>
        (await s.request("GET", path, { token })).status;

      await t.step("a logout on A is rejected on B (polls off)", async () => {
        const token = await tokenFor();
        assert.equal(await status(b, token), 200, "before");
        const r = await a.request("POST", "/api/v1/auth/users/logout", {
          token,
        });
        assert.equal(r.status, 200);
        await poll(
          "B rejects",
          async () => (await status(b, token)) === 401,
        );
      });

      await t.step(
        "a password change on A ends B's sessions (polls off)",
        async () => {
          const token = await tokenFor();
          assert.equal(await status(b, token), 200, "before");
          const r = await a.request("PATCH", path, {
            token: admin,
            body: { password: "changed-password-1" },
          });
          assert.equal(r.status, 200, r.text);
          await poll(
            "B rejects",
            async () => (await status(b, token)) === 401,
          );
        },
      );

      await t.step(
        "a missed notification and a skewed clock: the poll still finds it",
        async () => {
          const token = await tokenFor();
          assert.equal(await status(b, token), 200, "before");
          b.app.sync.setPolling({ revocations: 200, schemas: 0 });
          const other = new PostgresStorage(url, 1);
          await other.connect();
          try {
            const skewed = new Revocations(skewedSilent(other));
            await skewed.start();
            const claims = await a.app.signer.verify(token);
            await skewed.revoke(claims!);
            const rows = await other.query(
              `SELECT "created" FROM "mb_revoked" WHERE "jti" = ?`,
              [claims!.jti],
            );
            assert.equal(Number(rows[0].created), 0, "a row from the past");
            await poll(
              "B rejects",
              async () => (await status(b, token)) === 401,
            );
          } finally {
            b.app.sync.setPolling(OFF);
            await other.close();
          }
        },
      );

      await t.step(
        "a dropped LISTEN connection comes back and catches up",
        async () => {
          const token = await tokenFor();
          assert.equal(await status(b, token), 200, "before");
          await a.app.storage.query(
            `SELECT pg_terminate_backend(pid) AS "x" FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN %'`,
          );
          await poll(
            "B notices",
            () => Promise.resolve(!b.app.sync.listening),
          );
          // Sent while B is not listening: caught up when it listens again.
          const r = await a.request("POST", "/api/v1/auth/users/logout", {
            token,
          });
          assert.equal(r.status, 200);
          await poll(
            "B rejects",
            async () => (await status(b, token)) === 401,
          );
          await poll(
            "B listens again",
            () => Promise.resolve(b.app.sync.listening),
          );
          // And notifications flow again.
          const next = await tokenFor();
          assert.equal(await status(b, next), 200);
          await a.request("POST", "/api/v1/auth/users/logout", { token: next });
          await poll(
            "B rejects the next",
            async () => (await status(b, next)) === 401,
          );
        },
      );
    } finally {
      await b.close();
      await a.close();
    }
  },
});
