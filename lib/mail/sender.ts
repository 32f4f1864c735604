/**
 * The mail sender: claims due messages from the outbox (outbox.ts), sends
 * each through SMTP, and deletes it once the server accepted it. A failure
 * is retried with exponential backoff (the first retry after `firstMs`,
 * doubling up to `maxMs`) until `maxAttempts`; a refusal for good (a 5xx
 * reply) ends it at once. Every instance may run a sender: a claim is a
 * lease, so each message goes out once. Each send is logged with its
 * purpose, recipient and outcome, never its text (it holds tokens).
 *
 * @module
 */

import type { Logger } from "../logs/logger.ts";
import type { SettingsStore } from "../settings/store.ts";
import { mailReady } from "../settings/types.ts";
import type { Outbox, QueuedMail } from "./outbox.ts";
import { SendFailure, type SendMail } from "./transport.ts";

/** The sender's pace. */
export interface SenderPace {
  /** Between looks at the outbox while idle (default 1 s). */
  pollMs: number;
  /** The first retry's delay (default 10 s); each next one doubles. */
  firstMs: number;
  /** The longest delay between retries (default 1 h). */
  maxMs: number;
  /** Attempts before a message is given up (default 12: about 18 h). */
  maxAttempts: number;
  /** How long a claim holds (default 2 min: longer than a send may take, 30 s). */
  leaseMs: number;
}

/** The default pace. */
export const SENDER_PACE: SenderPace = {
  pollMs: 1000,
  firstMs: 10_000,
  maxMs: 3_600_000,
  maxAttempts: 12,
  leaseMs: 120_000,
};

/** Failed messages are kept this long (then pruned). */
const KEEP_FAILED_MS = 30 * 86_400_000;

/** Sends what the outbox holds, in the background. */
export class MailSender {
  #outbox: Outbox;
  #settings: SettingsStore;
  #log: Logger;
  #send: SendMail;
  #pace: SenderPace;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #warnedAt = -Infinity;

  /** Wires the sender; nothing runs before `start`. */
  constructor(
    outbox: Outbox,
    settings: SettingsStore,
    log: Logger,
    send: SendMail,
    pace: Partial<SenderPace> = {},
  ) {
    this.#outbox = outbox;
    this.#settings = settings;
    this.#log = log;
    this.#send = send;
    this.#pace = { ...SENDER_PACE, ...pace };
  }

  /** Starts looking at the outbox (now, then every `pollMs`, and when woken). */
  start(): void {
    this.#outbox.onQueued = () => this.wake();
    this.wake();
  }

  /** Looks at the outbox now (a look in progress is followed by another). */
  wake(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#round().catch((err) =>
      this.#log.warn("mail sender failed", {
        error: err instanceof Error ? err.message : String(err),
      })
    ).finally(() => {
      this.#running = undefined;
      if (this.#closed) return;
      if (this.#again) {
        this.#again = false;
        this.wake();
      } else this.#timer = setTimeout(() => this.wake(), this.#pace.pollMs);
    });
  }

  async #round(): Promise<void> {
    if (!await this.#outbox.due()) return;
    const settings = await this.#settings.current();
    if (!mailReady(settings)) {
      // Nothing is claimed: the messages wait for the settings.
      if (performance.now() - this.#warnedAt > 600_000) {
        this.#warnedAt = performance.now();
        this.#log.warn(
          "mail is waiting: set mail.smtp.host and mail.from.address in the settings",
          { waiting: await this.#outbox.waiting() },
        );
      }
      return;
    }
    // One message per claim: its lease covers its own send only (a batch
    // sent one after another could outlast the lease of its last rows).
    while (!this.#closed) {
      const [mail] = await this.#outbox.claim(1, this.#pace.leaseMs);
      if (!mail) break;
      await this.#deliver(mail);
    }
    if (Math.random() < 0.01) await this.#outbox.prune(KEEP_FAILED_MS);
  }

  async #deliver(mail: QueuedMail): Promise<void> {
    // The settings as they are now (a message waits through changes).
    const settings = await this.#settings.current();
    const what = {
      purpose: mail.purpose,
      entity: mail.entity,
      to: mail.to,
      attempt: mail.attempts,
    };
    try {
      await this.#send(settings, mail);
    } catch (err) {
      const failure = err instanceof SendFailure ? err : new SendFailure(
        err instanceof Error ? err.message : String(err),
        false,
      );
      if (failure.permanent || mail.attempts >= this.#pace.maxAttempts) {
        await this.#outbox.failed(mail.id, failure.message);
        this.#log.error("mail not sent: given up", {
          ...what,
          error: failure.message,
        });
        return;
      }
      const delay = Math.min(
        this.#pace.maxMs,
        this.#pace.firstMs * 2 ** (mail.attempts - 1),
      );
      await this.#outbox.retry(mail.id, delay, failure.message);
      this.#log.warn("mail not sent: will retry", {
        ...what,
        retry_in_ms: delay,
        error: failure.message,
      });
      return;
    }
    await this.#outbox.delivered(mail.id);
    this.#log.info("mail sent", what);
  }

  /** Stops; a send in progress finishes (bounded by its time limits). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    if (this.#outbox.onQueued) this.#outbox.onQueued = undefined;
    await this.#running;
  }
}
