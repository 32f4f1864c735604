/**
 * Sign-in by mailed code (`request-otp`, `login-otp`), multi-factor logins
 * (`mfa_id`) and TOTP (`totp/setup|confirm|disable`, `login-totp`), black
 * box on both databases, with the real SMTP server of tests/_smtp.ts: codes
 * are read from the mails, TOTP codes are computed here (RFC 6238 from the
 * secret `totp/setup` answers). One server per database; every step makes
 * its own entity or users (the SMTP server's mailbox is shared: each step
 * reads the mails to its own addresses).
 *
 * @module
 */

import { createHmac } from "node:crypto";
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
  AUTH,
  createSchema,
  fastUser,
  fixtureAdmin,
  nextIp,
  ROUTE_NOT_FOUND,
  USER_PW,
} from "./_auth_fixtures.ts";
import { startSmtp, type TestSmtp } from "./_smtp.ts";
import { account, FAST_MAIL, mailsTo } from "./_account_fixtures.ts";

const BAD_CODE = "Cannot log in: invalid or expired code";

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

/** Polls until `n` mails to `to` arrived; returns the last one's code. */
async function codeFor(smtp: TestSmtp, to: string, n = 1): Promise<string> {
  const end = Date.now() + 20_000;
  while (mailsTo(smtp, to).length < n) {
    if (Date.now() > end) throw new Error(`no mail to ${to} within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = /\b(\d{6,8})\b/.exec(mailsTo(smtp, to)[n - 1].text);
  assert(m, `a code in the mail to ${to}`);
  return m[1];
}

/**
 * Proves no mail went to `to` after its first `n`: a mail to a marker
 * address, queued after, has arrived (the outbox sends in queue order).
 */
async function noMoreMail(
  s: TestServer,
  smtp: TestSmtp,
  entity: string,
  marker: string,
  to: string,
  n: number,
): Promise<void> {
  assertStatus(await post(s, entity, "request-otp", { email: marker }), 200);
  await codeFor(smtp, marker);
  assertEquals(mailsTo(smtp, to).length, n, `mails to ${to}`);
}

/** RFC 6238 (SHA-1, 6 digits, 30 s) for `step`, written here apart from lib/auth/totp.ts. */
function totpCode(base32: string, step: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of base32) {
    bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  }
  const key = new Uint8Array(Math.floor(bits.length / 8));
  for (let i = 0; i < key.length; i++) {
    key[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  }
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(step));
  const mac = createHmac("sha1", key).update(msg).digest();
  const o = mac[19] & 15;
  const n = ((mac[o] & 127) << 24) | (mac[o + 1] << 16) | (mac[o + 2] << 8) |
    mac[o + 3];
  return String(n % 1_000_000).padStart(6, "0");
}

/**
 * The server's current TOTP step, at least `margin` ms before it ends
 * (polls into the next step when too close to the end).
 */
async function stepWithMargin(s: TestServer, margin = 8_000): Promise<number> {
  while ((s.app.now() % 30_000) > 30_000 - margin) {
    await new Promise((r) => setTimeout(r, 200));
  }
  return Math.floor(s.app.now() / 30_000);
}

forEachDb("sign-in by code, MFA and TOTP", async (t, db) => {
  const s = await startServer(db, { trustProxy: true, mail: FAST_MAIL });
  const smtp = await startSmtp();
  try {
    const admin = await fixtureAdmin(s);
    assertStatus(
      await s.request("PATCH", "/api/v1/sys/settings", {
        token: admin,
        body: {
          app: { name: "Moon Test", url: "https://app.example.com" },
          mail: {
            from: { name: "Moon Test", address: "noreply@example.com" },
            smtp: { host: "127.0.0.1", port: smtp.port, security: "none" },
          },
        },
      }),
      200,
    );
    await createSchema(s, admin, {
      name: "people",
      type: "auth",
      rules: { get: AUTH },
      auth: { otp: { enabled: true } },
    });

    await t.step("OTP end to end: mailed code, single use", async () => {
      const ann = await fastUser(s, "people", { email: "ann@example.com" });
      const r = await post(s, "people", "request-otp", {
        email: "Ann@Example.com",
      });
      assertStatus(r, 200);
      assertEquals(Object.keys(r.data), ["otp_id"]);
      const code = await codeFor(smtp, "ann@example.com");
      const mail = mailsTo(smtp, "ann@example.com")[0];
      assert(mail.subject.length > 0, "a subject");
      // Stored only as a hash of the otp_id and the code.
      const rows = await s.app.storage.query(
        `SELECT "code_hash" FROM "mb_otps" WHERE "id" = ?`,
        [r.data.otp_id],
      );
      assertEquals(rows.length, 1);
      assert(/^[0-9a-f]{64}$/.test(String(rows[0].code_hash)), "a hash");
      assert(!String(rows[0].code_hash).includes(code), "not the code");

      const ok = await post(s, "people", "login-otp", {
        otp_id: r.data.otp_id,
        code,
      });
      assertStatus(ok, 200);
      assertEquals(ok.data.user.id, ann.id);
      assertEquals(ok.data.user.verified, true, "the code proved the email");
      const me = await s.request("GET", `/api/v1/entities/people/${ann.id}`, {
        token: ok.data.token,
      });
      assertStatus(me, 200, "the token works");
      const again = await post(s, "people", "login-otp", {
        otp_id: r.data.otp_id,
        code,
      });
      assertStatus(again, 401, "single use");
      assertEquals(again.error, BAD_CODE);
    });

    await t.step(
      "a second request within 2 minutes: the same otp_id, no second mail",
      async () => {
        await fastUser(s, "people", { email: "bob@example.com" });
        const first = await post(s, "people", "request-otp", {
          email: "bob@example.com",
        });
        const second = await post(s, "people", "request-otp", {
          email: "bob@example.com",
        });
        assertStatus(second, 200);
        assertEquals(second.data.otp_id, first.data.otp_id);
        const code = await codeFor(smtp, "bob@example.com");
        await fastUser(s, "people", { email: "bob-marker@example.com" });
        await noMoreMail(
          s,
          smtp,
          "people",
          "bob-marker@example.com",
          "bob@example.com",
          1,
        );
        // The code of the one mail opens the otp_id both answers carried.
        const ok = await post(s, "people", "login-otp", {
          otp_id: second.data.otp_id,
          code,
        });
        assertStatus(ok, 200);
      },
    );

    await t.step("5 wrong codes end an otp_id", async () => {
      await fastUser(s, "people", { email: "dave@example.com" });
      const r = await post(s, "people", "request-otp", {
        email: "dave@example.com",
      });
      const code = await codeFor(smtp, "dave@example.com");
      const wrong = code === "000000" ? "111111" : "000000";
      for (let i = 0; i < 5; i++) {
        const bad = await post(s, "people", "login-otp", {
          otp_id: r.data.otp_id,
          code: wrong,
        });
        assertStatus(bad, 401, `wrong code ${i + 1}`);
        assertEquals(bad.error, BAD_CODE);
      }
      const late = await post(s, "people", "login-otp", {
        otp_id: r.data.otp_id,
        code,
      });
      assertStatus(late, 401, "the right code after 5 wrong ones");
      assertEquals(late.error, BAD_CODE);
    });

    await t.step(
      "an unknown email gets an otp_id of the same shape, no mail, and its login fails the same way",
      async () => {
        await fastUser(s, "people", { email: "erin@example.com" });
        const known = await post(s, "people", "request-otp", {
          email: "erin@example.com",
        });
        const unknown = await post(s, "people", "request-otp", {
          email: "nobody@example.com",
        });
        assertStatus(unknown, 200);
        assertEquals(Object.keys(unknown.data), Object.keys(known.data));
        assertEquals(unknown.data.otp_id.length, known.data.otp_id.length);
        assertEquals(
          unknown.headers.get("content-length"),
          known.headers.get("content-length"),
        );
        await codeFor(smtp, "erin@example.com");
        await fastUser(s, "people", { email: "erin-marker@example.com" });
        await noMoreMail(
          s,
          smtp,
          "people",
          "erin-marker@example.com",
          "nobody@example.com",
          0,
        );
        for (const code of ["123456", "000000"]) {
          const r = await post(s, "people", "login-otp", {
            otp_id: unknown.data.otp_id,
            code,
          });
          assertStatus(r, 401);
          assertEquals(r.body, { status: 401, data: null, error: BAD_CODE });
        }
        const forged = await post(s, "people", "login-otp", {
          otp_id: "no-such-otp-id",
          code: "123456",
        });
        assertEquals(forged.body, {
          status: 401,
          data: null,
          error: BAD_CODE,
        });
      },
    );

    await t.step("a code dies with an email change", async () => {
      const fay = await fastUser(s, "people", { email: "fay@example.com" });
      const r = await post(s, "people", "request-otp", {
        email: "fay@example.com",
      });
      const code = await codeFor(smtp, "fay@example.com");
      assertStatus(
        await s.request("PATCH", `/api/v1/entities/people/${fay.id}`, {
          token: admin,
          body: { email: "fay2@example.com" },
        }),
        200,
      );
      const late = await post(s, "people", "login-otp", {
        otp_id: r.data.otp_id,
        code,
      });
      assertStatus(late, 401);
    });

    await t.step(
      "bad bodies 400; OTP not enabled 403; unknown entities 404",
      async () => {
        await createSchema(s, admin, { name: "no_otp", type: "auth" });
        await createSchema(s, admin, { name: "plain", type: "base" });
        const cases: [string, string, unknown, number][] = [
          ["people", "request-otp", { email: "not-an-email" }, 400],
          ["people", "request-otp", {}, 400],
          ["people", "login-otp", { code: "123456" }, 400],
          ["people", "login-otp", { otp_id: "x", code: 123456 }, 400],
          [
            "people",
            "login",
            { identity: "a@b.c", password: "x", mfa_id: 1 },
            400,
          ],
          ["no_otp", "request-otp", { email: "ann@example.com" }, 403],
          ["no_otp", "login-otp", { otp_id: "x", code: "123456" }, 403],
          ["no_otp", "login-totp", { mfa_id: "x", code: "123456" }, 403],
          ["people", "login-totp", { mfa_id: "x", code: "123456" }, 403],
        ];
        for (const [entity, path, body, status] of cases) {
          const r = await post(s, entity, path, body);
          assertStatus(r, status, `${entity}/${path} ${JSON.stringify(body)}`);
          assert(r.error.startsWith("Cannot "), r.error);
        }
        for (const entity of ["missing", "plain", "mb_admins"]) {
          for (
            const path of [
              "request-otp",
              "login-otp",
              "login-totp",
              "totp/setup",
              "totp/confirm",
              "totp/disable",
            ]
          ) {
            const r = await post(s, entity, path, {}, admin);
            assertStatus(r, 404, `${entity}/${path}`);
            assertEquals(r.text, ROUTE_NOT_FOUND);
          }
        }
      },
    );

    await t.step(
      "require_verified: a password login of an unverified user 403, a mailed code verifies; password.enabled off 403",
      async () => {
        await createSchema(s, admin, {
          name: "checked",
          type: "auth",
          auth: {
            require_verified: true,
            password: { enabled: false },
            otp: { enabled: true },
          },
        });
        await fastUser(s, "checked", { email: "lou@example.com" });
        const off = await post(s, "checked", "login", {
          identity: "lou@example.com",
          password: USER_PW,
        });
        assertStatus(off, 403, "password sign-in off");
        assertStatus(
          await s.request("PATCH", "/api/v1/schemas/checked", {
            token: admin,
            body: { auth: { password: { enabled: true } } },
          }),
          200,
        );
        const unverified = await post(s, "checked", "login", {
          identity: "lou@example.com",
          password: USER_PW,
        });
        assertStatus(unverified, 403);
        assertEquals(unverified.error, "Cannot log in: email not verified");
        const otp = await post(s, "checked", "request-otp", {
          email: "lou@example.com",
        });
        const code = await codeFor(smtp, "lou@example.com");
        const byCode = await post(s, "checked", "login-otp", {
          otp_id: otp.data.otp_id,
          code,
        });
        assertStatus(byCode, 200, "the code proves the email");
        assertEquals(byCode.data.user.verified, true);
        const now = await post(s, "checked", "login", {
          identity: "lou@example.com",
          password: USER_PW,
        });
        assertStatus(now, 200, "verified since");
      },
    );

    await createSchema(s, admin, {
      name: "staff",
      type: "auth",
      auth: { otp: { enabled: true }, mfa: { enabled: true } },
    });

    await t.step("MFA with mfa.enabled: password, then OTP", async () => {
      const gus = await fastUser(s, "staff", { email: "gus@example.com" });
      const first = await post(s, "staff", "login", {
        identity: "gus@example.com",
        password: USER_PW,
      });
      assertStatus(first, 401);
      assertEquals(Object.keys(first.data), ["mfa_id"]);
      assert(first.error.startsWith("Cannot log in"), first.error);
      const otp = await post(s, "staff", "request-otp", {
        email: "gus@example.com",
      });
      const code = await codeFor(smtp, "gus@example.com");
      const second = await post(s, "staff", "login-otp", {
        otp_id: otp.data.otp_id,
        code,
        mfa_id: first.data.mfa_id,
      });
      assertStatus(second, 200);
      assertEquals(second.data.user.id, gus.id);
      assert(typeof second.data.token === "string", "a token");
      // Single use.
      const reused = await post(s, "staff", "login", {
        identity: "gus@example.com",
        password: USER_PW,
        mfa_id: first.data.mfa_id,
      });
      assertStatus(reused, 401);
      assertEquals(reused.data, null);
    });

    await t.step(
      "MFA: the same method twice is refused; an mfa_id is its user's",
      async () => {
        await fastUser(s, "staff", { email: "hal@example.com" });
        await fastUser(s, "staff", { email: "ivy@example.com" });
        const first = await post(s, "staff", "login", {
          identity: "hal@example.com",
          password: USER_PW,
        });
        assertStatus(first, 401);
        const twice = await post(s, "staff", "login", {
          identity: "hal@example.com",
          password: USER_PW,
          mfa_id: first.data.mfa_id,
        });
        assertStatus(twice, 400, "password after password");
        assert(twice.error.includes("another method"), twice.error);
        const other = await post(s, "staff", "login", {
          identity: "ivy@example.com",
          password: USER_PW,
        });
        // Ivy's mailed code with Hal's mfa_id: refused.
        const otp = await post(s, "staff", "request-otp", {
          email: "ivy@example.com",
        });
        const code = await codeFor(smtp, "ivy@example.com");
        const crossed = await post(s, "staff", "login-otp", {
          otp_id: otp.data.otp_id,
          code,
          mfa_id: first.data.mfa_id,
        });
        assertStatus(crossed, 401, "another user's mfa_id");
        assertEquals(crossed.data, null);
        assertStatus(other, 401);
      },
    );

    await t.step("MFA with mfa.enabled: OTP, then password", async () => {
      const max = await fastUser(s, "staff", { email: "max@example.com" });
      const otp = await post(s, "staff", "request-otp", {
        email: "max@example.com",
      });
      const code = await codeFor(smtp, "max@example.com");
      const first = await post(s, "staff", "login-otp", {
        otp_id: otp.data.otp_id,
        code,
      });
      assertStatus(first, 401);
      const second = await post(s, "staff", "login", {
        identity: "max@example.com",
        password: USER_PW,
        mfa_id: first.data.mfa_id,
      });
      assertStatus(second, 200);
      assertEquals(second.data.user.id, max.id);
    });

    await t.step("MFA: 5 failed second logins end an mfa_id", async () => {
      await fastUser(s, "staff", { email: "jon@example.com" });
      const first = await post(s, "staff", "login-otp", {});
      assertStatus(first, 400);
      const otp = await post(s, "staff", "request-otp", {
        email: "jon@example.com",
      });
      const code = await codeFor(smtp, "jon@example.com");
      const byCode = await post(s, "staff", "login-otp", {
        otp_id: otp.data.otp_id,
        code,
      });
      assertStatus(byCode, 401, "OTP first");
      const mfaId = byCode.data.mfa_id;
      for (let i = 0; i < 5; i++) {
        const bad = await post(s, "staff", "login", {
          identity: "jon@example.com",
          password: "wrong-password-1",
          mfa_id: mfaId,
        });
        assertStatus(bad, 401, `wrong password ${i + 1}`);
      }
      const late = await post(s, "staff", "login", {
        identity: "jon@example.com",
        password: USER_PW,
        mfa_id: mfaId,
      });
      assertStatus(late, 401, "the right password after 5 failures");
      assertEquals(late.data, null);
    });

    await createSchema(s, admin, {
      name: "pilots",
      type: "auth",
      auth: { totp: { enabled: true } },
    });

    await t.step(
      "TOTP: setup, confirm (-1 step), MFA by password then TOTP, replay refused, disable (+1 step)",
      async () => {
        const kim = await fastUser(s, "pilots", { email: "kim@example.com" });
        const login = await post(s, "pilots", "login", {
          identity: "kim@example.com",
          password: USER_PW,
        });
        assertStatus(login, 200, "no second factor before enrolment");
        const token = login.data.token;
        assertStatus(await post(s, "pilots", "totp/setup", {}), 401, "guest");
        assertStatus(
          await post(s, "pilots", "totp/setup", {}, admin),
          403,
          "admin",
        );
        const setup = await post(s, "pilots", "totp/setup", {}, token);
        assertStatus(setup, 200);
        const secret: string = setup.data.secret;
        assert(/^[A-Z2-7]{32}$/.test(secret), secret);
        assertEquals(
          setup.data.uri,
          `otpauth://totp/Moon%20Test:kim%40example.com?secret=${secret}&issuer=Moon%20Test`,
        );
        // Stored sealed, not as given.
        const rows = await s.app.storage.query(
          `SELECT "secret" FROM "mb_totp" WHERE "user_id" = ?`,
          [kim.id],
        );
        assert(String(rows[0].secret).startsWith("v1."), "sealed");
        assert(!String(rows[0].secret).includes(secret), "not in clear");

        const step = await stepWithMargin(s);
        const wrong = await post(s, "pilots", "totp/confirm", {
          code: totpCode(secret, step - 5),
        }, token);
        assertStatus(wrong, 400, "a code of 2.5 minutes ago");
        assertStatus(
          await post(s, "pilots", "totp/confirm", {
            code: totpCode(secret, step - 1),
          }, token),
          204,
          "the previous step's code",
        );
        assertStatus(
          await post(s, "pilots", "totp/setup", {}, token),
          409,
          "set up twice",
        );

        const first = await post(s, "pilots", "login", {
          identity: "kim@example.com",
          password: USER_PW,
        });
        assertStatus(first, 401, "enrolled: a second factor");
        const mfaId = first.data.mfa_id;
        const noMfa = await post(s, "pilots", "login-totp", {
          code: totpCode(secret, step),
        });
        assertStatus(noMfa, 400, "login-totp without mfa_id");
        const ok = await post(s, "pilots", "login-totp", {
          mfa_id: mfaId,
          code: totpCode(secret, step),
        });
        assertStatus(ok, 200);
        assertEquals(ok.data.user.id, kim.id);

        const again = await post(s, "pilots", "login", {
          identity: "kim@example.com",
          password: USER_PW,
        });
        assertStatus(again, 401);
        const replay = await post(s, "pilots", "login-totp", {
          mfa_id: again.data.mfa_id,
          code: totpCode(secret, step),
        });
        assertStatus(replay, 401, "a code accepted once");
        assertEquals(replay.data, null);
        const older = await post(s, "pilots", "login-totp", {
          mfa_id: again.data.mfa_id,
          code: totpCode(secret, step - 1),
        });
        assertStatus(older, 401, "an earlier step after a later one");

        assertStatus(
          await post(s, "pilots", "totp/disable", {
            code: totpCode(secret, step),
          }, token),
          400,
          "disable with a used code",
        );
        assertStatus(
          await post(s, "pilots", "totp/disable", {
            code: totpCode(secret, step + 1),
          }, token),
          204,
          "the next step's code",
        );
        const after = await post(s, "pilots", "login", {
          identity: "kim@example.com",
          password: USER_PW,
        });
        assertStatus(after, 200, "no second factor after disable");
        assertEquals(
          (await s.app.storage.query(
            `SELECT 1 AS "one" FROM "mb_totp" WHERE "user_id" = ?`,
            [kim.id],
          )).length,
          0,
        );
      },
    );

    await t.step(
      "the login rate limit covers request-otp, login-otp and login-totp",
      async () => {
        const cases: [string, unknown][] = [
          ["request-otp", { email: "zed@example.com" }],
          ["login-otp", { otp_id: "x", code: "123456" }],
          ["login-totp", { mfa_id: "x", code: "123456" }],
        ];
        for (const [path, body] of cases) {
          const ip = nextIp();
          let last: Reply | undefined;
          for (let i = 0; i < 6; i++) {
            last = await s.request("POST", `/api/v1/auth/pilots/${path}`, {
              body,
              headers: { "x-forwarded-for": ip },
            });
            assertEquals(last.headers.get("x-ratelimit-limit"), "5", path);
          }
          assertStatus(last!, 429, path);
          assert(last!.headers.get("retry-after"), `${path}: Retry-After`);
        }
      },
    );
  } finally {
    await s.close();
    await smtp.close();
  }
});
