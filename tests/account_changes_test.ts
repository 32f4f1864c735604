/**
 * Password reset and email change by mailed link, end to end, and
 * `auth.require_verified`: sessions end, tokens are single use, short-lived
 * and dead after a change of password or email. A real SMTP server
 * (tests/_smtp.ts), on both databases; one server per database, each step
 * with users of its own.
 *
 * @module
 */

import { assert, assertEquals, assertStatus, forEachDb } from "./_server.ts";
import {
  assertTokenRejected,
  assertTokenWorks,
  fastUser,
  issue,
  login,
  USER_PW,
  userToken,
} from "./_auth_fixtures.ts";
import {
  account,
  mailSettled,
  mailsTo,
  nthMailTo,
  tokenOf,
  tokenRows,
  withMailServer,
} from "./_account_fixtures.ts";

const BAD_LOGIN = "Cannot log in: invalid identity or password";

forEachDb("account mail: password reset and email change", async (t, db) => {
  await withMailServer(db, async (s, admin, smtp) => {
    const users = s.app.schemas.get("users")!;
    const reset = async (email: string, n = 1) => {
      assertStatus(
        await account(s, "users", "request-password-reset", { email }),
        204,
      );
      return tokenOf(await nthMailTo(smtp, email, n));
    };

    await t.step(
      "reset end to end: old sessions end, the new password works, the link once",
      async () => {
        const u = await fastUser(s, "users", { email: "carol@example.com" });
        // Sessions issued directly: the logins below are the checks.
        const first = await issue(s, "users", u.id);
        const second = await issue(s, "users", u.id);
        const token = await reset("carol@example.com");
        const rows = await tokenRows(s, u.id);
        assertEquals(
          Number(rows[0].expires) - Number(rows[0].created),
          30 * 60_000,
          "a reset link lives 30 minutes",
        );
        // Too short: refused, and the link is not spent.
        const short = await account(s, "users", "confirm-password-reset", {
          token,
          password: "short",
        });
        assertStatus(short, 400);
        assert(short.data.fields.password, short.text);
        const ok = await account(s, "users", "confirm-password-reset", {
          token,
          password: "carol-new-password",
        });
        assertStatus(ok, 204);
        await assertTokenRejected(s, u.id, first, "first session");
        await assertTokenRejected(s, u.id, second, "second session");
        const old = await login(s, "/api/v1/auth/users/login", {
          identity: "carol@example.com",
          password: USER_PW,
        });
        assertEquals([old.status, old.error], [401, BAD_LOGIN]);
        const fresh = await userToken(
          s,
          "users",
          "carol@example.com",
          "carol-new-password",
        );
        await assertTokenWorks(s, u.id, fresh, "new session");
        assertEquals((await users.read(u.id))?.verified, true);
        const again = await account(s, "users", "confirm-password-reset", {
          token,
          password: "carol-third-password",
        });
        assertStatus(again, 400);
        assert(again.data.fields.token, again.text);
      },
    );

    await t.step(
      "an expired link is refused (its stored expiry moved back)",
      async () => {
        const u = await fastUser(s, "users", { email: "dave@example.com" });
        const token = await reset("dave@example.com");
        await s.app.storage.run(
          `UPDATE "mb_account_tokens" SET "expires" = "created" - 1 WHERE "user_id" = ?`,
          [u.id],
        );
        const r = await account(s, "users", "confirm-password-reset", {
          token,
          password: "dave-new-password",
        });
        assertStatus(r, 400);
        assert(/invalid, used or expired/.test(r.error), r.error);
        await userToken(s, "users", "dave@example.com"); // password unchanged
      },
    );

    await t.step(
      "links die when the password or the email changes",
      async () => {
        const u = await fastUser(s, "users", { email: "erin@example.com" });
        const token = await reset("erin@example.com");
        // Changed by an admin through the records API (not by this link).
        assertStatus(
          await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
            token: admin,
            body: { password: "erin-admin-set-pw" },
          }),
          200,
        );
        assertStatus(
          await account(s, "users", "confirm-password-reset", {
            token,
            password: "erin-new-password",
          }),
          400,
        );
        assertStatus(
          await account(s, "users", "request-verification", {
            email: "erin@example.com",
          }),
          204,
        );
        const verify = tokenOf(await nthMailTo(smtp, "erin@example.com", 2));
        assertStatus(
          await s.request("PATCH", `/api/v1/entities/users/${u.id}`, {
            token: admin,
            body: { email: "erin.other@example.com" },
          }),
          200,
        );
        assertStatus(
          await account(s, "users", "confirm-verification", { token: verify }),
          400,
        );
        assertEquals((await users.read(u.id))?.verified, false);
        // A new link replaces the earlier one of its purpose.
        const f = await fastUser(s, "users", { email: "fay@example.com" });
        const older = await reset("fay@example.com");
        await s.app.storage.run(
          `UPDATE "mb_mail_throttle" SET "until" = "until" - 120000`,
        );
        const newer = await reset("fay@example.com", 2);
        assertEquals((await tokenRows(s, f.id)).length, 1);
        assertStatus(
          await account(s, "users", "confirm-password-reset", {
            token: older,
            password: "fay-new-password",
          }),
          400,
        );
        assertStatus(
          await account(s, "users", "confirm-password-reset", {
            token: newer,
            password: "fay-new-password",
          }),
          204,
        );
      },
    );

    await t.step(
      "email change end to end: mail to the new address, password checked, sessions end",
      async () => {
        const u = await fastUser(s, "users", { email: "frank@example.com" });
        const session = await issue(s, "users", u.id);
        const guest = await account(s, "users", "request-email-change", {
          email: "frank.new@example.com",
        });
        assertStatus(guest, 401);
        const same = await account(s, "users", "request-email-change", {
          email: "Frank@example.com",
        }, { token: session });
        assertStatus(same, 400);
        const r = await account(s, "users", "request-email-change", {
          email: "Frank.New@example.com",
        }, { token: session });
        assertStatus(r, 204);
        const mail = await nthMailTo(smtp, "frank.new@example.com");
        assert(mail.text.includes("frank.new@example.com"), mail.text);
        const token = tokenOf(mail);
        await mailSettled(s);
        assertEquals(mailsTo(smtp, "frank@example.com"), []);
        const wrong = await account(s, "users", "confirm-email-change", {
          token,
          password: "not-franks-password",
        });
        assertStatus(wrong, 400);
        assert(wrong.data.fields.password, wrong.text);
        await assertTokenWorks(s, u.id, session, "before the change");
        const ok = await account(s, "users", "confirm-email-change", {
          token,
          password: USER_PW,
        });
        assertStatus(ok, 204);
        await assertTokenRejected(s, u.id, session, "after the change");
        const rec = await users.read(u.id);
        assertEquals([rec?.email, rec?.verified], [
          "frank.new@example.com",
          true,
        ]);
        await userToken(s, "users", "frank.new@example.com");
        const old = await login(s, "/api/v1/auth/users/login", {
          identity: "frank@example.com",
          password: USER_PW,
        });
        assertStatus(old, 401);
        assertStatus(
          await account(s, "users", "confirm-email-change", {
            token,
            password: USER_PW,
          }),
          400,
        );
        // A token of another entity's user asks nothing of this one.
        const m = await fastUser(s, "members", { email: "mo@example.com" });
        assertStatus(
          await account(s, "users", "request-email-change", {
            email: "mo.new@example.com",
          }, { token: await issue(s, "members", m.id) }),
          403,
        );
        assertEquals(await tokenRows(s, m.id), []);
      },
    );

    await t.step(
      "a taken address: no mail, same answer; taken meanwhile: 409",
      async () => {
        const gina = await fastUser(s, "users", { email: "gina@example.com" });
        await fastUser(s, "users", { email: "taken@example.com" });
        const session = await issue(s, "users", gina.id);
        const taken = await account(s, "users", "request-email-change", {
          email: "taken@example.com",
        }, { token: session });
        const free = await account(s, "users", "request-email-change", {
          email: "gina.new@example.com",
        }, { token: session });
        assertEquals([taken.status, taken.text], [free.status, free.text]);
        assertStatus(free, 204);
        const token = tokenOf(await nthMailTo(smtp, "gina.new@example.com"));
        await mailSettled(s);
        assertEquals(mailsTo(smtp, "taken@example.com"), []);
        // Someone takes the new address before Gina confirms (a user row
        // like a sign-up's; sign-up itself is tested in auth_records_test).
        await fastUser(s, "users", { email: "gina.new@example.com" });
        const r = await account(s, "users", "confirm-email-change", {
          token,
          password: USER_PW,
        });
        assertStatus(r, 409);
        assertEquals(
          r.error,
          "Cannot change email: the address is already in use by another account; ask for a change to another address",
        );
      },
    );

    await t.step(
      "require_verified: an unverified user cannot log in, only once the password matched",
      async () => {
        const schema = await s.request("GET", "/api/v1/schemas/users", {
          token: admin,
        });
        const set = (on: boolean) =>
          s.request("PATCH", `/api/v1/schemas/${schema.data.id}`, {
            token: admin,
            body: { auth: { require_verified: on } },
          });
        assertStatus(await set(true), 200);
        try {
          const u = await fastUser(s, "users", { email: "uma@example.com" });
          const wrong = await login(s, "/api/v1/auth/users/login", {
            identity: "uma@example.com",
            password: "not-umas-password",
          });
          assertEquals([wrong.status, wrong.error], [401, BAD_LOGIN]);
          const right = await login(s, "/api/v1/auth/users/login", {
            identity: "uma@example.com",
            password: USER_PW,
          });
          assertEquals([right.status, right.error], [
            403,
            "Cannot log in: email not verified",
          ]);
          assertEquals(right.data, null);
          // Verified by the mailed link: now it may.
          assertStatus(
            await account(s, "users", "request-verification", {
              email: "uma@example.com",
            }),
            204,
          );
          const token = tokenOf(await nthMailTo(smtp, "uma@example.com"));
          assertStatus(
            await account(s, "users", "confirm-verification", { token }),
            204,
          );
          const t2 = await userToken(s, "users", "uma@example.com");
          await assertTokenWorks(s, u.id, t2, "verified");
        } finally {
          assertStatus(await set(false), 200);
        }
        // Off again: unverified users log in.
        await fastUser(s, "users", { email: "vic@example.com" });
        await userToken(s, "users", "vic@example.com");
      },
    );
  });
});
