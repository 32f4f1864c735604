/**
 * The account flows that go through a mailed link: email verification,
 * password reset and email change (`/api/v1/auth/<entity>/request-*` and
 * `confirm-*`, routes/account.ts).
 *
 * What they promise:
 *
 * - A `request-*` answers before it looks anything up: it checks the shape
 *   of the body, then the lookup, the token and the mail run in a task of
 *   their own (`#later`). The answer (204) and its cost are the same for
 *   known and unknown emails, so nobody learns which have accounts.
 * - At most one mail per entity, purpose and address in two minutes
 *   (lib/mail/throttle.ts, shared with the sign-in codes); the request
 *   still answers 204.
 * - Mail goes through the outbox (lib/mail/outbox.ts): queued in the
 *   database in the transaction that makes its token (and takes its mail
 *   slot), sent by the sender, retried through an SMTP outage.
 * - Tokens (account_tokens.ts): single use, hashed, short-lived, dead after
 *   any change of password or email.
 * - Record changes go through `Entity.update`, the one record write path:
 *   hooks, realtime and the end of sessions on a new password happen there.
 *   An email change ends the sessions here (`endSessions`).
 *
 * @module
 */

import { unlinkUser } from "./oauth2/links.ts";
import { invalidFields, MoonbaseError } from "../errors.ts";
import type { Storage } from "../db/storage.ts";
import type { Logger } from "../logs/logger.ts";
import type { Outbox } from "../mail/outbox.ts";
import { claimWindow, pruneWindows, throttleKey } from "../mail/throttle.ts";
import type { RecordData } from "../records/codec.ts";
import { MAX_PASSWORD, MIN_PASSWORD } from "../records/codec.ts";
import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";
import { emailOrEmpty } from "../schema/shape.ts";
import {
  type AccountToken,
  type AccountTokens,
  sameSecret,
  stampOf,
  type TokenPurpose,
} from "./account_tokens.ts";
import { verifyDummy, verifyPassword } from "./password.ts";

/** What the flows need from the instance. */
export interface AccountEnv {
  storage: Storage;
  tokens: AccountTokens;
  outbox: Outbox;
  log: Logger;
  /** The database's clock (ms). */
  now: () => number;
  /** Ends every session of a user (lib/auth/revocation.ts `revokeUser`). */
  endSessions(entity: string, userId: string): Promise<void>;
}

/** The message of a link that cannot be used, whatever the reason. */
function badToken(action: string): MoonbaseError {
  return invalidFields(
    {
      token: {
        code: "invalid",
        message: "The link is invalid, used or expired",
      },
    },
    `Cannot ${action}: the link is invalid, used or expired; ask for a new one`,
  );
}

/** The email of a request body, lower-cased; 400 on `email` otherwise. */
function emailOf(body: Record<string, unknown>, action: string): string {
  const v = body.email;
  const checked = typeof v === "string" && v.length <= 320
    ? emailOrEmpty(v)
    : undefined;
  if (!checked?.ok || v === "") {
    throw invalidFields({
      email: { code: "invalid_email", message: "Must be an email address" },
    }, `Cannot ${action}: \`email\` must be an email address`);
  }
  return String(v).toLowerCase();
}

/** A password of a request body; 400 on `password` otherwise. */
function passwordOf(
  body: Record<string, unknown>,
  action: string,
  min: number,
): string {
  const v = body.password;
  if (typeof v !== "string" || v.length < min || v.length > MAX_PASSWORD) {
    throw invalidFields({
      password: min > 1
        ? {
          code: "invalid_password",
          message: `Must be a string of ${min}-${MAX_PASSWORD} characters`,
        }
        : { code: "required", message: "The current password is required" },
    }, `Cannot ${action}: \`password\` is missing or invalid`);
  }
  return v;
}

function takenEmail(): MoonbaseError {
  return new MoonbaseError(
    "conflict",
    "Cannot change email: the address is already in use by another account; ask for a change to another address",
  );
}

/** The mail flows of one instance. */
export class AccountFlows {
  #env: AccountEnv;
  #pending = new Set<Promise<void>>();
  #runs = 0;

  /** Wires the flows; `env.tokens` must be started. */
  constructor(env: AccountEnv) {
    this.#env = env;
  }

  /**
   * Runs `work` after the current request answered (never awaited by it);
   * a failure is logged, without tokens.
   */
  #later(what: string, entity: Entity, work: () => Promise<void>): void {
    const task: Promise<void> = new Promise<void>((r) => setTimeout(r, 0))
      .then(work)
      .catch((err) =>
        this.#env.log.error(`${what} failed`, {
          entity: entity.name,
          error: err instanceof Error ? err.message : String(err),
        })
      )
      .finally(() => this.#pending.delete(task));
    this.#pending.add(task);
  }

  /** Resolves when every task started so far has ended (tests, closing). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /**
   * Takes the mail slot, makes the token and queues the mail, in one
   * transaction: all three or none.
   */
  async #send(
    entity: Entity,
    purpose: TokenPurpose,
    user: Record<string, unknown>,
    to: string,
  ): Promise<void> {
    const { storage, tokens, outbox, now } = this.#env;
    const at = now();
    await storage.transaction(async (tx) => {
      const key = throttleKey(entity.id, purpose, to);
      if (!await claimWindow(tx, key, "", at)) return; // one per two minutes
      const token = await tokens.issue({
        purpose,
        entityId: entity.id,
        userId: String(user.id),
        email: to,
        stamp: stampOf(user),
      }, tx);
      await outbox.enqueue({
        to,
        purpose,
        entity: entity.name,
        template: authOptions(entity).templates[purpose],
        vars: { TOKEN: token, EMAIL: to },
      }, tx);
    });
    if (++this.#runs % 100 === 0) await pruneWindows(storage, at);
  }

  /** `request-verification {email}`: mails a link to an unverified user. */
  requestVerification(entity: Entity, body: Record<string, unknown>): void {
    const email = emailOf(body, "request verification");
    this.#later("verification request", entity, async () => {
      const row = await entity.rowFromCols(email, ["email"]);
      if (!row) return;
      const user = await entity.read(String(row.id));
      if (!user || user.verified === true) return;
      await this.#send(entity, "verification", row, email);
    });
  }

  /** `request-password-reset {email}`: mails a reset link to the user. */
  requestPasswordReset(entity: Entity, body: Record<string, unknown>): void {
    const email = emailOf(body, "request password reset");
    this.#later("password reset request", entity, async () => {
      const row = await entity.rowFromCols(email, ["email"]);
      if (row) await this.#send(entity, "password_reset", row, email);
    });
  }

  /**
   * `request-email-change {email}` by the signed-in `user`: mails a link to
   * the new address, unless another account has it (the answer is the
   * same: this route tells no more than sign-up does).
   */
  requestEmailChange(
    entity: Entity,
    user: RecordData,
    body: Record<string, unknown>,
  ): void {
    const email = emailOf(body, "request email change");
    if (email === user.email) {
      throw invalidFields({
        email: { code: "unchanged", message: "This is already your email" },
      }, "Cannot request email change: this is already your email");
    }
    this.#later("email change request", entity, async () => {
      const row = await entity.rowFromCols(String(user.id), ["id"]);
      if (!row || await entity.rowFromCols(email, ["email"])) return;
      await this.#send(entity, "email_change", row, email);
    });
  }

  /**
   * The live token of a confirm body and its user's stored row: 400 unless
   * the token is live and the user's email and password are those it was
   * made for. Not spent yet.
   */
  async #check(
    entity: Entity,
    body: Record<string, unknown>,
    purpose: TokenPurpose,
    action: string,
  ): Promise<{ token: AccountToken; row: Record<string, unknown> }> {
    const token = await this.#env.tokens.find(body.token, purpose, entity.id);
    if (!token) throw badToken(action);
    const row = await entity.rowFromCols(token.userId, ["id"]);
    if (!row || !sameSecret(stampOf(row), token.stamp)) {
      await this.#env.tokens.spend(token);
      throw badToken(action);
    }
    return { token, row };
  }

  async #spend(token: AccountToken, action: string): Promise<void> {
    if (!await this.#env.tokens.spend(token)) throw badToken(action);
  }

  /** `confirm-verification {token}`: the user becomes verified. */
  async confirmVerification(
    entity: Entity,
    body: Record<string, unknown>,
  ): Promise<void> {
    const action = "confirm verification";
    const { token } = await this.#check(entity, body, "verification", action);
    await this.#spend(token, action);
    const user = await entity.read(token.userId);
    if (user && user.verified !== true) {
      await entity.update(token.userId, { verified: true });
      await unlinkUser(this.#env.storage, entity.id, token.userId);
    }
  }

  /**
   * `confirm-password-reset {token, password}`: the new password is set,
   * the user counts as verified (the mail reached them), and every session
   * of the user ends (`Entity.update` ends them on a new password).
   */
  async confirmPasswordReset(
    entity: Entity,
    body: Record<string, unknown>,
  ): Promise<void> {
    const action = "reset password";
    // Checked first: a password too short does not spend the link.
    const password = passwordOf(body, action, MIN_PASSWORD);
    const { token } = await this.#check(entity, body, "password_reset", action);
    await this.#spend(token, action);
    const before = await entity.read(token.userId);
    await entity.update(token.userId, { password, verified: true });
    if (before && before.verified !== true) {
      await unlinkUser(this.#env.storage, entity.id, token.userId);
    }
    await this.#env.tokens.forget(entity.id, token.userId);
  }

  /**
   * `confirm-email-change {token, password}`: with the user's current
   * password, the email becomes the one the link was mailed to (verified:
   * the mail reached it) and every session of the user ends. 409 when
   * another account took the address meanwhile. `beforePasswordCheck` runs
   * right before the password is verified (the route counts it as a login
   * attempt). A wrong password leaves the link usable.
   */
  async confirmEmailChange(
    entity: Entity,
    body: Record<string, unknown>,
    beforePasswordCheck: () => Promise<void>,
  ): Promise<void> {
    const action = "change email";
    const password = passwordOf(body, action, 1);
    const { token, row } = await this.#check(
      entity,
      body,
      "email_change",
      action,
    );
    const holder = await entity.rowFromCols(token.email, ["email"]);
    if (holder && String(holder.id) !== token.userId) throw takenEmail();
    await beforePasswordCheck();
    const hash = typeof row.password === "string" ? row.password : undefined;
    const ok = hash
      ? await verifyPassword(password, hash, "low")
      : await verifyDummy(password, "low");
    if (!ok) {
      throw invalidFields({
        password: { code: "invalid", message: "The password is wrong" },
      }, "Cannot change email: the password is wrong");
    }
    await this.#spend(token, action);
    const wasVerified = row.verified === true || row.verified === 1;
    try {
      await entity.update(token.userId, { email: token.email, verified: true });
      if (!wasVerified) {
        await unlinkUser(this.#env.storage, entity.id, token.userId);
      }
    } catch (err) {
      if (err instanceof MoonbaseError && err.code === "conflict") {
        throw takenEmail();
      }
      throw err;
    }
    await this.#env.endSessions(entity.name, token.userId);
    await this.#env.tokens.forget(entity.id, token.userId);
  }

  /** Waits for the tasks in progress (their mail is queued). */
  async close(): Promise<void> {
    await this.settled();
  }
}
