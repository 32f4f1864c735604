/**
 * Settings (`/api/v1/sys/settings`), the test mail and the outbox, against a
 * real SMTP server (tests/_smtp.ts), on both databases. One server per
 * database; the steps run in order and share it (later steps build on the
 * settings earlier ones made).
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { fastUser, USER_PW } from "./_auth_fixtures.ts";
import { startSmtp, type TestSmtp } from "./_smtp.ts";
import { pause, poll } from "./_wait.ts";
import type { MailTemplate } from "../lib/mail/template.ts";
import type { Queryable } from "../lib/db/storage.ts";

const FAST = { pace: { pollMs: 50, firstMs: 100, maxMs: 400 } };

const TEMPLATE: MailTemplate = {
  subject: "Verify your {APP_NAME} account",
  body: "Hello {EMAIL}, open {ACTION_URL}",
  html: '<p>Hello {EMAIL}</p><a href="{ACTION_URL}">verify</a>',
  action_url: "{APP_URL}/mb/auth/{ENTITY}/confirm-verification?token={TOKEN}",
};

/** Points the settings at the test SMTP server. */
async function useSmtp(
  s: TestServer,
  smtp: TestSmtp,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const r = await s.request("PATCH", "/api/v1/sys/settings", {
    token: await s.adminToken(),
    body: {
      app: { name: "Moonbase Test", url: "https://app.example.com/" },
      mail: {
        from: { name: "Test App", address: "noreply@example.com" },
        smtp: {
          host: "127.0.0.1",
          port: smtp.port,
          security: "none",
          ...extra,
        },
      },
    },
  });
  assertStatus(r, 200);
}

async function queued(s: TestServer): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COUNT(*) AS "n" FROM "mb_outbox" WHERE "status" = 'queued'`,
  );
  return Number(rows[0].n);
}

forEachDb("settings and mail", async (t, db) => {
  const s = await startServer(db, { mail: FAST });
  const smtp = await startSmtp({
    auth: { username: "mailer", password: "smtp-secret-1" },
  });
  try {
    const admin = await s.adminToken();

    await t.step("GET: the defaults, secrets blanked", async () => {
      const r = await s.request("GET", "/api/v1/sys/settings", {
        token: admin,
      });
      assertStatus(r, 200);
      assertEquals(r.data, {
        app: { name: "Moonbase", url: "http://localhost:7070" },
        mail: {
          from: { name: "Moonbase", address: "" },
          smtp: {
            host: "",
            port: 587,
            security: "starttls",
            username: "",
            password: "",
            password_set: false,
          },
        },
        backups: { cron: "", keep: 7 },
      });
    });

    await t.step("admins only: a guest 401, a user 403", async () => {
      await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: { name: "members", type: "auth", fields: [] },
      });
      // A precomputed hash (no scrypt to seed; the login verifies it).
      await fastUser(s, "members", { email: "m@example.com" });
      const login = await s.request("POST", "/api/v1/auth/members/login", {
        body: { identity: "m@example.com", password: USER_PW },
      });
      assertStatus(login, 200);
      const user = login.data.token;
      for (
        const [method, path] of [
          ["GET", "/api/v1/sys/settings"],
          ["PATCH", "/api/v1/sys/settings"],
          ["POST", "/api/v1/sys/settings/test-mail"],
        ]
      ) {
        const body = method === "GET" ? undefined : {};
        assertStatus(await s.request(method, path, { body }), 401, path);
        assertStatus(
          await s.request(method, path, { body, token: user }),
          403,
          path,
        );
      }
    });

    await t.step("PATCH: invalid values are 400 with data.fields", async () => {
      const cases: [unknown, string[]][] = [
        [{ mail: { smtp: { port: 0 } } }, ["mail.smtp.port"]],
        [{ mail: { smtp: { port: "25" } } }, ["mail.smtp.port"]],
        [{ mail: { smtp: { security: "ssl" } } }, ["mail.smtp.security"]],
        [{ app: { nmae: "x" } }, ["app.nmae"]],
        [{ extra: 1 }, ["extra"]],
        [{ app: { url: "ftp://x" } }, ["app.url"]],
        [{ app: { name: "" } }, ["app.name"]],
        [{ mail: { from: { address: "not-an-email" } } }, [
          "mail.from.address",
        ]],
        [{ mail: { from: { name: "A\r\nBcc: x@y.z" } } }, ["mail.from.name"]],
        [{ mail: "x" }, ["mail"]],
        [{ mail: { smtp: { host: "a b", port: 70000 } } }, [
          "mail.smtp.host",
          "mail.smtp.port",
        ]],
      ];
      for (const [body, fields] of cases) {
        const r = await s.request("PATCH", "/api/v1/sys/settings", {
          token: admin,
          body,
        });
        assertStatus(r, 400, JSON.stringify(body));
        assertEquals(Object.keys(r.data.fields).sort(), fields.sort());
      }
      // Nothing of a refused PATCH was kept.
      const r = await s.request("GET", "/api/v1/sys/settings", {
        token: admin,
      });
      assertEquals(r.data.app.name, "Moonbase");
    });

    await t.step("PATCH: partial; the password is write-only", async () => {
      const r = await s.request("PATCH", "/api/v1/sys/settings", {
        token: admin,
        body: {
          mail: { smtp: { username: "mailer", password: "smtp-secret-1" } },
        },
      });
      assertStatus(r, 200);
      assertEquals(r.data.mail.smtp.password, "");
      assertEquals(r.data.mail.smtp.password_set, true);
      assertEquals(r.data.mail.smtp.port, 587); // untouched
      assert(!r.text.includes("smtp-secret-1"), "the secret leaked");
      await useSmtp(s, smtp); // omits the password: kept
      const g = await s.request("GET", "/api/v1/sys/settings", {
        token: admin,
      });
      assertEquals(g.data.app, {
        name: "Moonbase Test",
        url: "https://app.example.com",
      });
      assertEquals(g.data.mail.smtp.password_set, true);
      assert(!g.text.includes("smtp-secret-1"), "the secret leaked");
      // The GET's answer sent back (password "" and password_set) keeps it too.
      assertStatus(
        await s.request("PATCH", "/api/v1/sys/settings", {
          token: admin,
          body: g.data,
        }),
        200,
      );
    });

    await t.step("test-mail: 204 once the server accepted it", async () => {
      // The server requires AUTH with the kept password: this proves it was kept.
      const r = await s.request("POST", "/api/v1/sys/settings/test-mail", {
        token: admin,
        body: { to: "someone@example.com" },
      });
      assertStatus(r, 204);
      const [mail] = await smtp.waitFor(1);
      assertEquals(mail.to, ["someone@example.com"]);
      assertEquals(mail.from, "noreply@example.com");
      assert(mail.subject.includes("Moonbase Test"), mail.subject);
    });

    await t.step("test-mail: a bad address is 400", async () => {
      for (const body of [{}, { to: "nope" }, { to: 3 }]) {
        const r = await s.request("POST", "/api/v1/sys/settings/test-mail", {
          token: admin,
          body,
        });
        assertStatus(r, 400, JSON.stringify(body));
      }
    });

    await t.step(
      "test-mail: refused → 502 with the server's reason",
      async () => {
        smtp.refuse("550 5.1.1 Mailbox unavailable here");
        try {
          const r = await s.request("POST", "/api/v1/sys/settings/test-mail", {
            token: admin,
            body: { to: "someone@example.com" },
          });
          assertStatus(r, 502);
          assert(r.error.includes("Mailbox unavailable here"), r.error);
          assert(r.error.startsWith("Cannot send test mail: "), r.error);
        } finally {
          smtp.refuse(undefined);
        }
      },
    );

    await t.step("test-mail: wrong SMTP password → 502", async () => {
      await useSmtp(s, smtp, { password: "wrong-password" });
      const r = await s.request("POST", "/api/v1/sys/settings/test-mail", {
        token: admin,
        body: { to: "someone@example.com" },
      });
      assertStatus(r, 502);
      assert(r.error.includes("535"), r.error);
      await useSmtp(s, smtp, { password: "smtp-secret-1" });
    });

    await t.step("test-mail: unreachable → 502, no hang", async () => {
      await smtp.down();
      try {
        const r = await s.request("POST", "/api/v1/sys/settings/test-mail", {
          token: admin,
          body: { to: "someone@example.com" },
        });
        assertStatus(r, 502);
        assert(/ECONNREFUSED|refused/i.test(r.error), r.error);
      } finally {
        await smtp.up();
      }
    });

    await t.step(
      "outbox: SMTP down then up, every message arrives once",
      async () => {
        const before = smtp.received.length;
        await smtp.down();
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          ids.push(
            await s.app.outbox.enqueue({
              to: `user${i}@example.com`,
              purpose: "verification",
              entity: "members",
              template: TEMPLATE,
              vars: { TOKEN: `tok-${i}-secret` },
            }),
          );
        }
        // The sender tried and failed: the messages stay, with their attempts.
        await poll("a failed attempt", async () => {
          const rows = await s.app.storage.query(
            `SELECT MIN("attempts") AS "a" FROM "mb_outbox" WHERE "status" = 'queued'`,
          );
          return Number(rows[0].a) >= 1;
        });
        assertEquals(await queued(s), 5);
        assertEquals(smtp.received.length, before);
        await smtp.up();
        const all = await smtp.waitFor(before + 5);
        const mails = all.slice(before);
        assertEquals(
          mails.map((m) => m.to[0]).sort(),
          [0, 1, 2, 3, 4].map((i) => `user${i}@example.com`),
        );
        await poll("the outbox empties", async () => await queued(s) === 0);
        await pause(300); // no duplicate follows
        assertEquals(smtp.received.length, before + 5);
        const m = mails.find((m) => m.to[0] === "user0@example.com")!;
        assertEquals(m.subject, "Verify your Moonbase Test account");
        assertEquals(
          m.text.trim(),
          "Hello user0@example.com, open https://app.example.com/mb/auth/members/confirm-verification?token=tok-0-secret",
        );
        assert(
          m.html.includes(
            'href="https://app.example.com/mb/auth/members/confirm-verification?token=tok-0-secret"',
          ),
          m.html,
        );
      },
    );

    await t.step(
      "outbox: queued inside a transaction, sent once it commits",
      async () => {
        const before = smtp.received.length;
        const queue = (tx: Queryable, to: string) =>
          s.app.outbox.enqueue({
            to,
            purpose: "verification",
            entity: "members",
            template: TEMPLATE,
            vars: { TOKEN: "tx-token" },
          }, tx);
        // A stale settings cache read inside the transaction must not wait
        // for the transaction's end (one connection on SQLite).
        s.app.settings.invalidate();
        await s.app.storage.transaction((tx) => queue(tx, "tx@example.com"));
        s.app.settings.invalidate();
        await s.app.storage.transaction(async (tx) => {
          await queue(tx, "rolled-back@example.com");
          throw new Error("roll back");
        }).catch(() => {});
        const [mail] = (await smtp.waitFor(before + 1)).slice(before);
        assertEquals(mail.to, ["tx@example.com"]);
        await pause(300);
        assertEquals(smtp.received.length, before + 1, "the rolled back one");
      },
    );

    await t.step(
      "outbox: a change of the mail settings sends at once",
      async () => {
        const before = smtp.received.length;
        await smtp.down();
        const id = await s.app.outbox.enqueue({
          to: "late@example.com",
          purpose: "verification",
          entity: "members",
          template: TEMPLATE,
          vars: { TOKEN: "late-token" },
        });
        await poll("a failed attempt", async () => {
          const rows = await s.app.storage.query(
            `SELECT "attempts" FROM "mb_outbox" WHERE "id" = ?`,
            [id],
          );
          return Number(rows[0].attempts) >= 1;
        });
        // As after many failures: the next attempt an hour away.
        await s.app.storage.run(
          `UPDATE "mb_outbox" SET "next_at" = "next_at" + 3600000 WHERE "id" = ?`,
          [id],
        );
        await smtp.up();
        await useSmtp(s, smtp);
        const all = await smtp.waitFor(before + 1);
        assertEquals(all[before].to, ["late@example.com"]);
      },
    );

    await t.step("outbox: each send logged without its token", async () => {
      await s.app.log.flush();
      const r = await s.request(
        "GET",
        "/api/v1/sys/logs?search=mail&limit=200",
        { token: admin },
      );
      assertStatus(r, 200);
      const text = JSON.stringify(r.data.items);
      assert(!text.includes("tok-0-secret"), "a token reached the logs");
      const sent = r.data.items.filter((e: { message: string }) =>
        e.message === "mail sent"
      );
      assert(
        sent.some((e: { data: Record<string, unknown> }) =>
          e.data.to === "user3@example.com" &&
          e.data.purpose === "verification"
        ),
        text.slice(0, 2000),
      );
      assert(
        r.data.items.some((e: { message: string }) =>
          e.message === "mail not sent: will retry"
        ),
        "the failed attempts are logged",
      );
    });

    await t.step(
      "outbox: a refusal for good is given up, text wiped",
      async () => {
        smtp.refuse("550 5.1.1 No such user");
        try {
          const id = await s.app.outbox.enqueue({
            to: "gone@example.com",
            purpose: "password_reset",
            entity: "members",
            template: TEMPLATE,
            vars: { TOKEN: "reset-secret" },
          });
          await poll("given up", async () => {
            const rows = await s.app.storage.query(
              `SELECT "status", "text_body", "last_error" FROM "mb_outbox" WHERE "id" = ?`,
              [id],
            );
            return rows[0]?.status === "failed";
          });
          const rows = await s.app.storage.query(
            `SELECT "text_body", "subject", "last_error" FROM "mb_outbox" WHERE "id" = ?`,
            [id],
          );
          assertEquals(rows[0].text_body, "");
          assert(String(rows[0].last_error).includes("No such user"));
        } finally {
          smtp.refuse(undefined);
        }
      },
    );
  } finally {
    await smtp.close();
    await s.close();
  }
});

Deno.test({
  name: "mail: two instances on one PostgreSQL deliver each message once",
  ignore: !DATABASES.includes("postgres"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const url = await (await startPostgres()).createDatabase();
    const smtp = await startSmtp();
    const a = await startServer("postgres", { connection: url, mail: FAST });
    const b = await startServer("postgres", { connection: url, mail: FAST });
    try {
      await useSmtp(a, smtp);
      const n = 30;
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          (i % 2 ? a : b).app.outbox.enqueue({
            to: `u${i}@example.com`,
            purpose: "otp",
            entity: "members",
            template: TEMPLATE,
            vars: { CODE: String(i) },
          })),
      );
      await smtp.waitFor(n);
      await poll("the outbox empties", async () => await queued(a) === 0);
      await pause(500); // no duplicate follows
      assertEquals(smtp.received.length, n);
      assertEquals(
        new Set(smtp.received.map((m) => m.to[0])).size,
        n,
      );
    } finally {
      await a.close();
      await b.close();
      await smtp.close();
    }
  },
});
