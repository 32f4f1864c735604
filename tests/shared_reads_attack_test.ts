/**
 * Attacks on the user read behind every bearer token (`Sessions.session`,
 * shared by concurrent requests on PostgreSQL: lib/records/shared_reads.ts):
 * a read held up behind a slow statement on its connection holds up no other
 * request; users of two auth entities and an admin with one id, and ids that
 * differ only in case or hold JSON's own characters, each get their own
 * record; a user deleted, or a field changed, before a request is seen by it
 * while other reads are out.
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
  type TestServer,
} from "./_server.ts";
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";
import { within } from "./_wait.ts";

/** Only a caller whose `role` is "reader" sees the probe's record. */
const READER = { mode: "custom", expr: 'auth.user.role == "reader"' };

/** What a non-reader gets: the rule reads only `auth`, so it is refused. */
const DENIED = "status 403";

/** What a token gets of the probe's list: its count, or the status. */
async function seen(s: TestServer, token: string): Promise<number | string> {
  const r: Reply = await s.request("GET", "/api/v1/entities/probe", { token });
  return r.status === 200 ? r.data.items.length : `status ${r.status}`;
}

forEachDb(
  "shared reads: the user behind a token under attack",
  async (t, db) => {
    // Two connections: a slow statement on one leaves the other free.
    const s = await startServer(db, { poolSize: 2 });
    try {
      const admin = await s.adminToken();
      for (const name of ["users", "members"]) {
        await createSchema(s, admin, {
          name,
          type: "auth",
          fields: [{ name: "role", type: "string" }],
        });
      }
      await createSchema(s, admin, {
        name: "probe",
        type: "base",
        fields: [{ name: "note", type: "string" }],
        rules: { list: READER, get: READER },
      });
      assertStatus(
        await s.request("POST", "/api/v1/entities/probe", {
          token: admin,
          body: { note: "x" },
        }),
        201,
      );

      await t.step(
        "a user read held up behind a slow statement holds up no other request",
        async () => {
          if (db !== "postgres") return; // SQLite has no connections to wait on
          const u = await fastUser(s, "users", {
            email: "slow@example.com",
            role: "reader",
          });
          const token = await issue(s, "users", u.id);
          const store = s.app.storage;
          // A connection of its own holds two advisory locks; a statement
          // waiting for each makes both pool connections busy, then the first
          // request's user read queues behind the first of them.
          const gate = {
            first: Promise.withResolvers<void>(),
            second: Promise.withResolvers<void>(),
            held: Promise.withResolvers<void>(),
          };
          const holder = store.snapshot(async (q) => {
            await q.query(
              "SELECT pg_advisory_lock(7101), pg_advisory_lock(7102)",
            );
            gate.held.resolve();
            await gate.second.promise;
            await q.query("SELECT pg_advisory_unlock(7102)");
            await gate.first.promise;
            await q.query("SELECT pg_advisory_unlock(7101)");
          });
          let slow: Promise<unknown> | undefined;
          try {
            await gate.held.promise;
            slow = store.query("SELECT pg_advisory_xact_lock(7101)");
            const busy = store.query("SELECT pg_advisory_xact_lock(7102)");
            const first = s.request("GET", "/api/v1/entities/probe", { token });
            let firstDone = false;
            first.then(() => firstDone = true, () => firstDone = true);
            // The first request's read is sent (behind the slow statement)
            // once its own request reached the server.
            await new Promise((r) => setTimeout(r, 200));
            gate.second.resolve();
            await busy;
            // The other connection is free now: a later request must not wait
            // for the first one's read (before the fix it waited for it, up to
            // the statement timeout, or for ever on a stalled connection).
            const later = await within(
              "a request after the slow statement",
              10_000,
              seen(s, token),
            );
            assertEquals(later, 1);
            assert(!firstDone, "the first request's read was held up");
          } finally {
            gate.second.resolve();
            gate.first.resolve();
            await slow;
            await holder;
          }
        },
      );

      await t.step(
        "users of two auth entities and an admin with one id each get their own",
        async () => {
          const id = crypto.randomUUID();
          await fastUser(s, "users", {
            id,
            email: "same-u@example.com",
            role: "reader",
          });
          await fastUser(s, "members", {
            id,
            email: "same-m@example.com",
            role: "none",
          });
          await fastUser(s, "mb_admins", { id, email: "same-a@example.com" });
          const user = await issue(s, "users", id);
          const member = await issue(s, "members", id);
          const adm = await issue(s, "mb_admins", id);
          const calls = Array.from({ length: 60 }, (_, i) => {
            const who = i % 3;
            if (who === 2) {
              return s.request("GET", "/api/v1/schemas", { token: adm }).then(
                (r) => r.status,
              );
            }
            return seen(s, who === 0 ? user : member);
          });
          const got = await Promise.all(calls);
          got.forEach((g, i) =>
            assertEquals(g, [1, DENIED, 200][i % 3], `call ${i}`)
          );
          // A user's token is no admin's, whatever its id.
          const r = await s.request("GET", "/api/v1/schemas", { token: user });
          assert(r.status === 401 || r.status === 403, `got ${r.status}`);
        },
      );

      await t.step(
        "ids that differ only in case or hold JSON's characters get their own",
        async () => {
          const ids = [
            'odd-A"\\,]}',
            'odd-a"\\,]}',
            "odd-ü ñ 😀",
            " odd-lead",
            "odd-lead",
            "ODD-LEAD",
            "odd-\u0001\t\n",
          ];
          const tokens: string[] = [];
          for (const [i, id] of ids.entries()) {
            await fastUser(s, "users", {
              id,
              email: `odd${i}@example.com`,
              role: i % 2 === 0 ? "reader" : "none",
            });
            tokens.push(await issue(s, "users", id));
          }
          const got = await Promise.all(
            Array.from(
              { length: 70 },
              (_, i) => seen(s, tokens[i % ids.length]),
            ),
          );
          got.forEach((g, i) =>
            assertEquals(
              g,
              (i % ids.length) % 2 === 0 ? 1 : DENIED,
              `call ${i}`,
            )
          );
        },
      );

      await t.step(
        "a user deleted, or changed, before a request is seen by it while other reads are out",
        async () => {
          const users: { id: string; token: string }[] = [];
          for (let i = 0; i < 12; i++) {
            const u = await fastUser(s, "users", {
              email: `many${i}@example.com`,
              role: "reader",
            });
            users.push({ id: u.id, token: await issue(s, "users", u.id) });
          }
          const [gone, changed, ...others] = users;
          const wave = () =>
            Promise.all(
              Array.from(
                { length: 48 },
                (_, i) => seen(s, users[i % 12].token),
              ),
            );
          // Reads out while the delete and the change commit.
          const before = wave();
          assertStatus(
            await s.request("DELETE", `/api/v1/entities/users/${gone.id}`, {
              token: admin,
            }),
            204,
          );
          assertStatus(
            await s.request("PATCH", `/api/v1/entities/users/${changed.id}`, {
              token: admin,
              body: { role: "none" },
            }),
            200,
          );
          const after = wave();
          const [, got] = await Promise.all([before, after]);
          got.forEach((g, i) => {
            const u = users[i % 12];
            const want = u === gone ? "status 401" : u === changed ? DENIED : 1;
            assertEquals(g, want, `call ${i}`);
          });
          assertEquals(
            await Promise.all(others.map((u) => seen(s, u.token))),
            others.map(() => 1),
          );
        },
      );
    } finally {
      await s.close();
    }
  },
);
