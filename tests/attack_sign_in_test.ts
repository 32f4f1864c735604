/**
 * Red-team cases of the account flows and second factors (issue 30's
 * "Security, each tested"), black box on both databases: parallel guesses
 * against an `mfa_id`, impersonation tokens on the TOTP routes, refresh
 * under `require_verified`, and the sign-in rows of a deleted user. One
 * server per database; each step makes its own users.
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
import {
  createSchema,
  fastUser,
  fixtureAdmin,
  nextIp,
  USER_PW,
} from "./_auth_fixtures.ts";
import { startSmtp, type TestSmtp } from "./_smtp.ts";
import { account, FAST_MAIL } from "./_account_fixtures.ts";
import { base32Decode, totpAt } from "../lib/auth/totp.ts";

const BAD_TOTP = "Cannot log in: invalid or used TOTP code";

/** `account` (a fresh client address) with the token as its last argument. */
function post(
  s: TestServer,
  entity: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<Reply> {
  return account(s, entity, path, body, { token });
}

/** The user's TOTP code `steps` steps from the server's now. */
function codeAt(s: TestServer, secret: string, steps = 0): string {
  return totpAt(base32Decode(secret)!, s.app.now() + steps * 30_000);
}

/** Enrols `token`'s user in TOTP; returns the base32 secret. */
async function enrol(
  s: TestServer,
  entity: string,
  token: string,
): Promise<string> {
  const setup = await post(s, entity, "totp/setup", {}, token);
  assertStatus(setup, 200, "setup");
  const secret: string = setup.data.secret;
  // The current step's code (still inside the ±1 window if a step ends
  // meanwhile); the logins use the next step's.
  assertStatus(
    await post(s, entity, "totp/confirm", { code: codeAt(s, secret) }, token),
    204,
    "confirm",
  );
  return secret;
}

/** Polls until `n` mails to `to` arrived; the last one's text. */
async function mailText(smtp: TestSmtp, to: string, n = 1): Promise<string> {
  const end = Date.now() + 20_000;
  for (;;) {
    const got = smtp.received.filter((m) => m.to.includes(to));
    if (got.length >= n) return got[n - 1].text;
    if (Date.now() > end) throw new Error(`no mail ${n} to ${to} within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The 6-digit code of a sign-in mail. */
function codeIn(text: string): string {
  const m = /\b(\d{6})\b/.exec(text);
  assert(m, `a code in: ${text}`);
  return m[1];
}

/** The token of a link mail. */
function tokenIn(text: string): string {
  const m = /token=([A-Za-z0-9_-]+)/.exec(text);
  assert(m, `a token in: ${text}`);
  return m[1];
}

/** Rows of `table` whose `user_id` is `id`. */
async function rowsOf(
  s: TestServer,
  table: string,
  id: string,
): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COUNT(*) AS "n" FROM "${table}" WHERE "user_id" = ?`,
    [id],
  );
  return Number(rows[0].n);
}

forEachDb("attacks on accounts, MFA and TOTP", async (t, db) => {
  const s = await startServer(db, { trustProxy: true, mail: FAST_MAIL });
  const smtp = await startSmtp();
  try {
    const admin = await fixtureAdmin(s);
    assertStatus(
      await s.request("PATCH", "/api/v1/sys/settings", {
        token: admin,
        body: {
          app: { name: "Attack", url: "https://app.example.com" },
          mail: {
            from: { name: "Attack", address: "noreply@example.com" },
            smtp: { host: "127.0.0.1", port: smtp.port, security: "none" },
          },
        },
      }),
      200,
    );
    await createSchema(s, admin, {
      name: "crew",
      type: "auth",
      auth: { otp: { enabled: true }, totp: { enabled: true } },
    });

    await t.step(
      "parallel TOTP guesses on one mfa_id: at most 5 are compared",
      async () => {
        const u = await fastUser(s, "crew", { email: "par@example.com" });
        // Issued directly: the login after enrolment is the one under test.
        const token = await issueToken(s, "crew", u.id);
        const secret = await enrol(s, "crew", token);
        const first = await post(s, "crew", "login", {
          identity: u.email,
          password: USER_PW,
        });
        assertStatus(first, 401);
        const mfaId = first.data.mfa_id;
        // Codes of none of the accepted steps: each a wrong guess.
        const valid = new Set([-1, 0, 1].map((d) => codeAt(s, secret, d)));
        const guesses: string[] = [];
        for (let n = 0; guesses.length < 20; n++) {
          const g = String(100_000 + n * 37_123 % 900_000);
          if (!valid.has(g)) guesses.push(g);
        }
        const replies = await Promise.all(
          guesses.map((code) =>
            post(s, "crew", "login-totp", { mfa_id: mfaId, code })
          ),
        );
        for (const r of replies) assertStatus(r, 401);
        const compared = replies.filter((r) => r.error === BAD_TOTP).length;
        assert(
          compared <= 5,
          `${compared} of 20 parallel guesses were compared (5 at most)`,
        );
        const late = await post(s, "crew", "login-totp", {
          mfa_id: mfaId,
          code: codeAt(s, secret, 1),
        });
        assertStatus(late, 401, "the mfa_id is spent");
      },
    );

    await t.step(
      "parallel OTP guesses on one otp_id: the right code after them fails",
      async () => {
        await fastUser(s, "crew", { email: "otp-par@example.com" });
        const r = await post(s, "crew", "request-otp", {
          email: "otp-par@example.com",
        });
        const replies = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            post(s, "crew", "login-otp", {
              otp_id: r.data.otp_id,
              code: `x${i}`,
            })),
        );
        for (const x of replies) assertStatus(x, 401);
        const rows = await s.app.storage.query(
          `SELECT "attempts" FROM "mb_otps" WHERE "id" = ?`,
          [r.data.otp_id],
        );
        assert(
          rows.length === 0 || Number(rows[0].attempts) <= 5,
          "the counter never passes 5",
        );
      },
    );

    await t.step(
      "an impersonation token cannot set up, confirm or disable TOTP",
      async () => {
        const u = await fastUser(s, "crew", { email: "imp@example.com" });
        const imp = await s.request(
          "POST",
          `/api/v1/auth/crew/impersonate/${u.id}`,
          { token: admin, body: {} },
        );
        assertStatus(imp, 200);
        const token: string = imp.data.token;
        for (const path of ["totp/setup", "totp/confirm", "totp/disable"]) {
          const r = await post(s, "crew", path, { code: "123456" }, token);
          assertStatus(r, 403, path);
          assert(r.error.includes("impersonat"), r.error);
        }
        assertEquals(await rowsOf(s, "mb_totp", u.id), 0, "nothing set up");
        // The user's own token still can.
        const own = await issueToken(s, "crew", u.id);
        assertStatus(await post(s, "crew", "totp/setup", {}, own), 200);
      },
    );

    await t.step(
      "require_verified switched on: an unverified user's session cannot refresh",
      async () => {
        await createSchema(s, admin, { name: "gated", type: "auth" });
        const u = await fastUser(s, "gated", { email: "unv@example.com" });
        const v = await fastUser(s, "gated", { email: "ver@example.com" });
        await s.app.schemas.get("gated")!.update(v.id, { verified: true });
        const tokens: string[] = [];
        for (const email of [u.email, v.email]) {
          const r = await post(s, "gated", "login", {
            identity: email,
            password: USER_PW,
          });
          assertStatus(r, 200);
          tokens.push(r.data.token);
        }
        assertStatus(
          await s.request("PATCH", "/api/v1/schemas/gated", {
            token: admin,
            body: { auth: { require_verified: true } },
          }),
          200,
        );
        for (
          const path of ["/api/v1/auth/gated/refresh", "/api/v1/auth/refresh"]
        ) {
          const r = await s.request("POST", path, { token: tokens[0] });
          assertStatus(r, 403, path);
          assertEquals(r.error, "Cannot log in: email not verified");
        }
        const ok = await post(s, "gated", "refresh", {}, tokens[1]);
        assertStatus(ok, 200, "a verified user refreshes");
      },
    );

    await t.step(
      "deleting a user removes their TOTP, code, MFA and link rows, and only theirs",
      async () => {
        await createSchema(s, admin, {
          name: "leavers",
          type: "auth",
          rules: { delete: { mode: "custom", expr: "record.id == auth.id" } },
          auth: {
            otp: { enabled: true },
            mfa: { enabled: true },
            totp: { enabled: true },
          },
        });
        const ids: string[] = [];
        const tokens: string[] = [];
        for (const email of ["gone@example.com", "stay@example.com"]) {
          const u = await fastUser(s, "leavers", { email });
          await s.app.schemas.get("leavers")!.update(u.id, { verified: true });
          ids.push(u.id);
          tokens.push(await issueToken(s, "leavers", u.id));
          assertStatus(
            await post(s, "leavers", "totp/setup", {}, tokens.at(-1)),
            200,
          );
          assertStatus(await post(s, "leavers", "request-otp", { email }), 200);
          const first = await post(s, "leavers", "login", {
            identity: email,
            password: USER_PW,
          });
          assertStatus(first, 401, "a pending second factor");
          assertStatus(
            await post(s, "leavers", "request-password-reset", { email }),
            204,
          );
        }
        await s.app.accounts.settled();
        const tables = ["mb_totp", "mb_otps", "mb_mfas", "mb_account_tokens"];
        for (const id of ids) {
          for (const table of tables) {
            assertEquals(await rowsOf(s, table, id), 1, `${table} before`);
          }
        }
        assertStatus(
          await s.request("DELETE", `/api/v1/entities/leavers/${ids[0]}`, {
            token: tokens[0],
          }),
          204,
        );
        for (const table of tables) {
          assertEquals(await rowsOf(s, table, ids[0]), 0, `${table}: gone`);
          assertEquals(await rowsOf(s, table, ids[1]), 1, `${table}: kept`);
        }
        // A script's delete (no caller) removes them too.
        await s.app.schemas.get("leavers")!.remove(ids[1]);
        for (const table of tables) {
          assertEquals(await rowsOf(s, table, ids[1]), 0, `${table}: script`);
        }
        // Dropping the entity removes its rows, and no other entity's.
        const last = await fastUser(s, "leavers", {
          email: "last@example.com",
        });
        assertStatus(
          await post(
            s,
            "leavers",
            "totp/setup",
            {},
            await issueToken(s, "leavers", last.id),
          ),
          200,
        );
        const crew = await s.app.storage.query(
          `SELECT COUNT(*) AS "n" FROM "mb_totp" WHERE "entity_id" = ?`,
          [s.app.schemas.get("crew")!.id],
        );
        assert(Number(crew[0].n) > 0, "crew has TOTP rows");
        assertStatus(
          await s.request("DELETE", "/api/v1/schemas/leavers", {
            token: admin,
          }),
          204,
        );
        assertEquals(await rowsOf(s, "mb_totp", last.id), 0, "dropped");
        const after = await s.app.storage.query(
          `SELECT COUNT(*) AS "n" FROM "mb_totp" WHERE "entity_id" = ?`,
          [s.app.schemas.get("crew")!.id],
        );
        assertEquals(after[0].n, crew[0].n, "crew's rows kept");
      },
    );
    await t.step(
      "holds: one right code or link used in parallel signs in once",
      async () => {
        const u = await fastUser(s, "crew", { email: "once@example.com" });
        const r = await post(s, "crew", "request-otp", { email: u.email });
        const code = codeIn(await mailText(smtp, String(u.email)));
        const logins = await Promise.all(
          Array.from(
            { length: 6 },
            () => post(s, "crew", "login-otp", { otp_id: r.data.otp_id, code }),
          ),
        );
        assertEquals(
          logins.map((x) => x.status).sort(),
          [200, 401, 401, 401, 401, 401],
        );
        assertStatus(
          await post(s, "crew", "request-password-reset", { email: u.email }),
          204,
        );
        const token = tokenIn(await mailText(smtp, String(u.email), 2));
        const resets = await Promise.all(
          ["first-new-pass", "second-new-pass", "third-new-pass"].map((pw) =>
            post(s, "crew", "confirm-password-reset", { token, password: pw })
          ),
        );
        assertEquals(resets.map((x) => x.status).sort(), [204, 400, 400]);
      },
    );

    await t.step(
      "holds: one TOTP code on two mfa_ids at once signs in once",
      async () => {
        const u = await fastUser(s, "crew", { email: "replay@example.com" });
        const own = await issueToken(s, "crew", u.id);
        const secret = await enrol(s, "crew", own);
        const firsts = await Promise.all(
          [1, 2].map(() =>
            post(s, "crew", "login", { identity: u.email, password: USER_PW })
          ),
        );
        const code = codeAt(s, secret, 1);
        const seconds = await Promise.all(
          firsts.map((f) =>
            post(s, "crew", "login-totp", { mfa_id: f.data.mfa_id, code })
          ),
        );
        assertEquals(seconds.map((x) => x.status).sort(), [200, 401]);
      },
    );

    await t.step(
      "holds: a script's password change kills a mailed code and link; expired ones fail",
      async () => {
        const crew = s.app.schemas.get("crew")!;
        const u = await fastUser(s, "crew", { email: "script@example.com" });
        const r = await post(s, "crew", "request-otp", { email: u.email });
        const code = codeIn(await mailText(smtp, String(u.email)));
        assertStatus(
          await post(s, "crew", "request-password-reset", { email: u.email }),
          204,
        );
        const token = tokenIn(await mailText(smtp, String(u.email), 2));
        await crew.update(u.id, { password: "script-set-pass" });
        assertStatus(
          await post(s, "crew", "login-otp", { otp_id: r.data.otp_id, code }),
          401,
          "the code",
        );
        assertStatus(
          await post(s, "crew", "confirm-password-reset", {
            token,
            password: "attacker-pass-1",
          }),
          400,
          "the link",
        );
        // Expired (by the database's clock): the same refusals.
        const v = await fastUser(s, "crew", { email: "late@example.com" });
        const r2 = await post(s, "crew", "request-otp", { email: v.email });
        const code2 = codeIn(await mailText(smtp, String(v.email)));
        assertStatus(
          await post(s, "crew", "request-password-reset", { email: v.email }),
          204,
        );
        const token2 = tokenIn(await mailText(smtp, String(v.email), 2));
        for (const table of ["mb_otps", "mb_account_tokens"]) {
          await s.app.storage.run(
            `UPDATE "${table}" SET "expires" = ? WHERE "user_id" = ?`,
            [s.app.now() - 1, v.id],
          );
        }
        assertStatus(
          await post(s, "crew", "login-otp", {
            otp_id: r2.data.otp_id,
            code: code2,
          }),
          401,
        );
        assertStatus(
          await post(s, "crew", "confirm-password-reset", {
            token: token2,
            password: "attacker-pass-1",
          }),
          400,
        );
      },
    );

    await t.step(
      "an email changed away and back does not revive the codes and links mailed before",
      async () => {
        const crew = s.app.schemas.get("crew")!;
        const u = await fastUser(s, "crew", { email: "roundtrip@example.com" });
        const r = await post(s, "crew", "request-otp", { email: u.email });
        const code = codeIn(await mailText(smtp, String(u.email)));
        assertStatus(
          await post(s, "crew", "request-password-reset", { email: u.email }),
          204,
        );
        const token = tokenIn(await mailText(smtp, String(u.email), 2));
        await crew.update(u.id, { email: "elsewhere@example.com" });
        await crew.update(u.id, { email: u.email });
        assertStatus(
          await post(s, "crew", "login-otp", { otp_id: r.data.otp_id, code }),
          401,
          "the code",
        );
        assertStatus(
          await post(s, "crew", "confirm-password-reset", {
            token,
            password: "attacker-pass-1",
          }),
          400,
          "the link",
        );
      },
    );

    await t.step(
      "holds: the legacy /api/v1/auth/login asks an enrolled user for the second factor",
      async () => {
        const u = await fastUser(s, "crew", { email: "legacy@example.com" });
        await enrol(s, "crew", await issueToken(s, "crew", u.id));
        const r = await s.request("POST", "/api/v1/auth/login", {
          body: { entity: "crew", identity: u.email, password: USER_PW },
          headers: { "x-forwarded-for": nextIp() },
        });
        assertStatus(r, 401);
        assertEquals(Object.keys(r.data), ["mfa_id"]);
      },
    );

    await t.step("holds: an API key cannot touch TOTP", async () => {
      const u = await fastUser(s, "crew", { email: "key@example.com" });
      const made = await s.request("POST", "/api/v1/sys/api-keys", {
        token: admin,
        body: { name: "job", entity: "crew", user_id: u.id },
      });
      assertStatus(made, 201);
      for (const path of ["totp/setup", "totp/confirm", "totp/disable"]) {
        const r = await post(
          s,
          "crew",
          path,
          { code: "123456" },
          made.data.key,
        );
        assertStatus(r, 403, path);
      }
      assertEquals(await rowsOf(s, "mb_totp", u.id), 0);
    });
  } finally {
    await s.close();
    await smtp.close();
  }
});

/** A token issued directly (no login: the entity asks for a second factor). */
async function issueToken(
  s: TestServer,
  entity: string,
  id: string,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  const user = await e.read(id);
  assert(user, `no ${entity} ${id}`);
  return (await s.app.sessions.issue(e, user)).token;
}
