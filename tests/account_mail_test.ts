/**
 * Verification mail end to end, and what every `request-*` route promises:
 * the same answer for known and unknown emails (sent before the lookup),
 * one mail per address and purpose per two minutes, the per-IP limit, the
 * `Route Not Found` rule, the entity's templates, and no mail lost while
 * the SMTP server is down. A real SMTP server (tests/_smtp.ts), on both
 * databases; one server per database, each step with users of its own.
 *
 * @module
 */

import { createHash } from "node:crypto";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
} from "./_server.ts";
import { fastUser, nextIp, ROUTE_NOT_FOUND, signup } from "./_auth_fixtures.ts";
import {
  account,
  APP_NAME,
  linkOf,
  mailSettled,
  mailsTo,
  nthMailTo,
  tokenOf,
  tokenRows,
  withMailServer,
} from "./_account_fixtures.ts";
import { tableOf } from "../lib/schema/ddl.ts";

/**
 * The parts of an answer a client can compare: not its date, request id or
 * the second its rate-limit window resets (each request here comes from a
 * fresh address, whose window starts with it).
 */
function visible(r: Reply): unknown {
  const headers = [...r.headers].filter(([k]) =>
    !["date", "x-request-id", "x-ratelimit-reset"].includes(k)
  );
  return { status: r.status, text: r.text, headers };
}

forEachDb(
  "account mail: verification and the request routes",
  async (t, db) => {
    await withMailServer(db, async (s, admin, smtp) => {
      await t.step(
        "sign-up → request-verification → mail → link → verified",
        async () => {
          const user = await signup(s, "users", {
            email: "Ann@Example.com",
            password: "ann-password-1",
          });
          assertEquals(user.verified, false);
          const events = async () =>
            Number(
              (await s.app.storage.query(
                `SELECT COUNT(*) AS "n" FROM "mb_events" WHERE "record_id" = ? AND "action" = 'update'`,
                [user.id as string],
              ))[0].n,
            );
          const before = await events();
          const r = await account(s, "users", "request-verification", {
            email: "ann@example.com",
          });
          assertStatus(r, 204);
          assertEquals(r.text, "");
          const mail = await nthMailTo(smtp, "ann@example.com");
          assertEquals(mail.subject, `Verify your ${APP_NAME} email`);
          assertEquals(mail.from, "noreply@example.com");
          const link = linkOf(mail);
          assertEquals(
            `${link.origin}${link.pathname}`,
            `${s.url}/mb/auth/users/confirm-verification`,
          );
          const token = tokenOf(mail);
          assert(/^[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/.test(token), token);
          // Only the secret's SHA-256 is stored; the token is nowhere.
          const rows = await tokenRows(s, user.id as string);
          assertEquals(rows.length, 1);
          const secret = token.slice(33);
          assertEquals(
            rows[0].hash,
            createHash("sha256").update(secret).digest("hex"),
          );
          assert(
            !JSON.stringify(rows).includes(secret),
            "the secret is stored",
          );
          assertEquals(
            Number(rows[0].expires) - Number(rows[0].created),
            3 * 86_400_000,
            "a verification link lives 3 days",
          );
          // The page the link opens.
          const page = await fetch(link);
          assertEquals(page.status, 200);
          assertEquals(page.headers.get("referrer-policy"), "no-referrer");
          await page.body?.cancel();
          const c = await account(s, "users", "confirm-verification", {
            token,
          });
          assertStatus(c, 204);
          const after = await s.request(
            "GET",
            `/api/v1/entities/users/${user.id}`,
            {
              token: admin,
            },
          );
          assertEquals(after.data.verified, true);
          // Through the record write path: realtime saw the update.
          assert(await events() > before, "no update event");
          // Single use.
          const again = await account(s, "users", "confirm-verification", {
            token,
          });
          assertStatus(again, 400);
          assert(again.data.fields.token, again.text);
          assertEquals(await tokenRows(s, user.id as string), []);
        },
      );

      await t.step(
        "a made-up, malformed or wrong-secret token: 400, the same text",
        async () => {
          const u = await fastUser(s, "users", { email: "tess@example.com" });
          assertStatus(
            await account(s, "users", "request-verification", {
              email: "tess@example.com",
            }),
            204,
          );
          const token = tokenOf(await nthMailTo(smtp, "tess@example.com"));
          const wrongSecret = token.slice(0, 33) +
            (token[33] === "A" ? "B" : "A") + token.slice(34);
          const answers = [];
          for (
            const bad of [
              wrongSecret,
              "0".repeat(32) + "_" + "A".repeat(43),
              "nonsense",
              "",
              42,
              null,
            ]
          ) {
            const r = await account(s, "users", "confirm-verification", {
              token: bad,
            });
            assertStatus(r, 400, `token ${bad}`);
            answers.push(r.text);
          }
          assertEquals(new Set(answers).size, 1, answers.join("\n"));
          // The right one still works: a wrong guess spends nothing.
          assertStatus(
            await account(s, "users", "confirm-verification", { token }),
            204,
          );
          const rec = await s.app.schemas.get("users")!.read(u.id);
          assertEquals(rec?.verified, true);
          // A token of one purpose opens no other route.
          assertStatus(
            await account(s, "users", "request-password-reset", {
              email: "tess@example.com",
            }),
            204,
          );
          const reset = tokenOf(await nthMailTo(smtp, "tess@example.com", 2));
          assertStatus(
            await account(s, "users", "confirm-verification", { token: reset }),
            400,
          );
          // Nor the same route of another entity.
          assertStatus(
            await account(s, "members", "confirm-password-reset", {
              token: reset,
              password: "whatever-pw-1",
            }),
            400,
          );
        },
      );

      await t.step(
        "a link used by several requests at once: exactly one succeeds",
        async () => {
          await fastUser(s, "users", { email: "race@example.com" });
          assertStatus(
            await account(s, "users", "request-verification", {
              email: "race@example.com",
            }),
            204,
          );
          const token = tokenOf(await nthMailTo(smtp, "race@example.com"));
          const answers = await Promise.all(
            Array.from(
              { length: 6 },
              () => account(s, "users", "confirm-verification", { token }),
            ),
          );
          assertEquals(
            answers.map((r) => r.status).sort(),
            [204, 400, 400, 400, 400, 400],
          );
        },
      );

      await t.step(
        "known and unknown emails get the same answer, and no mail goes to an unknown one",
        async () => {
          await fastUser(s, "users", { email: "kim@example.com" });
          for (
            const route of ["request-verification", "request-password-reset"]
          ) {
            const known = await account(s, "users", route, {
              email: "kim@example.com",
            });
            const unknown = await account(s, "users", route, {
              email: "nobody@example.com",
            });
            assertStatus(known, 204, route);
            assertEquals(visible(unknown), visible(known), route);
          }
          await nthMailTo(smtp, "kim@example.com", 2);
          await mailSettled(s);
          assertEquals(mailsTo(smtp, "nobody@example.com"), []);
          // A malformed email is a 400 whoever asks (its shape only).
          const bad = await account(s, "users", "request-password-reset", {
            email: "not-an-email",
          });
          assertStatus(bad, 400);
          assert(bad.data.fields.email, bad.text);
        },
      );

      await t.step(
        "the answer does not wait for the lookup (PostgreSQL: the users table locked)",
        async () => {
          if (db !== "postgres") return; // SQLite readers are never blocked
          await fastUser(s, "users", { email: "lou@example.com" });
          await s.app.storage.transaction(async (tx) => {
            await tx.exec(
              `LOCK TABLE ${tableOf("users")} IN ACCESS EXCLUSIVE MODE`,
            );
            // A guard, not a speed limit: an answer that waited for the
            // lookup would wait for this transaction, which waits for it.
            const res = await fetch(
              `${s.url}/api/v1/auth/users/request-password-reset`,
              {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  "x-forwarded-for": nextIp(),
                },
                body: JSON.stringify({ email: "lou@example.com" }),
                signal: AbortSignal.timeout(15_000),
              },
            );
            assertEquals(res.status, 204);
            await res.body?.cancel();
            // Meanwhile the lookup runs, and waits for the lock.
            const end = Date.now() + 20_000;
            for (;;) {
              const waiting = await tx.query(
                `SELECT COUNT(*) AS "n" FROM pg_locks WHERE NOT "granted"`,
              );
              if (Number(waiting[0].n) > 0) break;
              if (Date.now() > end) throw new Error("no lookup waited");
              await new Promise((r) => setTimeout(r, 20));
            }
            const queued = await tx.query(
              `SELECT COUNT(*) AS "n" FROM "mb_outbox" WHERE "recipient" = ?`,
              ["lou@example.com"],
            );
            assertEquals(Number(queued[0].n), 0);
          });
          await nthMailTo(smtp, "lou@example.com");
        },
      );

      await t.step(
        "one mail per address and purpose in two minutes (silently)",
        async () => {
          await fastUser(s, "users", { email: "bob@example.com" });
          for (let i = 0; i < 3; i++) {
            assertStatus(
              await account(s, "users", "request-password-reset", {
                email: "bob@example.com",
              }),
              204,
            );
          }
          await nthMailTo(smtp, "bob@example.com");
          await mailSettled(s);
          assertEquals(mailsTo(smtp, "bob@example.com").length, 1);
          // Another purpose has its own slot.
          assertStatus(
            await account(s, "users", "request-verification", {
              email: "bob@example.com",
            }),
            204,
          );
          const verify = await nthMailTo(smtp, "bob@example.com", 2);
          assertEquals(verify.subject, `Verify your ${APP_NAME} email`);
          // Two minutes later (the stored time moved back): one more.
          await s.app.storage.run(
            `UPDATE "mb_mail_throttle" SET "until" = "until" - 120000 WHERE "key" LIKE ?`,
            ["%/password_reset/bob@example.com"],
          );
          assertStatus(
            await account(s, "users", "request-password-reset", {
              email: "bob@example.com",
            }),
            204,
          );
          const third = await nthMailTo(smtp, "bob@example.com", 3);
          assertEquals(third.subject, `Reset your ${APP_NAME} password`);
        },
      );

      await t.step(
        "the entity's templates, with every placeholder",
        async () => {
          const schema = await s.request("GET", "/api/v1/schemas/members", {
            token: admin,
          });
          const p = await s.request(
            "PATCH",
            `/api/v1/schemas/${schema.data.id}`,
            {
              token: admin,
              body: {
                auth: {
                  templates: {
                    password_reset: {
                      subject: "{APP_NAME}: reset for {EMAIL}",
                      body: "Open {ACTION_URL} (token {TOKEN}) at {APP_URL}",
                      html: '<a href="{ACTION_URL}">Reset {EMAIL}</a>',
                      action_url:
                        "https://front.example/reset?t={TOKEN}&e={EMAIL}",
                    },
                  },
                },
              },
            },
          );
          assertStatus(p, 200);
          await fastUser(s, "members", { email: "mia@example.com" });
          assertStatus(
            await account(s, "members", "request-password-reset", {
              email: "mia@example.com",
            }),
            204,
          );
          const mail = await nthMailTo(smtp, "mia@example.com");
          assertEquals(mail.subject, `${APP_NAME}: reset for mia@example.com`);
          const m = /^Open (\S+) \(token (\S+)\) at (\S+)$/.exec(
            mail.text.trim(),
          );
          assert(m, mail.text);
          assertEquals(m[3], s.url);
          assertEquals(
            m[1],
            `https://front.example/reset?t=${m[2]}&e=mia%40example.com`,
          );
          assert(
            mail.html.includes(`href="https://front.example/reset?t=${m[2]}`),
          );
          // The token of a custom link works like the default's.
          assertStatus(
            await account(s, "members", "confirm-password-reset", {
              token: m[2],
              password: "mia-new-password",
            }),
            204,
          );
        },
      );

      await t.step(
        "the SMTP server down, then up: the mail arrives",
        async () => {
          await fastUser(s, "users", { email: "hal@example.com" });
          await smtp.down();
          try {
            assertStatus(
              await account(s, "users", "request-password-reset", {
                email: "hal@example.com",
              }),
              204,
            );
            const end = Date.now() + 20_000;
            for (;;) {
              const rows = await s.app.storage.query(
                `SELECT "attempts", "last_error" FROM "mb_outbox" WHERE "recipient" = ?`,
                ["hal@example.com"],
              );
              if (
                rows.length === 1 && Number(rows[0].attempts) >= 1 &&
                rows[0].last_error !== ""
              ) break;
              if (Date.now() > end) throw new Error("no failed attempt seen");
              await new Promise((r) => setTimeout(r, 50));
            }
          } finally {
            await smtp.up();
          }
          const mail = await nthMailTo(smtp, "hal@example.com");
          assertEquals(mail.subject, `Reset your ${APP_NAME} password`);
        },
      );

      await t.step("the per-IP limit covers the account routes", async () => {
        const ip = nextIp();
        for (let i = 0; i < 10; i++) {
          const r = await account(s, "users", "request-password-reset", {
            email: `limit${i}@example.com`,
          }, { ip });
          assertStatus(r, 204);
          assertEquals(r.headers.get("x-ratelimit-limit"), "10");
        }
        for (
          const route of [
            "request-verification",
            "confirm-verification",
            "confirm-password-reset",
            "request-email-change",
            "confirm-email-change",
          ]
        ) {
          const r = await account(s, "users", route, {}, { ip });
          assertStatus(r, 429, route);
          assert(Number(r.headers.get("retry-after")) > 0, route);
        }
      });

      await t.step(
        "the link pages: no admin login, strict headers, everything escaped, no inline script",
        async () => {
          const name = `<script>alert("x")</script>&'`;
          const set = (app: string) =>
            s.request("PATCH", "/api/v1/sys/settings", {
              token: admin,
              body: { app: { name: app } },
            });
          assertStatus(await set(name), 200);
          try {
            for (
              const page of [
                "confirm-verification",
                "reset-password",
                "confirm-email-change",
              ]
            ) {
              const r = await fetch(`${s.url}/mb/auth/users/${page}?token=x`);
              const html = await r.text();
              assertEquals(r.status, 200, page);
              assertEquals(
                r.headers.get("content-type"),
                "text/html; charset=utf-8",
              );
              assertEquals(r.headers.get("referrer-policy"), "no-referrer");
              assertEquals(r.headers.get("x-frame-options"), "DENY");
              assertEquals(r.headers.get("cache-control"), "no-store");
              const csp = r.headers.get("content-security-policy") ?? "";
              assert(/script-src 'self'/.test(csp), csp);
              assert(!/unsafe-inline/.test(csp), csp);
              assert(/frame-ancestors 'none'/.test(csp), csp);
              assert(!html.includes(name), "the app name is not escaped");
              assert(
                html.includes("&lt;script&gt;alert(&quot;x&quot;)"),
                html,
              );
              // Scripts only from the server, none inline.
              const scripts = [...html.matchAll(/<script[^>]*>/g)].map((m) =>
                m[0]
              );
              assertEquals(scripts, [
                '<script src="/mb/assets/account.js" defer>',
              ]);
            }
          } finally {
            assertStatus(await set(APP_NAME), 200);
          }
          for (
            const [path, type] of [
              ["/mb/assets/account.js", "text/javascript; charset=utf-8"],
              ["/mb/assets/account.css", "text/css; charset=utf-8"],
            ]
          ) {
            const r = await fetch(s.url + path);
            await r.body?.cancel();
            assertEquals([r.status, r.headers.get("content-type")], [
              200,
              type,
            ]);
          }
          const other = await fetch(`${s.url}/mb/auth/users/other-page`);
          await other.body?.cancel();
          assertEquals(other.status, 404);
        },
      );

      await t.step("no token in the logs", async () => {
        const tokens = smtp.received.map((m) =>
          /[0-9a-f]{32}_[A-Za-z0-9_-]{43}/.exec(m.text)?.[0]
        ).filter((x) => x !== undefined);
        assert(tokens.length >= 5, `${tokens.length} tokens seen`);
        // Wait until the log holds the sends (it is written in batches).
        const end = Date.now() + 20_000;
        let text = "";
        for (;;) {
          const r = await s.request("GET", "/api/v1/sys/logs?limit=1000", {
            token: admin,
          });
          text = r.text;
          if (text.includes("hal@example.com")) break;
          if (Date.now() > end) throw new Error("no mail log entries");
          await new Promise((r) => setTimeout(r, 100));
        }
        for (const token of tokens) {
          assert(!text.includes(token.slice(33)), "a token in the logs");
        }
      });

      await t.step(
        "Route Not Found for every entity that is not a served auth entity",
        async () => {
          for (const entity of ["posts", "hidden", "mb_admins", "missing"]) {
            for (
              const route of [
                "request-verification",
                "confirm-verification",
                "request-password-reset",
                "confirm-password-reset",
                "request-email-change",
                "confirm-email-change",
              ]
            ) {
              const r = await account(s, entity, route, {
                email: "a@example.com",
              });
              assertEquals(
                [r.status, r.text],
                [404, ROUTE_NOT_FOUND],
                `${entity} ${route}`,
              );
            }
            const page = await s.request(
              "GET",
              `/mb/auth/${entity}/reset-password`,
            );
            assertEquals(
              [page.status, page.text],
              [404, ROUTE_NOT_FOUND],
              entity,
            );
          }
        },
      );
    });
  },
);
