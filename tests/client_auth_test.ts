/**
 * `@moonbase/client` auth against a real server, on both databases: login,
 * refresh, logout and the store; sign-in by mailed code, a second factor,
 * TOTP; the mailed-link flows (password reset, verification, email change)
 * with a real SMTP server (tests/_smtp.ts); the code exchange of an OAuth2
 * sign-in with a real OpenID provider (tests/_oidc.ts; the popup itself is
 * in tests/client_browser_test.ts); impersonation; and the refresh before
 * expiry, one at a time.
 *
 * @module
 */

import { base32Decode, totpAt } from "../lib/auth/totp.ts";
import { assert, assertEquals, forEachDb, startServer } from "./_server.ts";
import { mailsTo, tokenOf, withMailServer } from "./_account_fixtures.ts";
import { fastUser, issue, USER_PW } from "./_auth_fixtures.ts";
import type { TestSmtp } from "./_smtp.ts";
import { startOidc } from "./_oidc.ts";
import {
  clientOf,
  exampleEntities,
  rejection,
  untyped,
} from "./_client_fixtures.ts";
import { poll, ShiftedClock } from "./_wait.ts";

/**
 * The users' password: its hash is precomputed (`fastUser`), so only the
 * logins and password changes under test pay for scrypt.
 */
const PW = USER_PW;

/** The `n`th mail to `to`, once it came. */
async function mail(smtp: TestSmtp, to: string, n = 1) {
  return await poll(`mail ${n} to ${to}`, () => mailsTo(smtp, to)[n - 1]);
}

/** The code of the `n`th mail to `to`. */
async function codeIn(smtp: TestSmtp, to: string, n = 1): Promise<string> {
  const m = /\b(\d{6,8})\b/.exec((await mail(smtp, to, n)).text);
  assert(m, `a code in the mail to ${to}`);
  return m[1];
}

function totp(secret: string, steps: number): string {
  return totpAt(base32Decode(secret)!, Date.now() + 30_000 * steps);
}

forEachDb("client auth: sign-in methods and account flows", async (t, db) => {
  await withMailServer(db, async (s, adminToken, smtp) => {
    const admin = clientOf(s);
    admin.authStore.save(adminToken, { id: "admin" });
    await admin.schemas.update("users", {
      auth: { otp: { enabled: true }, totp: { enabled: true } },
    });
    // Users are seeded with a precomputed hash (sign-up through the client
    // is covered by the client records tests): a client for each.
    const signUp = async (email: string) => {
      await fastUser(s, "users", { email });
      return clientOf(s);
    };

    await t.step("login, refresh, logout; the store tells", async () => {
      const mb = await signUp("ana@example.com");
      const seen: string[] = [];
      mb.authStore.onChange((token) => seen.push(token));
      const first = await mb.auth("users").login("ana@example.com", PW);
      assertEquals(mb.authStore.token, first.token);
      assertEquals(mb.authStore.user?.email, "ana@example.com");
      const next = await mb.auth("users").refresh();
      assert(next.token !== first.token, "a new token");
      const old = clientOf(s);
      old.authStore.save(first.token, null);
      assertEquals(
        (await rejection(() => old.entity("users").list())).status,
        401,
      );
      await mb.auth("users").logout();
      assertEquals([mb.authStore.token, mb.authStore.isValid], ["", false]);
      assertEquals(seen, [first.token, next.token, ""]);
      const reuse = clientOf(s);
      reuse.authStore.save(next.token, null);
      assertEquals(
        (await rejection(() => reuse.entity("users").list())).status,
        401,
        "logout revoked it",
      );
      const wrong = await rejection(() =>
        mb.auth("users").login("ana@example.com", "nope-nope-1")
      );
      assertEquals(wrong.status, 401);
      const noRoute = await rejection(() =>
        untyped(mb).auth("hidden").login("x@example.com", PW)
      );
      assertEquals([noRoute.status, noRoute.message], [404, "Route Not Found"]);
      const methods = await mb.auth("users").methods();
      assertEquals(
        [methods.password.enabled, methods.otp.enabled, methods.totp.enabled],
        [true, true, true],
      );
      for (const c of [mb, old, reuse]) c.close();
    });

    await t.step("sign-in by mailed code", async () => {
      const mb = await signUp("otto@example.com");
      const { otp_id } = await mb.auth("users").requestOtp("otto@example.com");
      const code = await codeIn(smtp, "otto@example.com");
      const r = await mb.auth("users").loginOtp(otp_id, code);
      assertEquals([r.user.email, r.user.verified], ["otto@example.com", true]);
      assertEquals(mb.authStore.token, r.token);
      mb.close();
    });

    await t.step("TOTP: setup, confirm, second factor, disable", async () => {
      const tia = await fastUser(s, "users", { email: "tia@example.com" });
      const mb = clientOf(s);
      // A session to enrol with (the login itself is the first step's).
      mb.authStore.save(await issue(s, "users", tia.id), tia);
      const { secret, uri } = await mb.auth("users").totp.setup();
      assert(uri.startsWith("otpauth://totp/"), uri);
      await mb.auth("users").totp.confirm(totp(secret, -1));
      await mb.auth("users").logout();
      const first = await rejection(() =>
        mb.auth("users").login("tia@example.com", PW)
      );
      assertEquals(first.status, 401);
      assert(first.mfaId, "the first login answers an mfa_id");
      assertEquals(mb.authStore.token, "", "no token after a first factor");
      const done = await mb.auth("users").loginTotp(
        first.mfaId,
        totp(secret, 0),
      );
      assertEquals(mb.authStore.token, done.token);
      await mb.auth("users").totp.disable(totp(secret, 1));
      const wrong = await rejection(() =>
        mb.auth("users").totp.confirm("000000")
      );
      assert([400, 409].includes(wrong.status), `${wrong.status}`);
      mb.close();
    });

    await t.step("a second factor by mailed code (mfa_id)", async () => {
      await admin.schemas.update("users", { auth: { mfa: { enabled: true } } });
      try {
        const mb = await signUp("mia@example.com");
        const first = await rejection(() =>
          mb.auth("users").login("mia@example.com", PW)
        );
        assert(first.mfaId, first.message);
        const { otp_id } = await mb.auth("users").requestOtp("mia@example.com");
        const code = await codeIn(smtp, "mia@example.com");
        const r = await mb.auth("users").loginOtp(otp_id, code, {
          mfaId: first.mfaId,
        });
        assertEquals(mb.authStore.token, r.token);
        mb.close();
      } finally {
        await admin.schemas.update("users", {
          auth: { mfa: { enabled: false } },
        });
      }
    });

    await t.step(
      "password reset, verification, email change by mail",
      async () => {
        const mb = await signUp("rae@example.com");
        await mb.auth("users").requestPasswordReset("rae@example.com");
        await mb.auth("users").confirmPasswordReset(
          tokenOf(await mail(smtp, "rae@example.com")),
          "brand-new-pass-1",
        );
        await mb.auth("users").login("rae@example.com", "brand-new-pass-1");

        const vic = await signUp("vic@example.com");
        await vic.auth("users").requestVerification("vic@example.com");
        await vic.auth("users").confirmVerification(
          tokenOf(await mail(smtp, "vic@example.com")),
        );
        const stale = await rejection(() =>
          vic.auth("users").confirmVerification("made-up-token")
        );
        assertEquals(stale.status, 400);
        assert("token" in stale.fields, JSON.stringify(stale.fields));
        const r = await vic.auth("users").login("vic@example.com", PW);
        assertEquals(r.user.verified, true);

        await vic.auth("users").requestEmailChange("vic2@example.com");
        await vic.auth("users").confirmEmailChange(
          tokenOf(await mail(smtp, "vic2@example.com")),
          PW,
        );
        const moved = await vic.auth("users").login("vic2@example.com", PW);
        assertEquals(moved.user.email, "vic2@example.com");
        mb.close();
        vic.close();
      },
    );

    await t.step("impersonation by an admin", async () => {
      const user = await fastUser(s, "users", { email: "imp@example.com" });
      const as = await admin.auth("users").impersonate(String(user.id), {
        duration: 120,
      });
      assertEquals(as.user.id, user.id);
      assert(admin.authStore.token === adminToken, "the admin's token stays");
    });

    await t.step("OAuth2 code exchange with a real provider", async () => {
      const REDIRECT = "http://127.0.0.1:9/callback";
      const idp = await startOidc({
        clients: [{
          client_id: "app",
          client_secret: "app-secret",
          redirect_uris: [REDIRECT],
        }],
        accounts: {
          alice: {
            email: "alice@example.com",
            email_verified: true,
            name: "Alice",
          },
        },
      });
      try {
        await admin.schemas.update("users", {
          auth: {
            oauth2: {
              enabled: true,
              providers: [{
                name: "corp",
                display_name: "Corp",
                issuer: idp.issuer,
                client_id: "app",
                client_secret: "app-secret",
                scopes: ["openid", "email", "profile"],
              }],
              fields: { name: "name" },
            },
          },
        });
        const mb = clientOf(s);
        const methods = await mb.auth("users").methods({
          redirectUrl: REDIRECT,
        });
        const link = methods.oauth2.providers.find((p) => p.name === "corp");
        assert(link, "the provider is listed");
        const back = await idp.authorize(link.auth_url, "alice");
        assertEquals(back.state, link.state);
        const r = await mb.auth("users").loginOAuth2Code({
          provider: "corp",
          code: back.code,
          codeVerifier: link.code_verifier,
          redirectUrl: REDIRECT,
          state: back.state,
        });
        assertEquals([r.user.email, r.user.name, r.meta.is_new], [
          "alice@example.com",
          "Alice",
          true,
        ]);
        assertEquals(mb.authStore.token, r.token);
        const replay = await rejection(() =>
          mb.auth("users").loginOAuth2Code({
            provider: "corp",
            code: back.code,
            codeVerifier: link.code_verifier,
            redirectUrl: REDIRECT,
          })
        );
        assertEquals(replay.status, 401);
        const popup = await rejection(() =>
          mb.auth("users").loginOAuth2({
            provider: "corp",
            redirectUrl: REDIRECT,
          })
        );
        assert(/needs a browser window/.test(popup.message), popup.message);
        mb.close();
      } finally {
        await admin.schemas.update("users", {
          auth: { oauth2: { enabled: false } },
        });
        await idp.close();
      }
    });
    admin.close();
  });
});

forEachDb("client auth: refresh before expiry, once", async (_t, db) => {
  // Tokens live 3 s and are due 1 s before expiry (a quarter of 3 s, at
  // least 1 s). The server's clock is set back 1 s for the first token, so
  // it is due within a second instead of two.
  const clock = new ShiftedClock();
  const s = await startServer(db, {
    trustProxy: true,
    tokenTtl: 3,
    clock: clock.now,
  });
  try {
    await exampleEntities(s);
    const refreshes: string[] = [];
    const counting: typeof fetch = (input, init) => {
      if (String(input).endsWith("/refresh")) refreshes.push(String(input));
      const headers = new Headers(init?.headers);
      headers.set(
        "x-forwarded-for",
        `10.9.${refreshes.length}.${Math.floor(Math.random() * 250)}`,
      );
      return fetch(input, { ...init, headers });
    };
    // The user is seeded and its session issued directly: the login
    // itself is covered above.
    const user = await fastUser(s, "users", { email: "rex@example.com" });
    clock.advance(-1000);
    const token = await issue(s, "users", user.id);
    clock.advance(1000);
    // Due 1 s before expiry.
    await poll("the refresh is due", () => {
      const exp = JSON.parse(atob(token.split(".")[1])).exp * 1000;
      return Date.now() >= exp - 1000 ? true : undefined;
    }, { deadline: 15_000 });
    // A client given the due token, and five calls at once: each waits for
    // the one refresh (two refreshes of one token: the second would be
    // refused, and the store cleared).
    const mb = clientOf(s, { fetch: counting });
    mb.authStore.save(token, user);
    const lists = await Promise.all(
      Array.from({ length: 5 }, () => mb.entity("users").list()),
    );
    assertEquals(lists.length, 5);
    assert(mb.authStore.token !== token, "refreshed");
    assertEquals(refreshes.length, 1, "one refresh for all the calls");
    assert(mb.authStore.isValid, "the new token is held");
    // The timer refreshes the next token without any call.
    const second = mb.authStore.token;
    await poll(
      "the timer's refresh",
      () => mb.authStore.token !== second ? true : undefined,
      { deadline: 15_000 },
    );
    assertEquals(refreshes.length, 2);
    mb.close();
  } finally {
    await s.close();
  }
});
