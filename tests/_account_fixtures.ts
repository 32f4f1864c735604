/**
 * Fixtures of the account-mail suites (`tests/account_*_test.ts`): a server
 * with the standard auth schemas whose settings point at a real SMTP server
 * (tests/_smtp.ts), account-route calls from fresh client addresses, and
 * the mail a user got, with its link and token.
 *
 * @module
 */

import type { AppConfig } from "../lib/config.ts";
import { assert, type Reply, type TestServer } from "./_server.ts";
import { nextIp, withAuthServer } from "./_auth_fixtures.ts";
import { type ReceivedMail, startSmtp, type TestSmtp } from "./_smtp.ts";

/** The mail sender's pace in these suites (fast polls and retries). */
export const FAST_MAIL: AppConfig["mail"] = {
  pace: { pollMs: 50, firstMs: 100, maxMs: 400 },
};

/** The app name the settings get. */
export const APP_NAME = "Moonbase Test";

/**
 * Points the settings at `smtp`, with `app.url` the server itself (so the
 * links can be opened).
 */
export async function useSmtp(
  s: TestServer,
  admin: string,
  smtp: TestSmtp,
): Promise<void> {
  const r = await s.request("PATCH", "/api/v1/sys/settings", {
    token: admin,
    body: {
      app: { name: APP_NAME, url: s.url },
      mail: {
        from: { name: "Accounts", address: "noreply@example.com" },
        smtp: { host: "127.0.0.1", port: smtp.port, security: "none" },
      },
    },
  });
  assert(r.status === 200, `settings: ${r.status} ${r.text}`);
}

/**
 * Runs `fn` on a fresh auth server (withAuthServer) with its settings on a
 * fresh SMTP server (`useSmtp`).
 */
export async function withMailServer(
  db: "sqlite" | "postgres",
  fn: (s: TestServer, admin: string, smtp: TestSmtp) => Promise<void>,
): Promise<void> {
  const smtp = await startSmtp();
  try {
    await withAuthServer(db, async (s, admin) => {
      await useSmtp(s, admin, smtp);
      await fn(s, admin, smtp);
    }, { mail: FAST_MAIL });
  } finally {
    await smtp.close();
  }
}

/** POSTs to an account route of `entity` from a fresh client address. */
export function account(
  s: TestServer,
  entity: string,
  route: string,
  body: unknown,
  opts: { token?: string; ip?: string } = {},
): Promise<Reply> {
  return s.request("POST", `/api/v1/auth/${entity}/${route}`, {
    body,
    token: opts.token,
    headers: { "x-forwarded-for": opts.ip ?? nextIp() },
  });
}

/** The messages to `to` so far. */
export function mailsTo(smtp: TestSmtp, to: string): ReceivedMail[] {
  return smtp.received.filter((m) => m.to.includes(to));
}

/**
 * Waits (poll with a deadline) for message number `n` (1-based) to `to`
 * and returns it.
 */
export async function nthMailTo(
  smtp: TestSmtp,
  to: string,
  n = 1,
  ms = 20_000,
): Promise<ReceivedMail> {
  const end = Date.now() + ms;
  for (;;) {
    const got = mailsTo(smtp, to);
    if (got.length >= n) return got[n - 1];
    if (Date.now() > end) {
      throw new Error(`no mail ${n} to ${to} within ${ms} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The action link of a default template's mail (its first URL). */
export function linkOf(mail: ReceivedMail): URL {
  const m = /https?:\/\/\S+/.exec(mail.text);
  assert(m, `no link in: ${mail.text}`);
  return new URL(m[0]);
}

/** The token of a default template's mail (`?token=` of its link). */
export function tokenOf(mail: ReceivedMail): string {
  const token = linkOf(mail).searchParams.get("token");
  assert(token, `no token in the link of: ${mail.text}`);
  return token;
}

/**
 * Waits until the account tasks started so far have ended and the outbox
 * has nothing due (every queued message was handed to the SMTP server).
 */
export async function mailSettled(s: TestServer, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await s.app.accounts.settled();
    const rows = await s.app.storage.query(
      `SELECT COUNT(*) AS "n" FROM "mb_outbox" WHERE "status" = 'queued'`,
    );
    if (Number(rows[0].n) === 0) return;
    if (Date.now() > end) throw new Error(`outbox not empty within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The stored account-token rows of a user (every column). */
export async function tokenRows(
  s: TestServer,
  userId: string,
): Promise<Record<string, unknown>[]> {
  return await s.app.storage.query(
    `SELECT * FROM "mb_account_tokens" WHERE "user_id" = ?`,
    [userId],
  );
}
