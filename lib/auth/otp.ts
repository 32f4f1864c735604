/**
 * Sign-in by a mailed code (`request-otp`, `login-otp`): one row per
 * `otp_id` in `mb_otps`, holding the code only as a hash (code_hash.ts),
 * the user it is for and their email, the attempts made and its expiry.
 *
 * - Every request answers an `otp_id`, for unknown emails too: such a row
 *   has no user and the hash of a code nobody was sent, so its login fails
 *   exactly like a wrong code. Both cases do the same reads and writes; the
 *   mail is queued after the answer (`deliver`).
 * - At most one mail per address per 2 minutes (lib/mail/throttle.ts): a
 *   request inside the window sends nothing and answers the `otp_id` of the
 *   request that opened it (whose mailed code keeps working until it
 *   expires, is used, or has taken 5 wrong codes).
 * - A code is single use; 5 wrong codes end its `otp_id`; it lives
 *   `auth.otp.duration` seconds.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { invalidFields, MoonbaseError } from "../errors.ts";
import { randomToken } from "../ids.ts";
import type { Outbox } from "../mail/outbox.ts";
import {
  claimWindow,
  heldRef,
  pruneWindows,
  throttleKey,
} from "../mail/throttle.ts";
import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";
import { emailOrEmpty } from "../schema/shape.ts";
import {
  codeHash,
  type DerivedKey,
  randomDigits,
  sameHash,
} from "./code_hash.ts";

/** Wrong codes that end an `otp_id`. */
export const OTP_ATTEMPTS = 5;

const BAD_CODE = "Cannot log in: invalid or expired code";

/** A code that checked out: whose it is. */
export interface UsedCode {
  userId: string;
  /** The address the code was mailed to. */
  email: string;
  /** When the code was made (ms, database clock). */
  created: number;
}

/** Mailed sign-in codes. */
export class OtpCodes {
  #storage: Storage;
  #key: DerivedKey;
  #now: () => number;
  #outbox: Outbox;
  #failed: (err: unknown) => void;

  /**
   * `key` hashes the codes; `now` is the database's clock; `failed` hears of
   * a mail that could not be queued after its answer went out.
   */
  constructor(
    storage: Storage,
    key: DerivedKey,
    now: () => number,
    outbox: Outbox,
    failed: (err: unknown) => void,
  ) {
    this.#storage = storage;
    this.#key = key;
    this.#now = now;
    this.#outbox = outbox;
    this.#failed = failed;
  }

  /**
   * `request-otp {email}`: the `otp_id` to answer. The code is mailed (the
   * entity's `otp` template, `{CODE}`) after this returns, when the email
   * is a user's and no code went to it within the throttle's window.
   */
  async request(entity: Entity, email: unknown): Promise<string> {
    const checked = emailOrEmpty(email);
    if (!checked.ok || email === "") {
      throw invalidFields(
        { email: { code: "invalid_email", message: "Must be an email" } },
        "Cannot request a code: a valid email is required",
      );
    }
    const options = authOptions(entity.schema).otp;
    if (!options.enabled) throw notEnabled(entity);
    const address = String(checked.value).toLowerCase();
    const row = await entity.rowFromCols(address, ["email"]);
    const id = randomToken(16);
    const code = randomDigits(options.length);
    const hash = codeHash(this.#key, id, code);
    const now = this.#now();
    const key = throttleKey(entity.id, "otp", address);
    const opened = await this.#storage.transaction(async (tx) => {
      await pruneWindows(tx, now);
      if (!await claimWindow(tx, key, id, now)) return false;
      await tx.run(`DELETE FROM "mb_otps" WHERE "expires" <= ?`, [now]);
      await tx.run(
        `INSERT INTO "mb_otps" ("id", "entity_id", "user_id", "email", "code_hash", "attempts", "expires", "created") VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
        [
          id,
          entity.id,
          row ? String(row.id) : "",
          address,
          hash,
          now + options.duration * 1000,
          now,
        ],
      );
      return true;
    });
    if (!opened) {
      // Within the window: the first request's otp_id, and no mail. ("" when
      // that window ended meanwhile: this id has no row and fails as a
      // wrong code would.)
      return (await heldRef(this.#storage, key, now)) || id;
    }
    if (row) {
      const template = authOptions(entity.schema).templates.otp;
      // After the answer: a known email costs the request no more than an
      // unknown one.
      setTimeout(() => {
        this.#outbox.enqueue({
          to: address,
          purpose: "otp",
          entity: entity.name,
          template,
          vars: { CODE: code },
        }).catch(this.#failed);
      }, 0);
    }
    return id;
  }

  /**
   * `login-otp {otp_id, code}`: whose code it was (the row is gone then).
   * Every failure is the same 401; each counts one of the `otp_id`'s 5
   * attempts.
   */
  async use(entity: Entity, otpId: unknown, code: unknown): Promise<UsedCode> {
    if (typeof otpId !== "string" || otpId === "" || otpId.length > 64) {
      throw invalidFields(
        { otp_id: { code: "required", message: "Missing otp_id" } },
        "Cannot log in: otp_id must be a non-empty string",
      );
    }
    if (typeof code !== "string" || code === "" || code.length > 32) {
      throw invalidFields(
        { code: { code: "required", message: "Missing code" } },
        "Cannot log in: code must be a non-empty string",
      );
    }
    if (!authOptions(entity.schema).otp.enabled) throw notEnabled(entity);
    const now = this.#now();
    // The attempt counts before the code is compared: of parallel guesses
    // no more than 5 are ever compared.
    const rows = await this.#storage.query(
      `UPDATE "mb_otps" SET "attempts" = "attempts" + 1 WHERE "id" = ? AND "entity_id" = ? AND "attempts" < ? AND "expires" > ? RETURNING "user_id", "email", "code_hash", "attempts", "created"`,
      [otpId, entity.id, OTP_ATTEMPTS, now],
    );
    const row = rows[0];
    if (!row) throw new MoonbaseError("unauthenticated", BAD_CODE);
    if (!sameHash(codeHash(this.#key, otpId, code), String(row.code_hash))) {
      if (Number(row.attempts) >= OTP_ATTEMPTS) await this.#drop(otpId);
      throw new MoonbaseError("unauthenticated", BAD_CODE);
    }
    // Single use: of two requests with the right code one deletes the row.
    const gone = await this.#storage.query(
      `DELETE FROM "mb_otps" WHERE "id" = ? RETURNING "id"`,
      [otpId],
    );
    if (gone.length === 0 || String(row.user_id) === "") {
      throw new MoonbaseError("unauthenticated", BAD_CODE);
    }
    return {
      userId: String(row.user_id),
      email: String(row.email),
      created: Number(row.created),
    };
  }

  async #drop(otpId: string): Promise<void> {
    await this.#storage.run(`DELETE FROM "mb_otps" WHERE "id" = ?`, [otpId]);
  }
}

function notEnabled(entity: Entity): MoonbaseError {
  return new MoonbaseError(
    "forbidden",
    `Cannot sign in by code: it is not enabled for ${entity.name} (an admin sets auth.otp.enabled in the schema)`,
  );
}
