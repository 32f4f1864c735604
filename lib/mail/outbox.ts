/**
 * The outbox: mail waiting in the database (`mb_outbox`) until the sender
 * (sender.ts) has delivered it. A request only writes a row, so no request
 * waits for SMTP, and an SMTP outage loses nothing: the row stays until a
 * send succeeds or its attempts run out.
 *
 * Public interface for the account features (docs/guide/settings-and-mail.md):
 *
 * ```ts ignore
 * // Inside the transaction that stores the token's hash (or after it):
 * await core.outbox.enqueue({
 *   to: user.email,
 *   purpose: "verification",          // logged; never the token
 *   entity: entity.name,              // `{ENTITY}` in the action URL
 *   template: authOptions(entity.schema).templates.verification,
 *   vars: { TOKEN: token },           // EMAIL defaults to `to`
 * }, tx);
 * ```
 *
 * The row holds the rendered message (with its token or code) only until
 * it is delivered (then deleted) or given up (then its text is wiped).
 *
 * @module
 */

import type { Queryable, Row, Storage } from "../db/storage.ts";
import { MoonbaseError } from "../errors.ts";
import { uuidv7 } from "../ids.ts";
import { emailOrEmpty } from "../schema/shape.ts";
import type { SettingsStore } from "../settings/store.ts";
import {
  type MailTemplate,
  type MailVars,
  renderTemplate,
} from "./template.ts";

/** One message to queue. */
export interface MailRequest {
  /** The recipient's address. */
  to: string;
  /** What the mail is for (`verification`, `password_reset`, …): logged. */
  purpose: string;
  /** The auth entity's name (logged, and `{ENTITY}`). */
  entity: string;
  template: MailTemplate;
  /** `{TOKEN}`, `{CODE}`, …; `APP_NAME`/`APP_URL` come from the settings, `EMAIL` defaults to `to`. */
  vars?: MailVars;
}

/** A queued message as the sender claims it. */
export interface QueuedMail {
  id: string;
  purpose: string;
  entity: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Attempts so far, this one included. */
  attempts: number;
}

const COLUMNS =
  `"id", "purpose", "entity", "recipient", "subject", "text_body", "html_body", "attempts"`;

function queued(r: Row): QueuedMail {
  return {
    id: String(r.id),
    purpose: String(r.purpose),
    entity: String(r.entity),
    to: String(r.recipient),
    subject: String(r.subject),
    text: String(r.text_body),
    html: String(r.html_body),
    attempts: Number(r.attempts),
  };
}

/** The queue in `mb_outbox`. */
export class Outbox {
  #storage: Storage;
  #settings: SettingsStore;
  #now: () => number;
  /** Called after a message was queued (the sender looks soon). */
  onQueued: (() => void) | undefined;

  /** `now`: the database's clock (one time base for every instance). */
  constructor(storage: Storage, settings: SettingsStore, now: () => number) {
    this.#storage = storage;
    this.#settings = settings;
    this.#now = now;
  }

  /**
   * Renders the message with the current settings and queues it, inside
   * `q`'s transaction when given (it is sent only if that commits).
   * Resolves with the message's id once the row is written; delivery
   * happens later, off the request path.
   */
  async enqueue(
    req: MailRequest,
    q: Queryable = this.#storage,
  ): Promise<string> {
    const to = emailOrEmpty(req.to);
    if (!to.ok || req.to === "") {
      throw new MoonbaseError(
        "invalid",
        "Cannot queue mail: the recipient is not a valid email address",
      );
    }
    const settings = await this.#settings.current(q);
    const mail = renderTemplate(req.template, {
      EMAIL: req.to,
      ENTITY: req.entity,
      ...req.vars,
      APP_NAME: settings.app.name,
      APP_URL: settings.app.url,
    });
    const id = uuidv7();
    const now = this.#now();
    await q.run(
      `INSERT INTO "mb_outbox" ("id", "purpose", "entity", "recipient", "subject", "text_body", "html_body", "status", "attempts", "next_at", "claimed_until", "last_error", "created") VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, 0, '', ?)`,
      [
        id,
        req.purpose.slice(0, 64),
        req.entity.slice(0, 64),
        req.to,
        mail.subject,
        mail.text,
        mail.html,
        now,
        now,
      ],
    );
    // Inside a transaction the row is not visible yet: the sender's next
    // look (or its poll) finds it once committed.
    setTimeout(() => this.onQueued?.(), q === this.#storage ? 0 : 50);
    return id;
  }

  /** True when a message is due (a read: no write lock while idle). */
  async due(): Promise<boolean> {
    const now = this.#now();
    const rows = await this.#storage.query(
      `SELECT 1 AS "one" FROM "mb_outbox" WHERE "status" = 'queued' AND "next_at" <= ? AND "claimed_until" < ? LIMIT 1`,
      [now, now],
    );
    return rows.length > 0;
  }

  /**
   * Claims up to `limit` due messages for `leaseMs`: only one claimer gets
   * each row (the `UPDATE` re-checks `claimed_until` under the row's lock
   * on PostgreSQL; SQLite writes one at a time). A claimer that dies lets
   * its rows go when the lease ends.
   */
  async claim(limit: number, leaseMs: number): Promise<QueuedMail[]> {
    const now = this.#now();
    const rows = await this.#storage.query(
      `UPDATE "mb_outbox" SET "claimed_until" = ?, "attempts" = "attempts" + 1 WHERE "id" IN (SELECT "id" FROM "mb_outbox" WHERE "status" = 'queued' AND "next_at" <= ? AND "claimed_until" < ? ORDER BY "next_at" LIMIT ?) AND "status" = 'queued' AND "claimed_until" < ? RETURNING ${COLUMNS}`,
      [now + leaseMs, now, now, limit, now],
    );
    return rows.map(queued);
  }

  /** Delivered: the row (and the token it holds) goes. */
  async delivered(id: string): Promise<void> {
    await this.#storage.run(`DELETE FROM "mb_outbox" WHERE "id" = ?`, [id]);
  }

  /** Not delivered: try again after `delayMs`. */
  async retry(id: string, delayMs: number, error: string): Promise<void> {
    await this.#storage.run(
      `UPDATE "mb_outbox" SET "next_at" = ?, "claimed_until" = 0, "last_error" = ? WHERE "id" = ?`,
      [this.#now() + delayMs, error.slice(0, 500), id],
    );
  }

  /** Given up: kept for the record, its text wiped (it may hold a token). */
  async failed(id: string, error: string): Promise<void> {
    await this.#storage.run(
      `UPDATE "mb_outbox" SET "status" = 'failed', "subject" = '', "text_body" = '', "html_body" = '', "claimed_until" = 0, "last_error" = ? WHERE "id" = ?`,
      [error.slice(0, 500), id],
    );
  }

  /**
   * Makes every waiting message due now (the mail settings changed: a
   * message backing off after an outage or a wrong password goes at once).
   */
  async hurry(): Promise<void> {
    await this.#storage.run(
      `UPDATE "mb_outbox" SET "next_at" = ? WHERE "status" = 'queued' AND "next_at" > ?`,
      [this.#now(), this.#now()],
    );
    this.onQueued?.();
  }

  /** Removes failed messages older than `ageMs`. */
  async prune(ageMs: number): Promise<void> {
    await this.#storage.run(
      `DELETE FROM "mb_outbox" WHERE "status" = 'failed' AND "created" < ?`,
      [this.#now() - ageMs],
    );
  }

  /** Messages waiting to be sent. */
  async waiting(): Promise<number> {
    const rows = await this.#storage.query(
      `SELECT COUNT(*) AS "n" FROM "mb_outbox" WHERE "status" = 'queued'`,
    );
    return Number(rows[0]?.n ?? 0);
  }
}
