/**
 * Attack review of the auth hardening (issue 13), black-box over HTTP on
 * SQLite and PostgreSQL: a token that is refreshed or logged out is spent
 * once. Parallel refreshes of one token must not mint several live tokens,
 * and a logout racing a refresh must not leave the refresh's new token
 * alive (sequentially, the later of the two answers 401). On PostgreSQL the
 * same holds across two instances on one database. A password change ends
 * every other session, including ones being refreshed or logged in with the
 * old password at that moment.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  DATABASES,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { pause } from "./_wait.ts";
import { fastUser, issue, USER_PW } from "./_auth_fixtures.ts";

/**
 * The users' first password, seeded with its precomputed hash
 * (`fastUser`); sessions that are not themselves under test are issued
 * directly (`session`), so scrypt runs only for the logins and password
 * changes the cases are about.
 */
const PW = USER_PW;

let ipSeq = 0;
/** A fresh client address (servers run with trustProxy). */
function nextIp(): string {
  ipSeq++;
  return `10.77.${(ipSeq >> 8) & 255}.${ipSeq & 255}`;
}

/** Creates the `users` auth entity (admin-made schema). */
async function usersEntity(s: TestServer): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: {
      name: "users",
      type: "auth",
      fields: [{ name: "name", type: "string" }],
      rules: {
        add: { mode: "public", expr: "" },
        get: { mode: "auth", expr: "" },
        update: { mode: "custom", expr: "record.id == auth.id" },
      },
    },
  });
  assert.equal(r.status, 201, r.text);
}

/** Logs in through the route (one scrypt); returns the token. */
async function login(s: TestServer, email: string): Promise<string> {
  const r = await s.request("POST", "/api/v1/auth/users/login", {
    body: { identity: email, password: PW },
    headers: { "x-forwarded-for": nextIp() },
  });
  assert.equal(r.status, 200, r.text);
  return r.data.token;
}

/** A session of user `id`, issued directly (no login route, no scrypt). */
function session(s: TestServer, id: string): Promise<string> {
  return issue(s, "users", id);
}

function refresh(s: TestServer, token: string): Promise<Reply> {
  return s.request("POST", "/api/v1/auth/users/refresh", { token });
}

/** True when `token` still reads the user's own record. */
async function works(
  s: TestServer,
  id: string,
  token: string,
): Promise<boolean> {
  const r = await s.request("GET", `/api/v1/entities/users/${id}`, { token });
  return r.status === 200;
}

async function spentOnce(t: Deno.TestContext, s: TestServer) {
  const u = await fastUser(s, "users", { email: "race@x.com" });

  await t.step("parallel refreshes of one token: one new token", async () => {
    // A token of a real login here; the other cases issue theirs.
    const token = await login(s, "race@x.com");
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => refresh(s, token)),
    );
    const ok = replies.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, replies.map((r) => r.status).join());
    for (const r of replies) {
      if (r.status !== 200) assert.equal(r.status, 401, r.text);
    }
    assert.equal(await works(s, u.id, token), false, "old token revoked");
  });

  await t.step("logout racing refresh: only one of them wins", async () => {
    const token = await session(s, u.id);
    const [out, again] = await Promise.all([
      s.request("POST", "/api/v1/auth/users/logout", { token }),
      refresh(s, token),
    ]);
    const statuses = [out.status, again.status].sort().join();
    assert.equal(
      statuses,
      "200,401",
      `logout ${out.text} refresh ${again.text}`,
    );
    if (out.status === 200) {
      assert.equal(again.status, 401);
    } else {
      assert.equal(await works(s, u.id, again.data.token), true);
    }
  });

  await t.step("legacy refresh in parallel: one new token", async () => {
    const token = await session(s, u.id);
    const replies = await Promise.all(
      Array.from(
        { length: 4 },
        () => s.request("POST", "/api/v1/auth/refresh", { token }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, replies.map((r) => r.status).join());
  });
}

/** Changes the password of `id` from `old` to `next` with the user's own token. */
function changePassword(
  s: TestServer,
  id: string,
  token: string,
  old: string,
  next: string,
): Promise<Reply> {
  return s.request("PATCH", `/api/v1/entities/users/${id}`, {
    token,
    body: { password: next, oldPassword: old },
    headers: { "x-forwarded-for": nextIp() },
  });
}

function loginWith(s: TestServer, email: string, password: string) {
  return s.request("POST", "/api/v1/auth/users/login", {
    body: { identity: email, password },
    headers: { "x-forwarded-for": nextIp() },
  });
}

async function inFlight(t: Deno.TestContext, s: TestServer) {
  await t.step(
    "a stolen token refreshed in a loop does not survive",
    async () => {
      const u = await fastUser(s, "users", { email: "loop@x.com" });
      let pw = PW;
      for (let round = 0; round < 3; round++) {
        const mine = await session(s, u.id);
        // Several chains, each refreshing its latest token as fast as it can.
        const chains = await Promise.all(
          Array.from({ length: 4 }, () => session(s, u.id)),
        );
        let stop = false;
        const loops = chains.map(async (_, i) => {
          while (!stop) {
            const r = await refresh(s, chains[i]);
            if (r.status !== 200) return;
            chains[i] = r.data.token;
          }
        });
        await pause(60);
        const next = `changed-password-${round}`;
        const p = await changePassword(s, u.id, mine, pw, next);
        assert.equal(p.status, 200, p.text);
        pw = next;
        await pause(60);
        stop = true;
        await Promise.all(loops);
        for (const token of chains) {
          assert.equal(
            await works(s, u.id, token),
            false,
            `round ${round}: a refreshed token outlived the password change`,
          );
        }
      }
    },
  );

  await t.step(
    "a login with the old password during the change",
    async () => {
      const u = await fastUser(s, "users", { email: "during@x.com" });
      let pw = PW;
      for (let round = 0, delay = 80; round < 10; round++, delay += 50) {
        const mine = await session(s, u.id);
        const next = `during-password-${round}`;
        let settled = false;
        const change = changePassword(s, u.id, mine, pw, next).finally(() =>
          settled = true
        );
        await pause(delay);
        const late = settled; // the change was done before this login
        const old = await loginWith(s, "during@x.com", pw);
        const p = await change;
        assert.equal(p.status, 200, p.text);
        pw = next;
        if (old.status === 200) {
          assert.equal(
            await works(s, u.id, old.data.token),
            false,
            `delay ${delay}: a login with the old password outlived the change`,
          );
        } else assert.equal(old.status, 401, old.text);
        if (late) break; // later delays only log in after the change
      }
    },
  );
}

forEachDb("attack: tokens spent once, password changes", async (t, db) => {
  // One server; each part has users of its own.
  const s = await startServer(db, { trustProxy: true });
  try {
    await usersEntity(s);
    await t.step(
      "a token is spent once by refresh/logout",
      (t) => spentOnce(t, s),
    );
    await t.step(
      "a password change ends sessions in flight",
      (t) => inFlight(t, s),
    );
  } finally {
    await s.close();
  }
});

Deno.test({
  name: "attack: two instances refreshing one token mint one new token",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const url = await (await startPostgres()).createDatabase();
    const a = await startServer("postgres", {
      connection: url,
      trustProxy: true,
    });
    const b = await startServer("postgres", {
      connection: url,
      trustProxy: true,
    });
    try {
      await usersEntity(a);
      await b.app.schemas.refreshIfChanged();
      const two = await fastUser(a, "users", { email: "two@x.com" });
      for (let round = 0; round < 3; round++) {
        const token = await session(a, two.id);
        const replies = await Promise.all([
          refresh(a, token),
          refresh(b, token),
          refresh(a, token),
          refresh(b, token),
        ]);
        const ok = replies.filter((r) => r.status === 200);
        assert.equal(ok.length, 1, replies.map((r) => r.status).join());
      }
    } finally {
      await a.close();
      await b.close();
    }
  },
});
